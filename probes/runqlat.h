/* runqlat: run-queue latency (wakeup or preemption -> on CPU) and off-CPU time per thread. */
#pragma once
#include "probes/probe_hist.h"

/* Key of the histogram and off-CPU maps: the thread, or 0 for everything when the loader asks
 * for one total histogram (the bcc default) rather than one per thread. */
struct runqlat_key {
	__u32 tid;
};

struct runqlat_offcpu {
	__u64 ns;       /* switched out -> switched back in */
	__u64 switches; /* times switched out */
};
