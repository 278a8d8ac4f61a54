// SPDX-License-Identifier: GPL-2.0
/* socklat: entry -> exit of the socket syscalls (recvfrom, sendmsg, ...) of one process, per
 * syscall, and TCP retransmits system-wide. libbpf-tools would use syscalls:sys_enter_* (needs
 * tracefs) or fentry (refused here); the raw sys_enter/sys_exit tracepoints need neither, at
 * the price of one cheap tgid test on every syscall of the machine. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "probes/hist.bpf.h"
#include "probes/socklat.h"

#define MAX_THREADS 4096

const volatile __u32 targ_tgid = 0; /* 0 = every process */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SOCKLAT_MAX_NR);
	__type(key, __u32);   /* syscall number */
	__type(value, __u32); /* 1 + slot; 0 = not tracked */
} tracked SEC(".maps");

struct entered {
	__u64 ts;
	__u32 slot;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32); /* thread */
	__type(value, struct entered);
} inflight SEC(".maps");

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
	__u32 nr = id, tid = (__u32)pid_tgid, *slot;
	struct entered e;

	if (targ_tgid && (pid_tgid >> 32) != targ_tgid)
		return 0;
	if (id < 0 || id >= SOCKLAT_MAX_NR)
		return 0;
	slot = bpf_map_lookup_elem(&tracked, &nr);
	if (!slot || *slot == 0)
		return 0;
	e.ts = bpf_ktime_get_ns();
	e.slot = *slot - 1;
	bpf_map_update_elem(&inflight, &tid, &e, BPF_ANY);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(socklat_exit, struct pt_regs *regs, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct entered *e = bpf_map_lookup_elem(&inflight, &tid);
	struct socklat_key key;
	struct nvmt_hist *h;
	__u64 now;

	if (!e)
		return 0;
	now = bpf_ktime_get_ns();
	key.slot = e->slot;
	h = nvmt_hist_get(&hists, &key);
	if (h && now >= e->ts)
		nvmt_hist_record(h, now - e->ts);
	bpf_map_delete_elem(&inflight, &tid);
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
