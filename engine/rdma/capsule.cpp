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
// The buffer of commands without data: never written (zero bytes), but not null for memcpy.
alignas(16) uint8_t no_data[16];
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
    // A receive consumed from the shared queue is this queue's to give back, whatever its fate.
    if (_srq && wr_kind(wc.wr_id) == WrKind::recv) _device->post_srq_recv(wr_slot(wc.wr_id));
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
      if (slot < _ncmds) {
        // The host's data is here: RDMA READ is this transport's data wait (R2T's on TCP).
        const uint64_t now = exec::monotonic_ns();
        _sq.record_data_wait(_cmds[slot].req, now);
        _sq.execute(_cmds[slot].req, now);
      }
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
  // Not a buffer of ours (a provider fault, not a host's): there is nothing to give back.
  if (r >= (_srq ? _device->srq_size() : _nrecv)) return fail("receive completion for an unknown buffer");
  if (wc.byte_len < nvme::sqe_size) return refuse_capsule(r, "capsule of " + std::to_string(wc.byte_len) + " bytes");
  _stats.pdus_rx.add();
  // Connect is sent alone: a queue not yet connected has room (one CQE) for one command.
  if (!_grown && _free.size() < _ncmds) return refuse_capsule(r, "a capsule while Connect is outstanding");
  if (_free.empty()) {
    // The host sent its next command before our SEND of the one it replaces completed here.
    if (_pending_count == _nrecv) return refuse_capsule(r, "more capsules than the queue's depth");
    _pending[(_pending_head + _pending_count++) % _nrecv] = {r, wc.byte_len};
    return;
  }
  take_capsule({r, wc.byte_len});
}

// The capsule in receive buffer r is refused and the queue closes. With an SRQ the buffer is
// every queue's of the device: it goes back now, or the device's receives drain one refused
// capsule at a time until no host can send. The queue's own ring dies with the queue.
void RdmaQueue::refuse_capsule(uint32_t r, const std::string& why) {
  if (_srq) _device->post_srq_recv(r);
  fail(why);
}

// A capsule in receive buffer r becomes a command: SQE and in-capsule data are copied out, so
// the buffer is posted again at once (before the response: the host may reuse its SQ entry
// as soon as it sees the completion). A command whose data buffer must wait keeps an
// in-capsule receive buffer until it gets one.
void RdmaQueue::take_capsule(Received r) {
  Command& c = _cmds[_free.back()];
  _free.pop_back();
  const uint8_t* cap = capsule(r.recv);
  std::memcpy(c.req.sqe.b.data(), cap, nvme::sqe_size);
  const SglResult sgl = parse_sgl(c.req.sqe, {_limits.io_icd_size, r.len - nvme::sqe_size});
  c.data = sgl.data;
  c.req.sgl_len = sgl.data.length;
  c.req.buf_cap = _limits.mdts_bytes;  // what prepare checks the transfer against
  c.req.buf = no_data;
  nvme::Status st = sgl.status.ok() ? _sq.prepare(c.req) : sgl.status;
  c.req.start_ns = exec::monotonic_ns();
  // No receive stamp on RDMA (no completion timestamps asked for): arrival is the readiness.
  _sq.record_received(c.req, 0, _pass);
  NVMT_USDT3(cmd_arrival, this, c.req.sqe.cid(), c.req.sqe.opcode());
  c.held_recv = r.recv;
  if (!st.ok() || c.data.kind != DataKind::in_capsule) {
    c.held_recv = no_recv;
    if (!repost(r.recv)) fail(std::string("ibv_post_recv: ") + std::strerror(errno));
  }
  set_state(c, CmdState::executing);
  if (!st.ok()) return _sq.complete(c.req, st);
  if (_buf_wait_count > 0 || !attach_buffer(c)) {  // in order: none overtakes a waiting command
    set_state(c, CmdState::buffer_wait);
    ++_buffer_waits;
    _buf_wait[(_buf_wait_head + _buf_wait_count++) % _ncmds] = c.index;
    return;
  }
  start_command(c);
}

