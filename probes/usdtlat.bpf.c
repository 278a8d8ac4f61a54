// SPDX-License-Identifier: GPL-2.0
/* usdtlat: the engine's USDT points (provider "nvmetune"). Command latency is timed here from
 * cmd_arrival to cmd_complete per (queue, cid), independently of the engine's own clock, so the
 * two can be compared; queue_wait_end hands over the engine's own measurement. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "probes/hist.bpf.h"
#include "probes/usdtlat.h"

#define MAX_INFLIGHT 65536

struct cmd_key {
	__u64 queue;
	__u32 cid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_INFLIGHT);
	__type(key, struct cmd_key);
	__type(value, __u64);
} arrived SEC(".maps");

NVMT_HIST_MAP(hists, struct usdtlat_key, USDTLAT_KINDS);

static __always_inline void record(__u32 kind, __u64 ns)
{
	struct usdtlat_key key = { .kind = kind };
	struct nvmt_hist *h = nvmt_hist_get(&hists, &key);

	if (h)
		nvmt_hist_record(h, ns);
}

SEC("usdt")
int BPF_USDT(usdtlat_arrival, __u64 queue, __u32 cid)
{
	struct cmd_key key = { .queue = queue, .cid = cid };
	__u64 ts = bpf_ktime_get_ns();

	bpf_map_update_elem(&arrived, &key, &ts, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(usdtlat_complete, __u64 queue, __u32 cid)
{
	struct cmd_key key = { .queue = queue, .cid = cid };
	__u64 *ts = bpf_map_lookup_elem(&arrived, &key), now = bpf_ktime_get_ns();

	if (!ts)
		return 0;
	if (now >= *ts)
		record(USDTLAT_COMMAND, now - *ts);
	bpf_map_delete_elem(&arrived, &key);
	return 0;
}

SEC("usdt")
int BPF_USDT(usdtlat_wait, __u64 queue, __u64 wait_ns)
{
	record(USDTLAT_QUEUE_WAIT, wait_ns);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
