/* runqlat: run-queue wait as the scheduler accounts it (schedstat run_delay), per thread; the
 * wall-clock wakeup -> on CPU time; off-CPU time per thread. */
#pragma once
#include "probes/probe_hist.h"

/* Key of the histogram and off-CPU maps: the thread, or 0 for everything when the loader asks
 * for one total histogram (the bcc default) rather than one per thread. */
struct runqlat_key {
	__u32 tid;
	__u32 wall; /* 1: sched_wakeup -> sched_switch on the wall clock (tid 0 only) */
};

struct runqlat_offcpu {
	__u64 ns;       /* switched out -> switched back in */
	__u64 switches; /* times switched out */
};
