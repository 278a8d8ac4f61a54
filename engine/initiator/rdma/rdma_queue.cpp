#include "engine/initiator/rdma/rdma_queue.hpp"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "engine/initiator/commands.hpp"
#include "engine/initiator/rdma/host_capsule.hpp"
#include "engine/initiator/sync.hpp"
#include "engine/initiator/target.hpp"
#include "engine/rdma/work_request.hpp"

namespace initiator {
namespace {

// Budgets of one poll(), named as STYLE.md asks.
constexpr int poll_batch = 32;    // work completions per ibv_poll_cq
constexpr int poll_passes = 4;    // ibv_poll_cq calls per poll() when the CQ stays full
// Empty poll()s between looks at the CM channel for a target that went away (a syscall).
constexpr uint32_t peer_check_polls = 4096;
constexpr long wait_sleep_ns = 20'000;  // wait(): pause between polls (slow path only)
constexpr int access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

}  // namespace

// A command slot; CID = index. Busy from submit until both its SEND and its response completed.
struct RdmaQueue::Slot {
  bool busy = false;
  bool sent = false;       // the capsule's SEND completed: its buffer may be reused
  bool responded = false;  // the response capsule arrived
  uint32_t len = 0;
  uint32_t rkey = 0;       // of the command's data (0: none)
  nvme::Cqe cqe{};
  Callback done;
  uint64_t submit_ns = 0;
  Mr temp;                 // data outside registered memory: registered for this command only
  ibv_sge sge{};
  ibv_send_wr wr{};
};

RdmaQueue::RdmaQueue(const QueueParams& p) : _params(p) {
  _slots = std::make_unique<Slot[]>(p.depth);
  _capsules = std::make_unique<nvme::Sqe[]>(p.depth);
  _free.reserve(p.depth);
  for (uint32_t i = p.depth; i-- > 0;) _free.push_back(static_cast<uint16_t>(i));
}

RdmaQueue::~RdmaQueue() {
  if (_cm) _cm->disconnect();  // before the registrations go: the target can no longer touch them
}

Result<std::unique_ptr<RdmaQueue>> RdmaQueue::connect(const Target& t, const QueueParams& p) {
  if (p.depth == 0) return Error::usage("queue depth must be at least 1");
  std::unique_ptr<RdmaQueue> q(new RdmaQueue(p));
  if (auto r = q->setup(t); !r) return r.error();
  if (auto r = q->send_connect(t); !r) return r.error();
  return q;
}

RdmaQueue::Mr RdmaQueue::reg(void* p, size_t len) { return Mr(ibv_reg_mr(_cm->pd(), p, len, access_flags)); }

// rdma_cm connect with the CM request, capsule and response buffers registered, receives posted.
Result<Ok> RdmaQueue::setup(const Target& t) {
  const uint16_t sqsize = _params.sqsize ? _params.sqsize : static_cast<uint16_t>(_params.depth - 1);
  const auto req = rdma_host::cm_request(_params.qid, sqsize, _params.depth);
  _nrecv = req.hrqsize;
  auto cm = rdma_host::CmConnection::open(t, {uint32_t{_params.depth} + 1, _nrecv}, _params.timeout_ms);
  if (!cm) return cm.error();
  _cm = std::move(cm.value());
  _responses = std::make_unique<nvme::Cqe[]>(_nrecv);
  _capsule_mr = reg(_capsules.get(), sizeof(nvme::Sqe) * _params.depth);
  _response_mr = reg(_responses.get(), sizeof(nvme::Cqe) * _nrecv);
  if (!_capsule_mr || !_response_mr) return Error::transport(errno, "ibv_reg_mr (capsules and responses)");
  _recv_sge.resize(_nrecv);
  _recv_wr.resize(_nrecv);
  for (uint32_t i = 0; i < _nrecv; ++i) {
    _recv_sge[i] = ::rdma::make_sge(&_responses[i], sizeof(nvme::Cqe), _response_mr->lkey);
    _recv_wr[i] = ::rdma::make_recv(i, &_recv_sge[i]);
    _recv_wr[i].next = i + 1 < _nrecv ? &_recv_wr[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(_cm->qp(), _recv_wr.data(), &bad); rc != 0) return Error::transport(rc, "ibv_post_recv");
  const auto pd = ::rdma::encode_cm_request(req);
  if (auto r = _cm->establish(pd, _params.timeout_ms); !r) return r.error();
  _state = State::live;
  return Ok{};
}

Result<Ok> RdmaQueue::send_connect(const Target& t) {
  const auto d = cmd::connect_data(t.hostid, _params.cntlid, t.subnqn, t.hostnqn);
  std::vector<uint8_t> data(d.begin(), d.end());
  const uint16_t sqsize = _params.sqsize ? _params.sqsize : static_cast<uint16_t>(_params.depth - 1);
  RawCommand rc{cmd::connect(_params.qid, sqsize, _params.qid == 0 ? _params.kato_ms : 0, t.disable_sqflow),
                data, Dir::host_to_ctrl};
  auto r = sync_raw(*this, rc, _params.timeout_ms);
  if (!r) {
    if (r.error().kind == Error::Kind::nvme) _connect_cqe = r.error().cqe;
    return r.error();
  }
  _connect_cqe = r->cqe;
  _cntlid = _params.qid == 0 ? static_cast<uint16_t>(r->cqe.dw0 & 0xffff) : _params.cntlid;
  return Ok{};
}

Result<Ok> RdmaQueue::register_memory(void* p, size_t len) {
  if (!_cm) return Error::usage("queue is not connected");
  if (_memory.find(p, len)) return Ok{};
  Mr mr = reg(p, len);
  if (!mr) return Error::transport(errno, "ibv_reg_mr of " + std::to_string(len) + " bytes");
  if (!_memory.add(p, len, mr->lkey, mr->rkey))
    return Error::usage("more than " + std::to_string(rdma_host::MemoryTable::capacity) + " registered regions");
  _user_mrs.push_back(std::move(mr));
  return Ok{};
}

// ---- submission ---------------------------------------------------------------------------

std::optional<uint16_t> RdmaQueue::submit(const Io& io) {
  const auto c = build_command(io);
  if (!c) return std::nullopt;
  return start(c->sqe, c->dir == Dir::none ? std::span<uint8_t>{} : io.buf, io.done);
}

std::optional<uint16_t> RdmaQueue::submit_raw(const RawCommand& c) {
  return start(c.sqe, c.dir == Dir::none ? std::span<uint8_t>{} : c.data, c.done);
}

std::optional<uint16_t> RdmaQueue::start(const nvme::Sqe& sqe, std::span<uint8_t> data, Callback done) {
  if (_free.empty() || _state != State::live || data.size() > ::rdma::keyed_sgl_max_length) return std::nullopt;
  const uint16_t cid = _free.back();
  Slot& s = _slots[cid];
  s.rkey = 0;
  if (!data.empty()) {
    if (const auto* r = _memory.find(data.data(), data.size())) {
      s.rkey = r->rkey;
    } else {
      s.temp = reg(data.data(), data.size());  // slow path: admin commands, tests
      if (!s.temp) return std::nullopt;
      s.rkey = s.temp->rkey;
    }
  }
  _free.pop_back();
  ++_outstanding;
  nvme::Sqe& capsule = _capsules[cid];
  capsule = sqe;
  capsule.set_cid(cid);
  rdma_host::set_host_data(capsule, reinterpret_cast<uint64_t>(data.data()), static_cast<uint32_t>(data.size()), s.rkey);
  s.busy = true;
  s.sent = s.responded = false;
  s.len = static_cast<uint32_t>(data.size());
  s.done = done;
  s.submit_ns = monotonic_ns();
  s.sge = ::rdma::make_sge(&capsule, sizeof capsule, _capsule_mr->lkey);
  s.wr = ibv_send_wr{};
  s.wr.wr_id = ::rdma::make_wr_id(::rdma::WrKind::send, cid);
  s.wr.sg_list = &s.sge;
  s.wr.num_sge = 1;
  s.wr.opcode = IBV_WR_SEND;
  s.wr.send_flags = IBV_SEND_SIGNALED;  // the capsule buffer is reused only after this
  (_send_tail ? _send_tail->next : _send_head) = &s.wr;
  _send_tail = &s.wr;
  return cid;
}

bool RdmaQueue::flush() {
  if (_state != State::live) return false;
  if (!_send_head) return true;
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(_cm->qp(), _send_head, &bad);
  _send_head = _send_tail = nullptr;
  if (rc != 0) fail(Error::transport(rc, "ibv_post_send"));
  return _state == State::live;
}

bool RdmaQueue::post_recvs() {
  if (!_recv_head) return true;
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(_cm->qp(), _recv_head, &bad);
  _recv_head = _recv_tail = nullptr;
  if (rc != 0) fail(Error::transport(rc, "ibv_post_recv"));
  return _state == State::live;
}

// ---- completions --------------------------------------------------------------------------

int RdmaQueue::poll() {
  _completed = 0;
  if (!flush()) return -1;
  ibv_wc wc[poll_batch];
  for (int pass = 0; pass < poll_passes; ++pass) {
    const int n = ibv_poll_cq(_cm->cq(), poll_batch, wc);
    if (n < 0) {
      fail(Error::transport(0, "ibv_poll_cq"));
      return -1;
    }
    for (int i = 0; i < n; ++i)
      if (!on_completion(wc[i])) return -1;
    if (n < poll_batch) break;
  }
  if (!post_recvs() || !flush()) return -1;
  if (_completed > 0) {
    _idle_polls = 0;
  } else if (++_idle_polls >= peer_check_polls) {
    _idle_polls = 0;
    if (_cm->peer_closed(0)) {
      fail(Error::transport(0, "disconnected by the target"));
      return -1;
    }
  }
  return static_cast<int>(_completed);
}

bool RdmaQueue::on_completion(const ibv_wc& wc) {
  const auto kind = ::rdma::wr_kind(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    fail(Error::transport(0, std::string(kind == ::rdma::WrKind::recv ? "receive" : "send") +
                                 " completion: " + ibv_wc_status_str(wc.status)));
    return false;
  }
  if (kind == ::rdma::WrKind::recv) return on_response(wc);
  const uint32_t cid = ::rdma::wr_slot(wc.wr_id);
  if (kind != ::rdma::WrKind::send || cid >= _params.depth || !_slots[cid].busy) {
    fail(Error::transport(0, "send completion for CID " + std::to_string(cid) + " not in flight"));
    return false;
  }
  _slots[cid].sent = true;
  maybe_finish(static_cast<uint16_t>(cid));
  return _state == State::live;
}

bool RdmaQueue::on_response(const ibv_wc& wc) {
  const uint32_t i = ::rdma::wr_slot(wc.wr_id);
  if (i >= _nrecv) {
    fail(Error::transport(0, "receive completion for buffer " + std::to_string(i) + " not posted"));
    return false;
  }
  const nvme::Cqe cqe = _responses[i];  // copied before the buffer is posted again
  _recv_wr[i].next = nullptr;
  (_recv_tail ? _recv_tail->next : _recv_head) = &_recv_wr[i];
  _recv_tail = &_recv_wr[i];
  if (wc.byte_len < sizeof(nvme::Cqe)) {
    fail(Error::transport(0, "response capsule of " + std::to_string(wc.byte_len) + " bytes"));
    return false;
  }
  if (cqe.cid >= _params.depth || !_slots[cqe.cid].busy || _slots[cqe.cid].responded) {
    fail(Error::transport(0, "response for CID " + std::to_string(cqe.cid) + " not in flight"));
    return false;
  }
  Slot& s = _slots[cqe.cid];
  // SEND with invalidate: the target may only invalidate the key this command carried.
  if (wc.wc_flags & IBV_WC_WITH_INV) {
    if (s.rkey == 0 || wc.invalidated_rkey != s.rkey) {
      fail(Error::transport(0, "response invalidated key " + std::to_string(wc.invalidated_rkey) +
                                   ", not the one of CID " + std::to_string(cqe.cid)));
      return false;
    }
    ++_remote_invalidations;
  }
  s.cqe = cqe;
  s.responded = true;
  maybe_finish(cqe.cid);
  return _state == State::live;
}

void RdmaQueue::maybe_finish(uint16_t cid) {
  Slot& s = _slots[cid];
  if (!s.sent || !s.responded) return;
  Completion c;
  c.cqe = s.cqe;
  c.status = nvme::Status::from_field(static_cast<uint16_t>(s.cqe.status >> 1));
  release(cid, c);
}

// Frees the slot first, so the callback may submit again.
void RdmaQueue::release(uint16_t cid, Completion& c) {
  Slot& s = _slots[cid];
  const Callback cb = s.done;
  s.busy = false;
  s.done = {};
  s.temp.reset();
  _free.push_back(cid);
  --_outstanding;
  ++_completed;
  deliver(c, cid, s.len, s.submit_ns, cb);
}

void RdmaQueue::forget(uint16_t cid) {
  if (cid < _params.depth && _slots[cid].busy) _slots[cid].done = {};
}

// ---- waiting, errors and teardown ---------------------------------------------------------

int RdmaQueue::wait(int timeout_ms) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(std::max(timeout_ms, 0)) * 1'000'000;
  for (;;) {
    if (_state != State::live) return -1;
    const int n = poll();
    if (n != 0 || monotonic_ns() >= deadline) return n;
    if (_cm->peer_closed(0)) {
      fail(Error::transport(0, "disconnected by the target"));
      return -1;
    }
    const timespec ts{0, wait_sleep_ns};
    nanosleep(&ts, nullptr);
  }
}

bool RdmaQueue::wait_peer_close(int timeout_ms) { return _cm && _cm->peer_closed(timeout_ms); }

void RdmaQueue::fail(Error e) {
  if (_state == State::failed || _state == State::closed) return;
  _error = std::move(e);
  _state = _error.kind == Error::Kind::usage ? State::closed : State::failed;
  if (_cm) _cm->disconnect();  // the QP enters the error state: nothing touches our memory now
  _send_head = _send_tail = nullptr;
  _recv_head = _recv_tail = nullptr;
  for (uint16_t cid = 0; cid < _params.depth; ++cid) {
    if (!_slots[cid].busy) continue;
    Completion c;
    c.aborted = true;
    c.status = nvme::status::abort_sq_deletion;
    release(cid, c);
  }
}

void RdmaQueue::close() { fail(Error::usage("queue closed by the host")); }

}  // namespace initiator
