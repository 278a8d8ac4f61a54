// RdmaQueue: verbs resources, the command lifecycle over the CQ, and the io_work pass.
#include "engine/rdma/queue.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "engine/core/target.hpp"
#include "engine/rdma/work_request.hpp"

namespace rdma {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

RdmaQueue::RdmaQueue(rdma_cm_id* id, std::string peer, core::Target& target, exec::Executor& executor,
                     const QueueLimits& limits, const transport::LiveBudgets& budgets, std::shared_ptr<SharedDevice> device)
    : _device(std::move(device)), _id(id), _peer(std::move(peer)), _target(target), _executor(&executor),
      _limits(limits), _live_budgets(budgets), _buffers(_device->data(), *this), _ioctx(limits.queue_depth),
      _sq(target, *this, _stats) {}

RdmaQueue::~RdmaQueue() {
  _device->data().forget(this);  // first: another queue returning buffers must not wake this one now
  // The QP first: the device stops touching the buffers before they are unregistered or reused.
  if (_qp) rdma_destroy_qp(_id);
  if (_srq && _cmds) return_srq_receives();
  if (_cq) ibv_destroy_cq(_cq);
  if (_channel) ibv_destroy_comp_channel(_channel);
  _connect_pool.deregister();
  _pool.deregister();
  rdma_destroy_id(_id);
  // Buffers of commands still out return with the cache, after _ioctx (backend I/O) has gone.
  for (uint32_t i = 0; _cmds && i < _ncmds; ++i)
    if (_cmds[i].buffer.data) _buffers.keep(_cmds[i].buffer);
}

std::string RdmaQueue::setup(const CmRequestResult& req) {
  ibv_context* verbs = _id->verbs;
  ibv_pd* pd = _device->pd();
  _admin = req.request.qid == 0;
  _srq = _device->srq() != nullptr;
  _nrecv = req.recv_depth;
  // One command slot per command the host may have outstanding; a capsule that arrives while
  // the slot of its predecessor still awaits its SEND completion waits in _pending.
  _ncmds = req.recv_depth;
  if (!(_channel = ibv_create_comp_channel(verbs))) return errno_text("ibv_create_comp_channel");
  fcntl(_channel->fd, F_SETFL, fcntl(_channel->fd, F_GETFL) | O_NONBLOCK);
  // Room for every completion that can be waiting at once, or the CQ overruns (a CQ error: the
  // QP is lost). Send side: a READ or SEND per work request, at most max_send_wr. Receives: as
  // many as can be posted for this QP, which with an SRQ is the whole SRQ, not the queue's
  // depth: a host may send faster than its queue is served, and each capsule takes an SRQ
  // buffer and completes here until the queue refuses it, which it can only do once polled.
  const uint32_t receives = _srq ? _device->srq_size() : _nrecv;
  const int cqe = static_cast<int>(receives + 2 * _ncmds);
  _comp_vector = choose_comp_vector(_device->options().comp_vector, req.request.qid, verbs->num_comp_vectors);
  if (!(_cq = ibv_create_cq(verbs, cqe, this, _channel, _comp_vector))) return errno_text("ibv_create_cq");
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = _cq;
  qa.srq = _device->srq();  // receives come from the device's SRQ, completions still to _cq
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = 2 * _ncmds;  // WRITE + SEND per command at most
  qa.cap.max_recv_wr = _srq ? 0 : _nrecv;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = _srq ? 0 : 1;
  if (rdma_create_qp(_id, pd, &qa) != 0) return errno_text("rdma_create_qp");
  _qp = true;
  // Data buffers come from the device's pool; the queue registers only capsules and CQEs, and
  // until Connect says who the host is only what receiving Connect needs, so a host that opens
  // connections and never connects (or is refused) pins one capsule each, not a ring.
  const PoolLayout layout{_srq ? 0u : 1u, nvme::sqe_size + _limits.io_icd_size, 1};
  if (auto err = _connect_pool.create(pd, layout); !err.empty()) return err;
  try {
    _cmds.reset(new Command[_ncmds]);
    _recv_sge.reset(new ibv_sge[_nrecv]);
    _pending.assign(_nrecv, {});
    _buf_wait.assign(_ncmds, 0);
    _free.reserve(_ncmds);
  } catch (const std::bad_alloc&) {
    return "out of memory for " + std::to_string(_ncmds) + " command slots";
  }
  for (uint32_t i = _ncmds; i-- > 0;) {
    Command& c = _cmds[i];
    c.index = i;
    c.req.sq = &_sq;
    c.req.buf_cap = _limits.mdts_bytes;
    _free.push_back(i);
  }
  if (!_srq) {
    _recv_sge[0] = make_sge(_connect_pool.capsule(0), layout.capsule_size, _connect_pool.lkey());
    if (!post_recv(0)) return errno_text("ibv_post_recv");
  }
  if (ibv_req_notify_cq(_cq, 0) != 0) return errno_text("ibv_req_notify_cq");
  return {};
}

// Connect was accepted: the receive ring and a CQE per slot are registered and the receives
// posted before the response goes out, so the host finds them when it sends its next command.
// The Connect receive is not reposted (repost): the ring takes the QP's receive slots.
std::string RdmaQueue::grow() {
  const PoolLayout layout{_srq ? 0 : _nrecv, nvme::sqe_size + _limits.io_icd_size, _ncmds};
  if (auto err = _pool.create(_device->pd(), layout); !err.empty()) return err;
  _connect_pool.deregister();
  _grown = true;
  for (uint32_t i = 0; !_srq && i < _nrecv; ++i) {
    _recv_sge[i] = make_sge(_pool.capsule(i), layout.capsule_size, _pool.lkey());
    if (!post_recv(i)) return errno_text("ibv_post_recv");
  }
  return {};
}

std::array<int, 2> RdmaQueue::fds() const { return {_channel ? _channel->fd : -1, _ioctx.notify_fd()}; }

// Before Connect is accepted the queue's one receive is used once: success posts the ring (grow),
// and after a refused Connect the host has nothing more to send.
bool RdmaQueue::repost(uint32_t r) {
  if (_srq) return _device->post_srq_recv(r);
  return !_grown || post_recv(r);
}

bool RdmaQueue::post_recv(uint32_t i) {
  ibv_recv_wr wr = make_recv(i, &_recv_sge[i]);
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(_id->qp, &wr, &bad) == 0;
}

void RdmaQueue::post_send(ibv_send_wr* wr) {
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(_id->qp, wr, &bad); rc != 0)
    fail(std::string("ibv_post_send: ") + std::strerror(rc));
}

