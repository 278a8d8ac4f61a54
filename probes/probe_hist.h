/* One latency histogram as a BPF program keeps it, shared by both sides (uapi types only).
 * The layout is the engine's (engine/stats/histogram_layout.hpp: log2 buckets of 32 linear
 * sub-buckets over nanoseconds), so the loader copies it into stats::HistogramData as is and
 * percentiles, the store and the plots treat a probe's histogram like the engine's own. */
#pragma once
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define NVMT_HIST_SUB_BITS 5
#define NVMT_HIST_MAX_BITS 40
#define NVMT_HIST_BUCKETS ((NVMT_HIST_MAX_BITS - NVMT_HIST_SUB_BITS + 1) << NVMT_HIST_SUB_BITS)
#define NVMT_HIST_MAX_NS ((1ULL << NVMT_HIST_MAX_BITS) - 1)

struct nvmt_hist {
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 buckets[NVMT_HIST_BUCKETS];
};

/* An event count and the time it took (IRQ handlers, softirqs, syscalls). */
struct nvmt_count_time {
	__u64 count;
	__u64 ns;
};

#define NVMT_COMM_LEN 16
