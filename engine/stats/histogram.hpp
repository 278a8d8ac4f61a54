#pragma once
// stats::Histogram, the data-path latency recorder. One writer (the thread that owns the
// queue or worker the histogram belongs to) records with relaxed loads and stores: no locked
// instruction, no allocation, no lock. Any thread may read() at any time; a read racing with
// record() sees each bucket either before or after that sample (never torn), and count is
// the sum of the buckets read, so percentiles are always self-consistent.
#include <array>
#include <atomic>
#include <cstdint>

#include "engine/stats/histogram_data.hpp"
#include "engine/stats/histogram_layout.hpp"

namespace stats {

class alignas(64) Histogram {
 public:
  Histogram() = default;
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // One sample of ns nanoseconds. Writer thread only.
  void record(uint64_t ns) { record_n(ns, 1); }
  // n samples of ns nanoseconds each (a batch completed together). Writer thread only.
  void record_n(uint64_t ns, uint64_t n) {
    bump(_counts[histogram_layout::bucket_of(ns)], n);
    bump(_count, n);
    bump(_sum_ns, ns * n);
    if (ns < _min_ns.load(std::memory_order_relaxed)) _min_ns.store(ns, std::memory_order_relaxed);
    if (ns > _max_ns.load(std::memory_order_relaxed)) _max_ns.store(ns, std::memory_order_relaxed);
  }

  // Samples recorded so far (cheap: one load).
  uint64_t count() const { return _count.load(std::memory_order_relaxed); }
  // Everything recorded so far, cumulative (counts empty when nothing was). Any thread.
  HistogramData read() const;

 private:
  static void bump(std::atomic<uint64_t>& a, uint64_t n) {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  // The scalars share the first cache line; a record() touches it and one bucket's line.
  std::atomic<uint64_t> _count{0};
  std::atomic<uint64_t> _sum_ns{0};
  std::atomic<uint64_t> _min_ns{UINT64_MAX};
  std::atomic<uint64_t> _max_ns{0};
  alignas(64) std::array<std::atomic<uint64_t>, histogram_layout::buckets> _counts{};
};

static_assert(std::atomic<uint64_t>::is_always_lock_free);
// One line of scalars, then the buckets: 9 KiB with the current layout.
static_assert(sizeof(Histogram) == 64 + histogram_layout::buckets * sizeof(uint64_t));

}  // namespace stats
