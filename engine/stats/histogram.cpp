#include "engine/stats/histogram.hpp"

#include <algorithm>

namespace stats {

namespace hl = histogram_layout;

HistogramData Histogram::read() const {
  HistogramData d;
  if (count() == 0) return d;
  d.counts.resize(hl::buckets);
  uint64_t total = 0;
  size_t first = hl::buckets, last = 0;
  for (size_t i = 0; i < hl::buckets; ++i) {
    uint64_t c = _counts[i].load(std::memory_order_relaxed);
    d.counts[i] = c;
    total += c;
    if (c != 0) {
      first = std::min(first, i);
      last = i;
    }
  }
  if (total == 0) return HistogramData{};
  d.count = total;
  d.sum_ns = _sum_ns.load(std::memory_order_relaxed);
  d.min_ns = _min_ns.load(std::memory_order_relaxed);
  d.max_ns = _max_ns.load(std::memory_order_relaxed);
  // A read racing record() may see a sample's bucket but not yet its min/max store (the very
  // first sample leaves min at UINT64_MAX): keep min/max consistent with the buckets read.
  // (The last bucket also holds everything beyond max_trackable_ns: no upper bound there.)
  if (first + 1 < hl::buckets) d.min_ns = std::min(d.min_ns, hl::upper_bound(first) - 1);
  d.max_ns = std::max(d.max_ns, hl::lower_bound(last));
  return d;
}

}  // namespace stats