// The command's data buffer from the device's pool, sized for its transfer (twice for Compare,
// whose medium data goes to the second half); false: none free, the pool wakes this queue.
bool RdmaQueue::attach_buffer(Command& c) {
  const bool compare = _sq.qid() != 0 && static_cast<nvme::NvmOpcode>(c.req.sqe.opcode()) == nvme::NvmOpcode::compare;
  const uint32_t len = c.req.transfer_len;  // a response never carries more
  c.req.buf = no_data;
  if (len > 0) {
    const BufferCache::Buffer b = _buffers.get(compare ? 2 * len : len);
    if (!b.data) return false;
    c.buffer = b;
    c.req.buf = b.data;
    c.req.buf_cap = compare ? len : b.size;
  }
  if (c.held_recv != no_recv) {
    if (c.data.length) std::memcpy(c.req.buf, capsule(c.held_recv) + nvme::sqe_size + c.data.address, c.data.length);
    if (!repost(c.held_recv)) fail(std::string("ibv_post_recv: ") + std::strerror(errno));
    c.held_recv = no_recv;
  }
  return true;
}

void RdmaQueue::serve_buffer_waits() {
  while (_buf_wait_count > 0) {
    Command& c = _cmds[_buf_wait[_buf_wait_head]];
    if (!attach_buffer(c)) return;
    _buf_wait_head = (_buf_wait_head + 1) % _ncmds;
    --_buf_wait_count;
    set_state(c, CmdState::executing);
    start_command(c);
  }
}

void RdmaQueue::release_buffer(Command& c) {
  if (!c.buffer.data) return;
  _buffers.put(c.buffer);
  c.buffer = {};
  c.req.buf = no_data;
}

void RdmaQueue::start_command(Command& c) {
  if (c.data.kind == DataKind::keyed && c.req.dir == core::DataDir::host_to_controller) {
    set_state(c, CmdState::reading);
    c.data_sge = make_sge(c.req.buf, c.req.transfer_len, _device->data_lkey());
    c.wr[0] = make_rdma_read(c.index, &c.data_sge, c.data);
    return post_send(&c.wr[0]);
  }
  _sq.execute(c.req);
}

// core/ finished the command: place its data (chained WRITE) and send the response.
void RdmaQueue::complete(core::Request& req) {
  Command& c = *reinterpret_cast<Command*>(&req);
  _sq.record_latency(req, this);
  if (!_grown && _sq.connected())
    if (auto err = grow(); !err.empty()) return fail("cannot register the queue at Connect: " + err);
  std::memcpy(cqe_of(c), &req.cqe, nvme::cqe_size);
  c.cqe_sge = make_sge(cqe_of(c), nvme::cqe_size, _grown ? _pool.lkey() : _connect_pool.lkey());
  set_state(c, CmdState::sending);
  c.wr[1] = make_response(c.index, &c.cqe_sge, c.data);
  const bool data = req.status.ok() && req.dir == core::DataDir::controller_to_host && req.response_len > 0 &&
                    c.data.kind == DataKind::keyed;
  if (!data) return post_send(&c.wr[1]);
  c.data_sge = make_sge(req.buf, req.response_len, _device->data_lkey());
  c.wr[0] = make_rdma_write(c.index, &c.data_sge, c.data, &c.wr[1]);
  post_send(&c.wr[0]);
}

void RdmaQueue::on_send_done(Command& c) {
  _stats.pdus_tx.add();
  _sq.record_sent(c.req, exec::monotonic_ns());
  set_state(c, CmdState::free);
  release_buffer(c);
  _free.push_back(c.index);
  serve_buffer_waits();
  if (_pending_count == 0) return;
  const Received r = _pending[_pending_head];
  _pending_head = (_pending_head + 1) % _nrecv;
  --_pending_count;
  take_capsule(r);
}

}  // namespace rdma
