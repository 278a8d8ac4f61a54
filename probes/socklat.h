/* socklat: the engine's socket syscalls (latency and count per syscall) and TCP retransmits. */
#pragma once
#include "probes/probe_hist.h"

/* Syscalls are tracked by slot (the loader fills the nr -> slot table from <sys/syscall.h>, so
 * the BPF side knows no architecture's numbers). */
#define SOCKLAT_SLOTS 16
#define SOCKLAT_MAX_NR 512

struct socklat_key {
	__u32 slot;
};
