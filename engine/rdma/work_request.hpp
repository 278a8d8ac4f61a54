#pragma once
// Verbs work requests of the NVMe/RDMA data path, built as values (no verbs calls, no
// allocation): a receive per command capsule, RDMA READ to fetch a host write's data, RDMA WRITE
// to place a read's data, and the SEND (or SEND_WITH_INV of the host's key) that carries the
// response capsule. The SGEs they point at live in the queue's per-command slot.
#include <infiniband/verbs.h>

#include <cstdint>

#include "engine/rdma/sgl.hpp"

namespace rdma {

// What a completion is for: the kind lives in the top byte of wr_id, the command slot below.
enum class WrKind : uint8_t { recv = 1, rdma_read = 2, rdma_write = 3, send = 4 };

constexpr uint64_t make_wr_id(WrKind kind, uint32_t slot) {
  return (uint64_t{static_cast<uint8_t>(kind)} << 56) | slot;
}
constexpr WrKind wr_kind(uint64_t wr_id) { return static_cast<WrKind>(wr_id >> 56); }
constexpr uint32_t wr_slot(uint64_t wr_id) { return static_cast<uint32_t>(wr_id & 0xffffffffu); }

ibv_sge make_sge(const void* addr, uint32_t length, uint32_t lkey);

// A receive for one command capsule (SQE + in-capsule data) into sge.
ibv_recv_wr make_recv(uint32_t slot, ibv_sge* sge);

// Host write: read the host's keyed block into local. Signaled: the command runs on its
// completion.
ibv_send_wr make_rdma_read(uint32_t slot, ibv_sge* local, const DataDescriptor& remote);

// Host read: write local into the host's keyed block. Unsignaled and chained to the response
// SEND (next): a send queue completes in order, so the SEND's completion covers the WRITE.
ibv_send_wr make_rdma_write(uint32_t slot, ibv_sge* local, const DataDescriptor& remote, ibv_send_wr* next);

// The response capsule (the CQE) in cqe. With remote.invalidate the host asked us to
// invalidate its key with this send (SEND_WITH_INV), saving it a local invalidate.
ibv_send_wr make_response(uint32_t slot, ibv_sge* cqe, const DataDescriptor& remote);

}  // namespace rdma
