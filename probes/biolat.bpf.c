// SPDX-License-Identifier: GPL-2.0
/* biolat: block_rq_issue -> block_rq_complete per request (libbpf-tools' biolatency without
 * its -Q queued mode), per disk, limited to a set of disks (the engine's, or one asked for). Requests are keyed by address; the
 * completion may run on another CPU, so the start map is shared. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "probes/hist.bpf.h"
#include "probes/biolat.h"

#define MAX_INFLIGHT 16384
#define MINORBITS 20

const volatile bool per_disk = true;
const volatile bool filter_dev = false; /* only the disks in `disks` */

/* Issues whose start the map refused: -EBUSY when this CPU already holds the bucket's lock (an
 * issue from the completion softirq over a completion's delete in a task), -E2BIG when full.
 * Their completions find no start and are not counted, so user space reports them as missed. */
__u64 refused = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BIOLAT_MAX_DISKS);
	__type(key, __u32); /* dev, as disk_dev() */
	__type(value, __u8);
} disks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_INFLIGHT);
	__type(key, __u64); /* struct request * */
	__type(value, __u64);
} issued SEC(".maps");

NVMT_HIST_MAP(hists, struct biolat_key, 256);

static __always_inline __u32 disk_dev(const struct request *rq)
{
	struct gendisk *disk = rq->q->disk;

	if (!disk)
		return 0;
	return ((__u32)disk->major << MINORBITS) | (__u32)disk->first_minor;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(biolat_issue, struct request *rq)
{
	__u64 r = (__u64)rq, ts;
	__u32 dev;

	if (filter_dev) {
		dev = disk_dev(rq);
		if (!bpf_map_lookup_elem(&disks, &dev))
			return 0;
	}
	ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&issued, &r, &ts, BPF_ANY))
		__sync_fetch_and_add(&refused, 1);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(biolat_complete, struct request *rq)
{
	__u64 r = (__u64)rq, now = bpf_ktime_get_ns();
	__u64 *ts = bpf_map_lookup_elem(&issued, &r);
	struct biolat_key key = {};
	struct nvmt_hist *h;

	if (!ts)
		return 0;
	if (per_disk)
		key.dev = disk_dev(rq);
	h = nvmt_hist_get(&hists, &key);
	if (h && now >= *ts)
		nvmt_hist_record(h, now - *ts);
	bpf_map_delete_elem(&issued, &r);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
