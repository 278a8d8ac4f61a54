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
                     const QueueLimits& limits, const tcp::LiveBudgets& budgets)
    : _id(id), _peer(std::move(peer)), _target(target), _executor(&executor), _limits(limits),
      _live_budgets(budgets), _ioctx(limits.queue_depth), _sq(target, *this, _stats) {}

RdmaQueue::~RdmaQueue() {
  // The QP first: the device stops touching the pool before it is unregistered.
  if (_qp) rdma_destroy_qp(_id);
  if (_cq) ibv_destroy_cq(_cq);
  if (_channel) ibv_destroy_comp_channel(_channel);
  _pool.deregister();
  if (_pd) ibv_dealloc_pd(_pd);
  rdma_destroy_id(_id);
}

std::string RdmaQueue::setup(const CmRequestResult& req) {
  ibv_context* verbs = _id->verbs;
  _admin = req.request.qid == 0;
  _nrecv = req.recv_depth;
  // One command slot per command the host may have outstanding; a capsule that arrives while
  // the slot of its predecessor still awaits its SEND completion waits in _pending.
  _ncmds = req.recv_depth;
  if (!(_pd = ibv_alloc_pd(verbs))) return errno_text("ibv_alloc_pd");
  if (!(_channel = ibv_create_comp_channel(verbs))) return errno_text("ibv_create_comp_channel");
  fcntl(_channel->fd, F_SETFL, fcntl(_channel->fd, F_GETFL) | O_NONBLOCK);
  // Signaled completions: a receive per capsule, a READ and a SEND per command.
  const int cqe = static_cast<int>(_nrecv + 2 * _ncmds);
  const int vector = verbs->num_comp_vectors > 0 ? req.request.qid % verbs->num_comp_vectors : 0;
  if (!(_cq = ibv_create_cq(verbs, cqe, this, _channel, vector))) return errno_text("ibv_create_cq");
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = _cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = 2 * _ncmds;  // WRITE + SEND per command at most
  qa.cap.max_recv_wr = _nrecv;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(_id, _pd, &qa) != 0) return errno_text("rdma_create_qp");
  _qp = true;
  const PoolLayout layout{_nrecv, nvme::sqe_size + _limits.io_icd_size, _ncmds, 2 * _limits.mdts_bytes};
  if (auto err = _pool.create(_pd, layout); !err.empty()) return err;
  try {
    _cmds.reset(new Command[_ncmds]);
    _recv_sge.reset(new ibv_sge[_nrecv]);
    _recv_len.assign(_nrecv, 0);
    _pending.assign(_nrecv, 0);
    _free.reserve(_ncmds);
  } catch (const std::bad_alloc&) {
    return "out of memory for " + std::to_string(_ncmds) + " command slots";
  }
  for (uint32_t i = _ncmds; i-- > 0;) {
    Command& c = _cmds[i];
    c.index = i;
    c.req.sq = &_sq;
    c.req.buf = _pool.data(i);
    c.req.buf_cap = _limits.mdts_bytes;
    c.cqe_sge = make_sge(_pool.cqe(i), nvme::cqe_size, _pool.lkey());
    _free.push_back(i);
  }
  for (uint32_t i = 0; i < _nrecv; ++i) {
    _recv_sge[i] = make_sge(_pool.capsule(i), layout.capsule_size, _pool.lkey());
    if (!post_recv(i)) return errno_text("ibv_post_recv");
  }
  if (ibv_req_notify_cq(_cq, 0) != 0) return errno_text("ibv_req_notify_cq");
  return {};
}

std::array<int, 2> RdmaQueue::fds() const { return {_channel ? _channel->fd : -1, _ioctx.notify_fd()}; }

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
  const tcp::Budgets b = _live_budgets.load();
  const uint64_t start = exec::monotonic_ns();
  if (const uint64_t ready = exec_ready_ns.exchange(0, std::memory_order_relaxed); ready && ready <= start)
    _stats.queue_wait.record(start - ready);
  drain_channel();
  if (_sq.poll_events()) fail("controller gone");
  if (_disconnected.load(std::memory_order_relaxed)) fail("host disconnected");
  const uint64_t deadline = b.deadline_us ? start + b.deadline_us * 1000ull : 0;
  unsigned ops = 0;
  bool progress = true;
  while (progress && !_closing && ops < b.ops_per_pass) {
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

void RdmaQueue::retire() {
  if (_retire_hook) _retire_hook(this);
}

}  // namespace rdma
