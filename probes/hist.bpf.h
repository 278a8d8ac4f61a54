/* BPF side of probe_hist.h: recording into the engine's bucket layout, and the per-CPU
 * histogram maps every probe keys by something (thread, workqueue, device, syscall).
 * Included by *.bpf.c only (after vmlinux.h and bpf_helpers.h). */
#pragma once
#include "probes/probe_hist.h"

/* Histogram values are per-CPU, so an update needs no atomic: a program runs to completion on
 * its CPU and BPF's recursion guard keeps another program of the same probe from interleaving. */
#define NVMT_HIST_MAP(map_name, key_type, entries)        \
	struct {                                          \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);   \
		__uint(max_entries, entries);             \
		__uint(map_flags, BPF_F_NO_PREALLOC);     \
		__type(key, key_type);                    \
		__type(value, struct nvmt_hist);          \
	} map_name SEC(".maps")

/* ProbeOptions::time_every - 1 (probe.hpp): an event is timed when its running count per CPU
 * or thread has these bits clear. Probes that time every event ignore it. */
const volatile __u32 time_mask = 0;

/* The value a new key starts from (too big for the 512-byte BPF stack). */
struct nvmt_hist nvmt_zero_hist = {};

/* Number of significant bits of v (v > 0): the branch-free halving search of bcc's log2l,
 * so the verifier sees no loop. */
static __always_inline __u32 nvmt_bit_width(__u64 v)
{
	__u32 r = 0, shift;
	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r + 1;
}

/* histogram_layout::bucket_of(): the same arithmetic, kept in sync by a static_assert on
 * NVMT_HIST_BUCKETS in the loader and by the unit test that records known values. */
static __always_inline __u32 nvmt_bucket_of(__u64 ns)
{
	__u32 bw, shift;

	if (ns > NVMT_HIST_MAX_NS)
		ns = NVMT_HIST_MAX_NS;
	bw = nvmt_bit_width(ns | 1);
	shift = bw > NVMT_HIST_SUB_BITS + 1 ? bw - (NVMT_HIST_SUB_BITS + 1) : 0;
	return (__u32)(ns >> shift) + (shift << NVMT_HIST_SUB_BITS);
}

static __always_inline void nvmt_hist_record(struct nvmt_hist *h, __u64 ns)
{
	__u64 idx = nvmt_bucket_of(ns);

	/* Cannot fail; tells the verifier the bound. The barrier keeps clang from moving the
	 * test to a copy of idx the verifier does not connect to the access. */
	barrier_var(idx);
	if (idx >= NVMT_HIST_BUCKETS)
		return;
	h->buckets[idx]++;
	if (h->count == 0 || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
}

/* The histogram of key in map, created empty on first use; NULL only when the map is full. */
static __always_inline struct nvmt_hist *nvmt_hist_get(void *map, const void *key)
{
	struct nvmt_hist *h = bpf_map_lookup_elem(map, key);

	if (h)
		return h;
	bpf_map_update_elem(map, key, &nvmt_zero_hist, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* Adds one event of ns to a per-CPU count/time map value, creating it on first use. */
static __always_inline void nvmt_count_time_add(void *map, const void *key, __u64 ns)
{
	struct nvmt_count_time *v = bpf_map_lookup_elem(map, key);

	if (!v) {
		struct nvmt_count_time zero = {};
		bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, key);
		if (!v)
			return;
	}
	v->count++;
	v->ns += ns;
}
