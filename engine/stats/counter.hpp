#pragma once
// A counter with one writer (the thread that owns a queue or worker) and any number of
// readers. Relaxed load+store instead of fetch_add: no locked instruction on the data path,
// and still no data race for the sampler reading it from another thread.
#include <atomic>
#include <cstdint>

namespace stats {

class Counter {
 public:
  void add(uint64_t n = 1) { _v.store(_v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const { return _v.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> _v{0};
};

}  // namespace stats
