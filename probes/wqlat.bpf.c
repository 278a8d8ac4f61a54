// SPDX-License-Identifier: GPL-2.0
/* wqlat: how long a kernel work item waits between queue_work() and the start of its
 * function, per workqueue (the nvmet-tcp io_work's wait is the figure the kernel target's
 * patches were judged by). Work items are keyed by their address from workqueue_queue_work to
 * workqueue_execute_start (they may run on another CPU, so the start map is shared). A work
 * item is not queued again while pending, so an address has one start time at a time.
 * targ_tgid keeps the work items queued from one process's threads (its syscalls: a ring's
 * teardown, a block request issued directly), for a standalone `nvmetune probe wqlat --pid`. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "probes/hist.bpf.h"
#include "probes/wqlat.h"

#define MAX_PENDING 16384

const volatile __u32 targ_tgid = 0; /* 0 = work queued by anyone */
const volatile bool per_wq = true;
const volatile bool filter_wq = false;
const volatile char targ_wq[WQLAT_NAME_LEN] = {};

struct pending {
	__u64 ts;
	struct wqlat_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PENDING);
	__type(key, __u64); /* struct work_struct * */
	__type(value, struct pending);
} queued SEC(".maps");

NVMT_HIST_MAP(hists, struct wqlat_key, 512);

static __always_inline bool name_matches(const char *name)
{
	for (int i = 0; i < WQLAT_NAME_LEN; i++) {
		if (name[i] != targ_wq[i])
			return false;
		if (name[i] == 0)
			return true;
	}
	return true;
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(wqlat_queue, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	struct pending p = {};
	__u64 w = (__u64)work;

	if (targ_tgid && (bpf_get_current_pid_tgid() >> 32) != targ_tgid)
		return 0;
	BPF_CORE_READ_STR_INTO(&p.key.wq, pwq, wq, name);
	if (filter_wq && !name_matches(p.key.wq))
		return 0;
	if (!per_wq)
		__builtin_memset(&p.key, 0, sizeof(p.key));
	p.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&queued, &w, &p, BPF_ANY);
	return 0;
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(wqlat_execute, struct work_struct *work)
{
	__u64 w = (__u64)work, now = bpf_ktime_get_ns();
	struct pending *p = bpf_map_lookup_elem(&queued, &w);
	struct nvmt_hist *h;

	if (!p)
		return 0;
	h = nvmt_hist_get(&hists, &p->key);
	if (h && now >= p->ts)
		nvmt_hist_record(h, now - p->ts);
	bpf_map_delete_elem(&queued, &w);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
