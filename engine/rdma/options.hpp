#pragma once
// The NVMe/RDMA transport's own settings (config "rdma": data_pool_bytes, use_srq, srq_size,
// comp_vector) and the choices made from them that need no device, kept apart so they are
// unit-tested without one.
#include <cstdint>

namespace rdma {

struct RdmaOptions {
  // Command data buffers: one pool per device, registered once and shared by its queues.
  uint64_t data_pool_bytes = 32ull << 20;
  // One shared receive queue per device (nvmet-rdma's use_srq / srq_size): capsule buffers for
  // all queues of the device instead of queue_depth per queue.
  bool use_srq = false;
  uint32_t srq_size = 1024;
  // -1: queue i's CQ on vector qid % num_comp_vectors (spread); n >= 0: every CQ on vector n.
  int comp_vector = -1;
};

// The completion vector of queue qid's CQ on a device with num_vectors vectors; a pinned
// vector beyond the device's range wraps (the device has fewer than configured).
constexpr int choose_comp_vector(int setting, uint16_t qid, int num_vectors) {
  if (num_vectors <= 0) return 0;
  if (setting >= 0) return setting % num_vectors;
  return qid % num_vectors;
}

}  // namespace rdma
