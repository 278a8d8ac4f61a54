#include "engine/initiator/rdma/memory_table.hpp"

namespace initiator::rdma_host {

bool MemoryTable::add(const void* p, size_t len, uint32_t lkey, uint32_t rkey) {
  if (_n == capacity) return false;
  const auto b = reinterpret_cast<uint64_t>(p);
  _r[_n++] = Region{b, b + len, lkey, rkey};
  return true;
}

const Region* MemoryTable::find(const void* p, size_t len) const {
  const auto b = reinterpret_cast<uint64_t>(p);
  for (size_t i = 0; i < _n; ++i) {
    if (b >= _r[i].begin && b <= _r[i].end && len <= _r[i].end - b) return &_r[i];
  }
  return nullptr;
}

}  // namespace initiator::rdma_host
