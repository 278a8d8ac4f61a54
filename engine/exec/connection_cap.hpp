#pragma once
// The engine's one limit on connections served at once (tcp.max_connections), shared by every
// transport: each takes a slot when it accepts a connection and gives it back when the queue
// goes, so TCP and RDMA together never exceed it. Taken per connection, never per command.
#include <atomic>
#include <cstdint>

namespace exec {

class ConnectionCap {
 public:
  explicit ConnectionCap(uint32_t max) : _max(max) {}
  ConnectionCap(const ConnectionCap&) = delete;
  ConnectionCap& operator=(const ConnectionCap&) = delete;

  // A slot for one more connection; false when all max are taken.
  bool try_acquire() {
    uint32_t n = _used.load(std::memory_order_relaxed);
    do {
      if (n >= _max) return false;
    } while (!_used.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    return true;
  }
  void release() { _used.fetch_sub(1, std::memory_order_relaxed); }
  uint32_t used() const { return _used.load(std::memory_order_relaxed); }
  uint32_t max() const { return _max; }

 private:
  const uint32_t _max;
  std::atomic<uint32_t> _used{0};
};

}  // namespace exec
