// SPDX-License-Identifier: GPL-2.0
/* irqload: where interrupts land and how long they take, per CPU. Handler entry/exit of hard
 * IRQs and softirqs (tp_btf; libbpf-tools' hardirqs and softirqs use the same events, or
 * fentry on handle_irq_event_percpu, which these machines refuse). Entry and exit of a handler
 * run on one CPU and hard IRQs do not nest, so start times are per-CPU array slots.
 *
 * Softirqs come about once per I/O under network load: each is counted, but only 1 in
 * time_mask + 1 per CPU and vector is timed (two clock reads cost more than all the rest). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "probes/hist.bpf.h"
#include "probes/irqload.h"

#define MAX_IRQS 1024

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1 + IRQLOAD_SOFTIRQS); /* 0: hard IRQ; 1 + vec: softirq */
	__type(key, __u32);
	__type(value, __u64);
} started SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_IRQS);
	__type(key, __u32); /* IRQ line */
	__type(value, struct nvmt_count_time);
} hardirqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_IRQS);
	__type(key, __u32);
	__type(value, struct irqload_name);
} irq_names SEC(".maps");

/* Per CPU, so a softirq vector's time per CPU is its histogram's sum on that CPU scaled to
 * softirq_counts: a timed softirq exit updates one map, not two. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IRQLOAD_SOFTIRQS);
	__type(key, __u32); /* vector */
	__type(value, __u64);
} softirq_counts SEC(".maps");

NVMT_HIST_MAP(hists, struct irqload_hist_key, 1 + IRQLOAD_SOFTIRQS);

static __always_inline void start(__u32 slot)
{
	__u64 *ts = bpf_map_lookup_elem(&started, &slot);

	if (ts)
		*ts = bpf_ktime_get_ns();
}

/* Time since start(slot), 0 when the entry was not seen (attached mid-handler). */
static __always_inline __u64 stop(__u32 slot)
{
	__u64 *ts = bpf_map_lookup_elem(&started, &slot);
	__u64 delta;

	if (!ts || *ts == 0)
		return 0;
	delta = bpf_ktime_get_ns() - *ts;
	*ts = 0;
	return delta;
}

static __always_inline void record(__u32 hist_slot, __u64 ns)
{
	struct irqload_hist_key key = { .softirq = hist_slot };
	struct nvmt_hist *h = nvmt_hist_get(&hists, &key);

	if (h)
		nvmt_hist_record(h, ns);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irqload_hard_entry, int irq, struct irqaction *action)
{
	__u32 line = irq;

	if (!bpf_map_lookup_elem(&irq_names, &line)) {
		struct irqload_name n = {};

		bpf_probe_read_kernel_str(n.name, sizeof(n.name), action->name);
		bpf_map_update_elem(&irq_names, &line, &n, BPF_NOEXIST);
	}
	start(0);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irqload_hard_exit, int irq)
{
	__u32 line = irq;
	__u64 ns = stop(0);

	if (ns) {
		nvmt_count_time_add(&hardirqs, &line, ns);
		record(0, ns);
	}
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(irqload_soft_entry, unsigned int vec)
{
	__u64 *n;

	if (vec >= IRQLOAD_SOFTIRQS)
		return 0;
	n = bpf_map_lookup_elem(&softirq_counts, &vec);
	if (n && (++*n & time_mask) == 0)
		start(1 + vec);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(irqload_soft_exit, unsigned int vec)
{
	__u64 ns;

	if (vec >= IRQLOAD_SOFTIRQS)
		return 0;
	ns = stop(1 + vec);
	if (ns)
		record(1 + vec, ns);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
