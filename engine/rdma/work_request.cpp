#include "engine/rdma/work_request.hpp"

namespace rdma {

ibv_sge make_sge(const void* addr, uint32_t length, uint32_t lkey) {
  return ibv_sge{reinterpret_cast<uint64_t>(addr), length, lkey};
}

ibv_recv_wr make_recv(uint32_t slot, ibv_sge* sge) {
  ibv_recv_wr wr{};
  wr.wr_id = make_wr_id(WrKind::recv, slot);
  wr.sg_list = sge;
  wr.num_sge = 1;
  return wr;
}

namespace {
// An RDMA READ or WRITE of one local SGE against the host's keyed block.
ibv_send_wr rdma_wr(WrKind kind, ibv_wr_opcode opcode, uint32_t slot, ibv_sge* local, const DataDescriptor& remote) {
  ibv_send_wr wr{};
  wr.wr_id = make_wr_id(kind, slot);
  wr.sg_list = local;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.wr.rdma.remote_addr = remote.address;
  wr.wr.rdma.rkey = remote.key;
  return wr;
}
}  // namespace

ibv_send_wr make_rdma_read(uint32_t slot, ibv_sge* local, const DataDescriptor& remote) {
  ibv_send_wr wr = rdma_wr(WrKind::rdma_read, IBV_WR_RDMA_READ, slot, local, remote);
  wr.send_flags = IBV_SEND_SIGNALED;
  return wr;
}

ibv_send_wr make_rdma_write(uint32_t slot, ibv_sge* local, const DataDescriptor& remote, ibv_send_wr* next) {
  ibv_send_wr wr = rdma_wr(WrKind::rdma_write, IBV_WR_RDMA_WRITE, slot, local, remote);
  wr.next = next;
  return wr;
}

ibv_send_wr make_response(uint32_t slot, ibv_sge* cqe, const DataDescriptor& remote) {
  ibv_send_wr wr{};
  wr.wr_id = make_wr_id(WrKind::send, slot);
  wr.sg_list = cqe;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (remote.kind == DataKind::keyed && remote.invalidate) {
    wr.opcode = IBV_WR_SEND_WITH_INV;
    wr.invalidate_rkey = remote.key;
  } else {
    wr.opcode = IBV_WR_SEND;
  }
  return wr;
}

}  // namespace rdma