void RdmaQueue::fail(const std::string& why) {
  if (_closing) return;
  _closing = true;
  if (!_disconnected.load(std::memory_order_relaxed))
    _target.log(core::EventLevel::warning, "closing rdma queue " + _peer + ": " + why);
}

void RdmaQueue::kick() {
  std::lock_guard lk(_exec_mu);
  if (!_kicks_closed) _executor->schedule(*this);
}

void RdmaQueue::set_executor(exec::Executor& e) {
  std::lock_guard lk(_exec_mu);
  _executor = &e;
  _ring_watched = false;
}

// Acknowledges completion-channel events (the fd the executor watched): every event must be
// acked before the CQ can be destroyed, and the channel fd stays readable until read.
void RdmaQueue::drain_channel() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  unsigned n = 0;
  while (ibv_get_cq_event(_channel, &cq, &ctx) == 0) ++n;
  if (n) ibv_ack_cq_events(_cq, n);
}

void RdmaQueue::identify() {
  _identified = true;
  auto id = _stats.identity();
  id.qid = _sq.qid();
  id.cntlid = _sq.controller()->cntlid();
  id.subnqn = _sq.controller()->subsystem().nqn();
  _stats.set_identity(std::move(id));
}

// One io_work pass: completions from the CQ (capsules, READs done, SENDs done) and backend
// completions, in rounds until nothing moves or the op budget or deadline is reached. Going
// idle re-arms the CQ notification and looks once more, so a completion that raced the arm is
// not left waiting for an event that was never raised.
exec::Progress RdmaQueue::io_work() {
  const transport::Budgets b = _live_budgets.load();
  const uint64_t start = exec::monotonic_ns();
  _pass = {0, start};
  if (const uint64_t ready = exec_ready_ns.exchange(0, std::memory_order_relaxed); ready && ready <= start) {
    _pass.ready_ns = ready;
    if (auto* lat = _sq.latency()) lat->queue_wait.record(start - ready);
  }
  drain_channel();
  if (_sq.poll_events()) fail("controller gone");
  if (_disconnected.load(std::memory_order_relaxed)) fail("host disconnected");
  if (!_closing && !_sq.connected() && _handshake_expired.load(std::memory_order_relaxed)) {
    fail("no Connect within " + std::to_string(_limits.connect_timeout_ms) + " ms");
    _target.event("connect_timeout", "{\"peer\":" + core::json_string(_peer) + "}");
  }
  const uint64_t deadline = b.deadline_us ? start + b.deadline_us * 1000ull : 0;
  unsigned ops = 0;
  bool progress = true;
  while (progress && !_closing && ops < b.ops_per_pass) {
    serve_buffer_waits();
    const unsigned cq = poll_cq(b.recv_pdus + b.send_pdus);
    _ioctx.flush_submissions();
    const unsigned done = _ioctx.inflight() ? _ioctx.reap(b.reap_batch, [this](backend::Io& io) {
      _sq.on_backend_done(io);
    }) : 0;
    progress = cq + done > 0;
    ops += cq + done;
    if (deadline && exec::monotonic_ns() >= deadline) break;
  }
  exec_did_work = ops > 0;
  if (!_identified && _sq.connected()) identify();
  if (!_ring_watched && _ioctx.notify_fd() >= 0) {
    _ring_watched = true;
    _executor->watch_fd(*this, _ioctx.notify_fd());
  }
  if (_closing) {
    if (_buffer_waits)
      _target.log(core::EventLevel::info, _peer + ": " + std::to_string(_buffer_waits) +
                                              " commands waited for a data buffer (rdma.data_pool_bytes)");
    rdma_disconnect(_id);  // the host learns at once; flushed requests are not waited for
    _sq.unbind();
    std::lock_guard lk(_exec_mu);
    _kicks_closed = true;  // the CM thread's late DISCONNECTED must not schedule a closed task
    return exec::Progress::closed;
  }
  if (progress) return exec::Progress::more;
  ibv_req_notify_cq(_cq, 0);
  ibv_wc wc;
  if (ibv_poll_cq(_cq, 1, &wc) > 0) {
    on_completion(wc);
    return exec::Progress::more;
  }
  return exec_level_rearm && _ioctx.consume_notifications() ? exec::Progress::more : exec::Progress::idle;
}

// The shared receive queue's buffers this queue took and never gave back: receives completed on
// its CQ but not handled, capsules waiting for a slot, in-capsule data waiting for a buffer.
// Without this, every closed queue would shrink the device's SRQ.
void RdmaQueue::return_srq_receives() {
  ibv_wc wc;
  while (ibv_poll_cq(_cq, 1, &wc) > 0)
    if (wr_kind(wc.wr_id) == WrKind::recv) _device->post_srq_recv(wr_slot(wc.wr_id));
  for (; _pending_count > 0; --_pending_count, _pending_head = (_pending_head + 1) % _nrecv)
    _device->post_srq_recv(_pending[_pending_head].recv);
  for (uint32_t i = 0; i < _ncmds; ++i)
    if (_cmds[i].held_recv != no_recv) _device->post_srq_recv(_cmds[i].held_recv);
}

void RdmaQueue::retire() {
  if (_retire_hook) _retire_hook(this);
}

}  // namespace rdma
