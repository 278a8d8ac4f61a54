#include "engine/core/submission_queue.hpp"

#include <algorithm>

#include "engine/core/handlers.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/executor.hpp"
#include "engine/stats/usdt.hpp"

namespace core {
namespace {

// The SQHD of every CQE when the host disabled SQ flow control at Connect (as nvmet does).
constexpr uint16_t sqhd_flow_disabled = 0xffff;

bool is_fabrics(const Request& req) {
  return req.sqe.opcode() == static_cast<uint8_t>(nvme::AdminOpcode::fabrics);
}

bool is_connect(const Request& req) {
  return is_fabrics(req) && req.sqe.fctype() == static_cast<uint8_t>(nvme::FabricsType::connect);
}

}  // namespace

SubmissionQueue::SubmissionQueue(Target& target, TransportQueue& transport, stats::QueueStats& stats)
    : _target(target), _transport(transport), _stats(stats) {}

SubmissionQueue::~SubmissionQueue() { unbind(); }

void SubmissionQueue::bind(std::shared_ptr<Controller> ctrl, uint16_t qid, uint16_t sqsize,
                           bool sqflow_disabled) {
  _ctrl = std::move(ctrl);
  _lat = &_stats.make_latency();
  _qid = qid;
  _sqsize = sqsize;
  _sqflow_disabled = sqflow_disabled;
  _bound_resets = _ctrl->reset_count();
}

void SubmissionQueue::unbind() {
  if (!_ctrl) return;
  _ctrl->detach_queue(_qid);
  if (_qid == 0) {
    // The admin queue carries the association: without it the I/O queues must go too.
    _target.log(EventLevel::info, "disconnect: " + _ctrl->hostnqn() + " from " +
                                      _ctrl->subsystem().nqn() + " cntlid " +
                                      std::to_string(_ctrl->cntlid()) + " (" + _transport.peer() + ")");
    _target.event("disconnect", "{\"hostnqn\":" + json_string(_ctrl->hostnqn()) + ",\"subnqn\":" +
                                    json_string(_ctrl->subsystem().nqn()) + ",\"cntlid\":" +
                                    std::to_string(_ctrl->cntlid()) + "}");
    _ctrl->fail("admin queue closed");
    _target.counters().disconnects.fetch_add(1);
  }
  _ctrl.reset();
}

nvme::Status SubmissionQueue::prepare(Request& req) {
  req.dir = DataDir::none;
  req.transfer_len = 0;
  req.response_len = 0;
  req.step = 0;
  req.step_offset = 0;
  release_data(req);  // none: complete() or the transport dropped it (a slot never leaks one)
  req.io.lent = nullptr;  // admin commands never start an Io: no stale lent data
  req.write_dst = nullptr;
  req.ns = nullptr;
  req.cqe = nvme::Cqe{};
  if (req.sqe.fuse() != 0) return nvme::status::invalid_field.at(1);

  nvme::Status st;
  if (!_ctrl) {
    st = is_connect(req) ? prepare_fabrics(*this, req) : nvme::status::command_sequence_error;
  } else if (is_fabrics(req)) {
    st = prepare_fabrics(*this, req);
  } else if (!_ctrl->enabled()) {
    st = nvme::status::command_sequence_error;
  } else if (_qid == 0) {
    st = _ctrl->subsystem().is_discovery() ? prepare_discovery(*this, req) : prepare_admin(*this, req);
  } else {
    st = prepare_nvm(*this, req);
  }
  if (st.ok() && req.transfer_len > req.buf_cap) st = nvme::status::invalid_field.at(48);
  // The SGL must describe exactly the data the command implies.
  if (st.ok() && req.sgl_len != req.transfer_len) st = nvme::status::sgl_length_invalid.at(24);
  // A refused command's data is received only to be dropped: never into the namespace.
  if (!st.ok()) req.write_dst = nullptr;
  return st;
}

void SubmissionQueue::execute(Request& req, uint64_t now_ns) {
  _stats.commands.add();
  if (is_fabrics(req)) return execute_fabrics(*this, req);
  if (_qid != 0) return execute_nvm(*this, req, now_ns ? now_ns : exec::monotonic_ns());
  if (_ctrl->subsystem().is_discovery()) return execute_discovery(*this, req);
  execute_admin(*this, req);
}

void SubmissionQueue::fill_cqe(Request& req, nvme::Status st) {
  req.status = st;
  req.cqe.sqhd = _sqflow_disabled ? sqhd_flow_disabled : _sqhd;
  req.cqe.sqid = _qid;
  req.cqe.cid = req.sqe.cid();
  req.cqe.status = static_cast<uint16_t>(st.field() << 1);
}

// SQ flow control: an entry is consumed when its command completes and gives its slot back,
// not when its capsule arrives (as SPDK does). A host that submits whenever SQHD says an entry
// is free then never has more commands outstanding than the queue has slots; advancing on
// arrival let it refill the whole SQ while earlier commands still held theirs.
void SubmissionQueue::complete(Request& req, nvme::Status st) {
  // The backend is done with the namespace, and so is the transport unless it is to send
  // lent data: the namespace may be freed once the hold is gone.
  if (!st.ok()) req.io.lent = nullptr;
  if (!req.io.lent) release_data(req);
  if (!st.ok()) _counters.errors.add();
  advance_sqhd();
  fill_cqe(req, st);
  _transport.complete(req);
}

void SubmissionQueue::release_data(Request& req) {
  if (!req.ns_hold.table) return;
  NamespaceTable::release(req.ns_hold);
  req.ns = nullptr;
}

void SubmissionQueue::on_backend_done(backend::Io& io) {
  nvm_backend_done(*this, *static_cast<Request*>(io.owner));
}

void SubmissionQueue::resume(Request& req) { nvm_resume(*this, req); }

bool SubmissionQueue::park_aer(Request& req) {
  for (auto& slot : _aers) {
    if (!slot) {
      slot = &req;
      return true;
    }
  }
  return false;
}

void SubmissionQueue::disconnect_requested() {
  _disconnecting = true;
  _transport.kick();  // one more pass: poll_events() starts the close
}

bool SubmissionQueue::poll_events() {
  if (!_ctrl) return false;
  if (_ctrl->dead() || _disconnecting) return true;
  if (_qid != 0) return _ctrl->reset_count() != _bound_resets;
  const uint32_t events = _ctrl->take_events();
  if (!events) return false;
  uint32_t undelivered = 0;
  if (events & aen::ns_changed) {
    Request* aer = nullptr;
    for (auto& slot : _aers) {
      if (slot) {
        aer = slot;
        slot = nullptr;
        break;
      }
    }
    if (!(_ctrl->async_event_config() & 0x100)) {
      // Host disabled namespace attribute notices: drop the event.
    } else if (aer) {
      aer->cqe.dw0 = nvme::aen_notice_ns_changed;
      complete(*aer, nvme::status::success);
    } else {
      undelivered |= aen::ns_changed;
    }
  }
  if (undelivered) _ctrl->defer_events(undelivered);
  return false;
}

void SubmissionQueue::record_latency(Request& req, const void* queue) {
  if (!req.start_ns) return;
  const uint64_t end = req.done_ns >= req.start_ns ? req.done_ns : exec::monotonic_ns();
  req.completed_ns = end;
  const uint64_t ns = end - req.start_ns;
  NVMT_USDT3(cmd_complete, queue, req.sqe.cid(), ns);
  if (!_lat) return;  // a Connect refused: the queue never got its histograms
  by_opcode(req, _lat->read_latency, _lat->write_latency, _lat->other_latency).record(ns);
}

stats::Histogram& SubmissionQueue::by_opcode(const Request& req, stats::Histogram& read, stats::Histogram& write,
                                             stats::Histogram& other) const {
  if (_qid == 0) return other;
  const uint8_t op = req.sqe.opcode();
  if (op == static_cast<uint8_t>(nvme::NvmOpcode::read)) return read;
  return op == static_cast<uint8_t>(nvme::NvmOpcode::write) ? write : other;
}

void SubmissionQueue::record_received(Request& req, uint64_t arrival_ns, const PassTimes& pass) {
  const uint64_t parsed = req.start_ns;
  // No stamp: the earliest moment the engine knows of (readiness, else the pass).
  uint64_t t = arrival_ns ? arrival_ns : (pass.ready_ns ? pass.ready_ns : pass.start_ns);
  if (t > parsed || t == 0) t = parsed;  // a stamp from ahead of this clock (a clock step)
  req.arrival_ns = t;
  const uint64_t ready = std::clamp(pass.ready_ns ? pass.ready_ns : t, t, parsed);
  const uint64_t start = std::clamp(pass.start_ns, ready, parsed);
  if (!_lat) return;  // the Connect capsule: its queue's histograms come with it
  _lat->stage_scheduling.record(ready - t);
  _lat->stage_queue.record(start - ready);
  _lat->stage_receive.record(parsed - start);
}

void SubmissionQueue::record_data_wait(const Request& req, uint64_t now_ns) {
  if (_lat && req.start_ns && now_ns >= req.start_ns) _lat->stage_data_wait.record(now_ns - req.start_ns);
}

void SubmissionQueue::record_sent(const Request& req, uint64_t now_ns) {
  if (!_lat || !req.arrival_ns || now_ns < req.arrival_ns) return;
  // An AER waits, by design, until something happens (minutes): not a latency of the target's.
  if (_qid == 0 && req.sqe.opcode() == static_cast<uint8_t>(nvme::AdminOpcode::async_event_request)) return;
  by_opcode(req, _lat->target_read_latency, _lat->target_write_latency, _lat->target_other_latency)
      .record(now_ns - req.arrival_ns);
  if (req.completed_ns >= req.arrival_ns && req.completed_ns <= now_ns) _lat->stage_send.record(now_ns - req.completed_ns);
}

}  // namespace core
