// SPDX-License-Identifier: GPL-2.0
/* socklat: entry -> exit of the socket syscalls (recvfrom, sendmsg, ...) of one process, per
 * syscall, and TCP retransmits system-wide. libbpf-tools would use syscalls:sys_enter_* (needs
 * tracefs) or fentry (refused here); the raw sys_enter/sys_exit tracepoints need neither, at
 * the price of one cheap tgid test on every syscall of the machine, on entry and on exit.
 *
 * The entry timestamp lives in task-local storage, not a hash keyed by thread: the engine
 * issues several socket syscalls per command, and a hash update plus delete (bucket lock,
 * freelist) on each was most of this probe's cost to the engine's IOPS. Every call is counted,
 * 1 in time_mask + 1 per CPU and syscall is timed. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "probes/hist.bpf.h"
#include "probes/socklat.h"

const volatile __u32 targ_tgid = 0; /* 0 = every process */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SOCKLAT_MAX_NR);
	__type(key, __u32);   /* syscall number */
	__type(value, __u32); /* 1 + slot; 0 = not tracked */
} tracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SOCKLAT_SLOTS);
	__type(key, __u32); /* slot */
	__type(value, __u64);
} counts SEC(".maps");

struct entered {
	__u64 ts; /* 0 = no tracked syscall in flight */
	__u32 slot;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct entered);
} inflight SEC(".maps");

static __always_inline bool other_process(__u64 pid_tgid)
{
	return targ_tgid && (pid_tgid >> 32) != targ_tgid;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} retransmits SEC(".maps");

NVMT_HIST_MAP(hists, struct socklat_key, SOCKLAT_SLOTS);

SEC("tp_btf/sys_enter")
int BPF_PROG(socklat_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 nr = id, *slot, s;
	struct entered *e;
	__u64 *n;

	if (other_process(pid_tgid))
		return 0;
	if (id < 0 || id >= SOCKLAT_MAX_NR)
		return 0;
	slot = bpf_map_lookup_elem(&tracked, &nr);
	if (!slot || *slot == 0)
		return 0;
	s = *slot - 1;
	n = bpf_map_lookup_elem(&counts, &s);
	if (!n || (++*n & time_mask) != 0)
		return 0;
	e = bpf_task_storage_get(&inflight, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!e)
		return 0;
	e->slot = s;
	e->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(socklat_exit, struct pt_regs *regs, long ret)
{
	struct socklat_key key;
	struct entered *e;
	struct nvmt_hist *h;
	__u64 now;

	if (other_process(bpf_get_current_pid_tgid()))
		return 0;
	e = bpf_task_storage_get(&inflight, bpf_get_current_task_btf(), 0, 0);
	if (!e || !e->ts)
		return 0;
	now = bpf_ktime_get_ns();
	key.slot = e->slot;
	h = nvmt_hist_get(&hists, &key);
	if (h && now >= e->ts)
		nvmt_hist_record(h, now - e->ts);
	e->ts = 0;
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(socklat_retransmit)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&retransmits, &zero);

	if (n)
		(*n)++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
