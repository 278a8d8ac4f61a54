// RdmaQueue's command flow over the CQ: a capsule received, its data fetched (RDMA READ) or
// taken from the capsule, the command run by core/, its data placed (RDMA WRITE) and its
// response sent; the slot freed when the SEND completes.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/core/target.hpp"
#include "engine/rdma/queue.hpp"
#include "engine/rdma/work_request.hpp"
#include "engine/stats/usdt.hpp"

namespace rdma {
namespace {
inline constexpr unsigned wc_batch_size = 16;  // completions taken per ibv_poll_cq call
}  // namespace

unsigned RdmaQueue::poll_cq(unsigned budget) {
  unsigned total = 0;
  ibv_wc wcs[wc_batch_size];
  while (total < budget) {
    const int n = ibv_poll_cq(_cq, static_cast<int>(std::min<unsigned>(wc_batch_size, budget - total)), wcs);
    if (n <= 0) {
      if (n < 0) fail("ibv_poll_cq failed");
      break;
    }
    for (int i = 0; i < n; ++i) on_completion(wcs[i]);
    total += static_cast<unsigned>(n);
  }
  return total;
}

void RdmaQueue::on_completion(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) {
    // Flushed work requests follow a QP error or a disconnect: the first error said why.
    if (wc.status != IBV_WC_WR_FLUSH_ERR)
      fail(std::string("work request failed: ") + ibv_wc_status_str(wc.status) + " (vendor error " +
           std::to_string(wc.vendor_err) + ")");
    else
      fail("flushed");
    return;
  }
  const uint32_t slot = wr_slot(wc.wr_id);
  switch (wr_kind(wc.wr_id)) {
    case WrKind::recv:
      return on_recv(wc);
    case WrKind::rdma_read:
      if (slot < _ncmds) _sq.execute(_cmds[slot].req);
      return;
    case WrKind::send:
      if (slot < _ncmds) on_send_done(_cmds[slot]);
      return;
    case WrKind::rdma_write:  // unsignaled: only errors complete
      return;
  }
}

void RdmaQueue::on_recv(const ibv_wc& wc) {
  const uint32_t r = wr_slot(wc.wr_id);
  if (r >= _nrecv) return fail("receive completion for an unknown buffer");
  if (wc.byte_len < nvme::sqe_size) return fail("capsule of " + std::to_string(wc.byte_len) + " bytes");
  _stats.pdus_rx.add();
  _recv_len[r] = wc.byte_len;
  if (_free.empty()) {
    // The host sent its next command before our SEND of the one it replaces completed here.
    _pending[(_pending_head + _pending_count++) % _nrecv] = r;
    return;
  }
  take_capsule(r);
}

// A capsule in receive buffer r becomes a command: SQE and in-capsule data are copied out, so
// the buffer is posted again at once (before the response: the host may reuse its SQ entry
// as soon as it sees the completion).
void RdmaQueue::take_capsule(uint32_t r) {
  Command& c = _cmds[_free.back()];
  _free.pop_back();
  const uint8_t* capsule = _pool.capsule(r);
  std::memcpy(c.req.sqe.b.data(), capsule, nvme::sqe_size);
  const SglResult sgl = parse_sgl(c.req.sqe, {_limits.io_icd_size, _recv_len[r] - nvme::sqe_size});
  c.data = sgl.data;
  c.req.sgl_len = sgl.data.length;
  nvme::Status st = sgl.status.ok() ? _sq.prepare(c.req) : sgl.status;
  if (st.ok() && c.data.kind == DataKind::in_capsule)
    std::memcpy(c.req.buf, capsule + nvme::sqe_size + c.data.address, c.data.length);
  if (!post_recv(r)) fail(std::string("ibv_post_recv: ") + std::strerror(errno));
  c.req.start_ns = exec::monotonic_ns();
  NVMT_USDT3(cmd_arrival, this, c.req.sqe.cid(), c.req.sqe.opcode());
  set_state(c, CmdState::executing);
  if (!st.ok()) return _sq.complete(c.req, st);
  start_command(c);
}

void RdmaQueue::start_command(Command& c) {
  if (c.data.kind == DataKind::keyed && c.req.dir == core::DataDir::host_to_controller) {
    set_state(c, CmdState::reading);
    c.data_sge = make_sge(c.req.buf, c.req.transfer_len, _pool.lkey());
    c.wr[0] = make_rdma_read(c.index, &c.data_sge, c.data);
    return post_send(&c.wr[0]);
  }
  _sq.execute(c.req);
}

// core/ finished the command: place its data (chained WRITE) and send the response.
void RdmaQueue::complete(core::Request& req) {
  Command& c = *reinterpret_cast<Command*>(&req);
  _sq.record_latency(req, this);
  std::memcpy(_pool.cqe(c.index), &req.cqe, nvme::cqe_size);
  set_state(c, CmdState::sending);
  c.wr[1] = make_response(c.index, &c.cqe_sge, c.data);
  const bool data = req.status.ok() && req.dir == core::DataDir::controller_to_host && req.response_len > 0 &&
                    c.data.kind == DataKind::keyed;
  if (!data) return post_send(&c.wr[1]);
  c.data_sge = make_sge(req.buf, req.response_len, _pool.lkey());
  c.wr[0] = make_rdma_write(c.index, &c.data_sge, c.data, &c.wr[1]);
  post_send(&c.wr[0]);
}

void RdmaQueue::on_send_done(Command& c) {
  _stats.pdus_tx.add();
  set_state(c, CmdState::free);
  _free.push_back(c.index);
  if (_pending_count == 0) return;
  const uint32_t r = _pending[_pending_head];
  _pending_head = (_pending_head + 1) % _nrecv;
  --_pending_count;
  take_capsule(r);
}

}  // namespace rdma
