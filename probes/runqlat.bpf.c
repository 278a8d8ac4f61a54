// SPDX-License-Identifier: GPL-2.0
/* runqlat: how long a runnable thread waits for a CPU. The clock starts when the thread becomes
 * runnable (sched_wakeup, sched_wakeup_new, or preempted while still runnable in sched_switch)
 * and stops when sched_switch puts it on a CPU; this is what /proc/PID/task/TID/schedstat's
 * run_delay sums. Off-CPU time runs from switch-out to switch-in. tp_btf programs (BTF raw
 * tracepoints): no tracefs, and the same events libbpf-tools' runqlat uses. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "probes/hist.bpf.h"
#include "probes/runqlat.h"

#define TASK_RUNNING 0
#define MAX_THREADS 1024

const volatile __u32 targ_tgid = 0;   /* 0 = every process */
const volatile bool per_thread = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH); /* set on the waker's CPU, read on the wakee's */
	__uint(max_entries, MAX_THREADS * 4);
	__type(key, __u32);
	__type(value, __u64);
} enqueued SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS * 4);
	__type(key, __u32);
	__type(value, __u64);
} switched_out SEC(".maps");

NVMT_HIST_MAP(hists, struct runqlat_key, MAX_THREADS);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_THREADS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct runqlat_key);
	__type(value, struct runqlat_offcpu);
} offcpu SEC(".maps");

static __always_inline bool tracked(const struct task_struct *p)
{
	if (p->pid == 0) /* the idle task */
		return false;
	return targ_tgid == 0 || p->tgid == targ_tgid;
}

static __always_inline void mark_enqueued(const struct task_struct *p, __u64 now)
{
	__u32 tid = p->pid;

	if (tracked(p))
		bpf_map_update_elem(&enqueued, &tid, &now, BPF_ANY);
}

static __always_inline void switch_out(const struct task_struct *prev, __u64 now)
{
	__u32 tid = prev->pid;

	if (!tracked(prev))
		return;
	if (prev->__state == TASK_RUNNING) /* preempted: waits on the run queue from now */
		bpf_map_update_elem(&enqueued, &tid, &now, BPF_ANY);
	bpf_map_update_elem(&switched_out, &tid, &now, BPF_ANY);
}

static __always_inline void switch_in(const struct task_struct *next, __u64 now)
{
	__u32 tid = next->pid;
	struct runqlat_key key = { .tid = per_thread ? tid : 0 };
	__u64 *ts;

	if (!tracked(next))
		return;
	ts = bpf_map_lookup_elem(&enqueued, &tid);
	if (ts) {
		struct nvmt_hist *h = nvmt_hist_get(&hists, &key);

		if (h && now >= *ts)
			nvmt_hist_record(h, now - *ts);
		bpf_map_delete_elem(&enqueued, &tid);
	}
	ts = bpf_map_lookup_elem(&switched_out, &tid);
	if (ts) {
		struct runqlat_offcpu *o = bpf_map_lookup_elem(&offcpu, &key);

		if (!o) {
			struct runqlat_offcpu zero = {};
			bpf_map_update_elem(&offcpu, &key, &zero, BPF_NOEXIST);
			o = bpf_map_lookup_elem(&offcpu, &key);
		}
		if (o && now >= *ts) {
			o->ns += now - *ts;
			o->switches++;
		}
		bpf_map_delete_elem(&switched_out, &tid);
	}
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(runqlat_wakeup, struct task_struct *p)
{
	mark_enqueued(p, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(runqlat_wakeup_new, struct task_struct *p)
{
	mark_enqueued(p, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(runqlat_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();

	switch_out(prev, now);
	switch_in(next, now);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
