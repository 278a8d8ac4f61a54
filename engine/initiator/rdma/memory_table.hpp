#pragma once
// The memory an RDMA host queue has registered: a few long-lived regions (the load generator's
// buffers, one per thread) looked up per command by address, with no allocation and no verbs
// call. Pure bookkeeping; the queue owns the registrations themselves.
#include <array>
#include <cstddef>
#include <cstdint>

namespace initiator::rdma_host {

struct Region {
  uint64_t begin = 0, end = 0;  // [begin, end)
  uint32_t lkey = 0, rkey = 0;
};

class MemoryTable {
 public:
  static constexpr size_t capacity = 16;

  // False when the table is full.
  bool add(const void* p, size_t len, uint32_t lkey, uint32_t rkey);
  // The region holding all of [p, p + len), or nullptr.
  const Region* find(const void* p, size_t len) const;
  size_t size() const { return _n; }

 private:
  std::array<Region, capacity> _r{};
  size_t _n = 0;
};

}  // namespace initiator::rdma_host
