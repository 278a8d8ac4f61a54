#pragma once
// The one bucket layout of every latency histogram (engine, SQLite, plots): log2 buckets over
// nanoseconds, each split into 2^sub_bits linear sub-buckets (HdrHistogram's layout).
//
//   0 .. 2*sub_count-1            one bucket per nanosecond (exact)
//   [2^e, 2^(e+1)), e > sub_bits  sub_count buckets of width 2^(e - sub_bits)
//   >= max_trackable_ns           counted in the last bucket (the recorder keeps the true max)
//
// Why sub_bits = 5 (32 sub-buckets): a sub-bucket is at most 1/32 = 3.1 % of its lower bound
// wide. Percentiles interpolate linearly inside the sub-bucket (narrowed to the observed
// [min, max]), so:
//   - a smooth distribution is off by far less than a sub-bucket (uniform 1..100 us: < 0.5 %);
//   - a spike (many samples at one value: the null backend's latency, a fixed timer) is off
//     by at most one sub-bucket, 3.1 %, about 1 % on average; a single-valued histogram is
//     exact.
// sub_bits = 4 (the first proposal) gives the same "typically ~3 %" for smooth data but up to
// 6.25 % on spikes: 1000 samples at 50 us plus one at 2 ms read p99 = 51.2 us (+2.4 %), where
// sub_bits = 5 reads 50.2 us (+0.3 %). The price is memory: 9 KiB per histogram instead of
// 4.6 KiB (x5 per queue), copied by the sampler once per interval; record() costs the same.
// Everything below follows sub_bits and max_bits; data stored with one layout cannot be read
// with another, so whoever persists counts should persist these two as well.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace stats::histogram_layout {

inline constexpr unsigned sub_bits = 5;
inline constexpr uint64_t sub_count = uint64_t{1} << sub_bits;
// 2^40 ns ~ 18.3 minutes: anything longer is a hung command, not a latency.
inline constexpr unsigned max_bits = 40;
inline constexpr uint64_t max_trackable_ns = (uint64_t{1} << max_bits) - 1;

namespace detail {
// Index of a value already clamped to max_trackable_ns. shift is 0 for values below
// 2*sub_count (exact buckets), else the number of low bits dropped. (v | 1: same width for
// every v that matters, and no zero test before bsr on CPUs without lzcnt.)
constexpr size_t index_of(uint64_t v) {
  unsigned shift = std::max<unsigned>(static_cast<unsigned>(std::bit_width(v | 1)), sub_bits + 1) - (sub_bits + 1);
  return static_cast<size_t>((v >> shift) + (uint64_t{shift} << sub_bits));
}
}  // namespace detail

inline constexpr size_t buckets = detail::index_of(max_trackable_ns) + 1;

// The bucket counting ns: one clamp, one bit_width, one max, two shifts; no branch.
constexpr size_t bucket_of(uint64_t ns) { return detail::index_of(std::min(ns, max_trackable_ns)); }

// Bucket i counts the values in [lower_bound(i), upper_bound(i)) (upper bound exclusive; the
// last bucket also counts everything above max_trackable_ns).
constexpr uint64_t lower_bound(size_t i) {
  if (i < 2 * sub_count) return i;
  unsigned shift = static_cast<unsigned>(i >> sub_bits) - 1;
  return ((i & (sub_count - 1)) | sub_count) << shift;
}

constexpr uint64_t width(size_t i) {
  return i < 2 * sub_count ? 1 : uint64_t{1} << (static_cast<unsigned>(i >> sub_bits) - 1);
}

constexpr uint64_t upper_bound(size_t i) { return lower_bound(i) + width(i); }

static_assert(buckets == (max_bits - sub_bits + 1) * sub_count, "one row of sub-buckets per power of two");
static_assert(bucket_of(0) == 0 && bucket_of(1) == 1 && bucket_of(2 * sub_count - 1) == 2 * sub_count - 1);
static_assert(lower_bound(bucket_of(1000)) <= 1000 && 1000 < upper_bound(bucket_of(1000)));
static_assert(upper_bound(buckets - 1) == max_trackable_ns + 1);
static_assert(bucket_of(UINT64_MAX) == buckets - 1);

}  // namespace stats::histogram_layout
