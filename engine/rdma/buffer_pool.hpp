#pragma once
// Registered memory carved in fixed slots, allocated and registered once (ibv_reg_mr is a syscall
// that pins pages: never per command): a queue's receive buffers and response CQEs, or a device's
// shared receive queue buffers. Command data comes from the device's DataPool (data_pool.hpp).
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rdma {

struct PoolLayout {
  uint32_t capsules = 0;      // receive buffers
  uint32_t capsule_size = 0;  // SQE + in-capsule data
  uint32_t responses = 0;     // command slots: one CQE each
};

class BufferPool {
 public:
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Maps and registers the layout on pd; "" or why not (ENOMEM, locked-memory limit).
  std::string create(ibv_pd* pd, const PoolLayout& layout);
  // Unregisters (before the PD goes); the mapping stays until destruction, for backend I/O
  // still in flight into it.
  void deregister();
  uint32_t lkey() const { return _mr ? _mr->lkey : 0; }
  uint8_t* capsule(uint32_t i) const { return _base + size_t{i} * _layout.capsule_size; }
  uint8_t* cqe(uint32_t i) const { return _cqes + size_t{i} * 16; }
  const PoolLayout& layout() const { return _layout; }
  size_t bytes() const { return _len; }

 private:
  PoolLayout _layout;
  uint8_t* _base = nullptr;
  uint8_t* _cqes = nullptr;
  size_t _len = 0;
  ibv_mr* _mr = nullptr;
};

}  // namespace rdma
