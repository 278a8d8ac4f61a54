#pragma once
// A latency histogram's contents: log2 buckets, each split into sub-buckets, in nanoseconds.
// The same layout from the engine to SQLite to the plots (STYLE.md: one histogram format).
#include <cstdint>
#include <vector>

namespace stats {

struct HistogramData {
  std::vector<uint64_t> counts;  // empty = no samples; else histogram_layout::buckets entries
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;

  // p in [0, 100]; interpolated within the sub-bucket. 0 when empty.
  double percentile(double p) const;
  double mean() const { return count ? static_cast<double>(sum_ns) / static_cast<double>(count) : 0.0; }
  void merge(const HistogramData& other);
  // this - earlier (both cumulative from the same histogram): the interval's samples.
  HistogramData since(const HistogramData& earlier) const;
};

}  // namespace stats
