// SPDX-License-Identifier: GPL-2.0
/* runqlat: how long a runnable thread waits for a CPU, two ways.
 *
 * The histogram keyed by thread (and its total) is the scheduler's own account: each sample
 * is what one switch-in added to the thread's sched_info.run_delay, the second field of
 * /proc/PID/task/TID/schedstat, and a sample is counted when sched_info.pcount (the third
 * field) moves. The scheduler times that wait on its run-queue clock, from the enqueue
 * (wakeup, or preemption while runnable) to the switch-in. The clock is not re-read at the
 * switch-in when the wakeup itself asked for it (the woken thread preempts the running one,
 * or the CPU was idle): rq_clock_skip_update() in wakeup_preempt(). Such a wait counts as the
 * few hundred ns between the two clock reads, though the thread really got its CPU 5-20 us
 * later on these virtualised CPUs (IPI, irq exit, idle exit). So the histogram says how long
 * the thread queued behind others, exactly as the kernel counts it.
 *
 * The "clock=wall" histogram (total only) is the other way, bcc's runqlat's: sched_wakeup (or
 * preemption) to sched_switch, both on bpf_ktime_get_ns. It holds what the thread waited in
 * real time, including the switch latency the run-queue clock skips; the difference between
 * the two is the price of a wakeup on this machine, which a polling thread does not pay.
 *
 * The run_delay and pcount last seen, the wakeup and switch-out times live in task-local
 * storage (no hash, no map-full limit, freed with the thread). Off-CPU time runs from
 * switch-out to switch-in. tp_btf programs (BTF raw tracepoints): no tracefs. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "probes/hist.bpf.h"
#include "probes/runqlat.h"

#define TASK_RUNNING 0
#define MAX_THREADS 1024

const volatile __u32 targ_tgid = 0;   /* 0 = every process */
const volatile bool per_thread = false;

struct thread_state {
	__u64 run_delay;    /* sched_info.run_delay when last seen */
	__u64 pcount;       /* sched_info.pcount then */
	__u64 woken_ns;     /* sched_wakeup or preemption, bpf_ktime; 0 = not waiting */
	__u64 switched_out_ns; /* 0 = not seen leaving a CPU */
	__u64 seen;         /* run_delay and pcount are set */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

NVMT_HIST_MAP(hists, struct runqlat_key, MAX_THREADS + 1);

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

static __always_inline struct thread_state *state_of(struct task_struct *p)
{
	return bpf_task_storage_get(&threads, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* n waits that added wait_ns to run_delay together (n is 1 but for a switch-in missed while
 * the storage could not be had): their mean n times, their exact sum. */
static __always_inline void record_waits(struct nvmt_hist *h, __u64 wait_ns, __u64 n)
{
	__u64 each = wait_ns / n;

	nvmt_hist_record(h, each);
	if (n > 1) {
		__u64 idx = nvmt_bucket_of(each);

		barrier_var(idx);
		if (idx < NVMT_HIST_BUCKETS)
			h->buckets[idx] += n - 1;
		h->count += n - 1;
	}
	h->sum_ns += wait_ns - each * n; /* the remainder of the division */
}

/* The waits the scheduler added to prev's run_delay since it was last seen: sched_info_arrive()
 * has run for prev's switch-in and sched_info_depart() does not touch run_delay or pcount. */
static __always_inline void account_run_delay(const struct task_struct *prev, struct thread_state *s)
{
	__u64 run_delay = prev->sched_info.run_delay, pcount = prev->sched_info.pcount;
	struct runqlat_key key = { .tid = per_thread ? prev->pid : 0 };

	if (s->seen && pcount > s->pcount && run_delay >= s->run_delay) {
		struct nvmt_hist *h = nvmt_hist_get(&hists, &key);

		if (h)
			record_waits(h, run_delay - s->run_delay, pcount - s->pcount);
	}
	s->run_delay = run_delay;
	s->pcount = pcount;
	s->seen = 1;
}

static __always_inline void switch_out(struct task_struct *prev, __u64 now)
{
	struct thread_state *s;

	if (!tracked(prev))
		return;
	s = state_of(prev);
	if (!s)
		return;
	account_run_delay(prev, s);
	s->woken_ns = prev->__state == TASK_RUNNING ? now : 0; /* preempted: waits from now */
	s->switched_out_ns = now;
}

static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct runqlat_key key = { .tid = per_thread ? next->pid : 0 };
	struct thread_state *s;

	if (!tracked(next))
		return;
	s = state_of(next);
	if (!s)
		return;
	if (!s->seen) { /* first sight: this switch-in's wait is counted at the switch-out */
		s->run_delay = next->sched_info.run_delay;
		s->pcount = next->sched_info.pcount;
		s->seen = 1;
	}
	if (s->woken_ns && now >= s->woken_ns) {
		struct runqlat_key wall = { .tid = 0, .wall = 1 };
		struct nvmt_hist *h = nvmt_hist_get(&hists, &wall);

		if (h)
			nvmt_hist_record(h, now - s->woken_ns);
	}
	s->woken_ns = 0;
	if (s->switched_out_ns && now >= s->switched_out_ns) {
		struct runqlat_offcpu *o = bpf_map_lookup_elem(&offcpu, &key);

		if (!o) {
			struct runqlat_offcpu zero = {};
			bpf_map_update_elem(&offcpu, &key, &zero, BPF_NOEXIST);
			o = bpf_map_lookup_elem(&offcpu, &key);
		}
		if (o) {
			o->ns += now - s->switched_out_ns;
			o->switches++;
		}
	}
	s->switched_out_ns = 0;
}

static __always_inline void woken(struct task_struct *p)
{
	struct thread_state *s;

	if (!tracked(p))
		return;
	s = state_of(p);
	if (s)
		s->woken_ns = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(runqlat_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(runqlat_wakeup_new, struct task_struct *p)
{
	woken(p);
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
