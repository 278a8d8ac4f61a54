#include "engine/initiator/controller.hpp"

#include <time.h>

#include <algorithm>
#include <string>

#include "engine/initiator/commands.hpp"
#include "engine/initiator/connect_queue.hpp"
#include "engine/initiator/sync.hpp"

namespace initiator {
namespace {

constexpr uint32_t min_ready_timeout_ms = 1000;
constexpr uint32_t csts_poll_max_ms = 20;

void sleep_ms(uint32_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000L};
  nanosleep(&ts, nullptr);
}

}  // namespace

Controller::Controller(const Target& t) : _target(t) {}
Controller::~Controller() = default;

Result<std::unique_ptr<Controller>> Controller::connect(const Target& t) {
  std::unique_ptr<Controller> c(new Controller(t));
  QueueParams p;
  p.qid = 0;
  p.depth = admin_queue_depth;
  p.kato_ms = t.kato_ms;
  p.cntlid = 0xffff;
  p.icd_size = admin_icd_size;
  p.timeout_ms = t.timeout_ms;
  auto q = connect_queue(t, p);
  if (!q) return q.error();
  c->_admin = std::move(q.value());
  if (auto r = c->enable(); !r) return r.error();
  c->_last_keep_alive_ns = monotonic_ns();
  return c;
}

// CAP, VS, CC.EN, wait for CSTS.RDY, Identify Controller.
Result<Ok> Controller::enable() {
  auto cap = property_get(nvme::Property::cap);
  if (!cap) return cap.error();
  _cap = *cap;
  auto vs = property_get(nvme::Property::vs);
  if (!vs) return vs.error();
  _vs = static_cast<uint32_t>(*vs);
  if (auto r = property_set(nvme::Property::cc, cmd::cc_enable); !r) return r.error();

  const uint32_t cap_to_ms = static_cast<uint32_t>((_cap >> 24) & 0xff) * 500;
  const uint64_t deadline = monotonic_ns() + std::max(cap_to_ms, min_ready_timeout_ms) * 1'000'000ull;
  for (uint32_t delay = 1;; delay = std::min(delay * 2, csts_poll_max_ms)) {
    auto csts = property_get(nvme::Property::csts);
    if (!csts) return csts.error();
    if (*csts & cmd::csts_cfs) return Error::usage("controller fatal status (CSTS.CFS) after enable");
    if (*csts & cmd::csts_rdy) break;
    if (monotonic_ns() > deadline) return Error::timeout("CSTS.RDY after CC.EN");
    sleep_ms(delay);
  }

  auto id = identify(static_cast<uint8_t>(nvme::Cns::controller));
  if (!id) return id.error();
  _id = parse_identify_controller(*id);
  return Ok{};
}

uint32_t Controller::io_icd_size() const {
  const uint64_t ccsz = static_cast<uint64_t>(_id.ioccsz) * 16;
  return ccsz > capsule_sqe_bytes ? static_cast<uint32_t>(ccsz - capsule_sqe_bytes) : 0;
}

uint64_t Controller::mdts_bytes() const {
  if (_id.mdts == 0) return 0;
  const uint64_t mpsmin = 4096ull << ((_cap >> 48) & 0xf);
  return mpsmin << _id.mdts;
}

QueueParams Controller::io_queue_params(uint16_t depth) const {
  QueueParams p;
  p.qid = _next_qid;
  p.depth = depth ? depth : _target.queue_depth;
  // depth commands fit under SQ flow control in depth + 1 entries (SQSIZE = depth, 0's based),
  // and SQSIZE 0 is invalid, so qd 1 asks for 2 entries. Past CAP.MQES the host runs one
  // command more than its entries, as the kernel host does.
  p.sqsize = std::min<uint16_t>(p.depth, static_cast<uint16_t>(_cap & 0xffff));
  p.cntlid = cntlid();
  p.icd_size = io_icd_size();
  p.timeout_ms = _target.timeout_ms;
  return p;
}

Result<std::unique_ptr<TcpQueue>> Controller::create_io_queue(uint16_t depth) {
  if (_target.trtype != Transport::tcp) return Error::usage("create_io_queue: the target is not NVMe/TCP");
  auto q = TcpQueue::connect(_target, io_queue_params(depth));
  if (q) ++_next_qid;
  return q;
}

Result<std::unique_ptr<Queue>> Controller::create_queue(uint16_t depth) {
  auto q = connect_queue(_target, io_queue_params(depth));
  if (q) ++_next_qid;
  return q;
}

// ---- admin commands -----------------------------------------------------------------------

Result<Completion> Controller::admin(RawCommand c) {
  return sync_raw(*_admin, std::move(c), _target.timeout_ms);
}

Result<std::vector<uint8_t>> Controller::identify(uint8_t cns, uint32_t nsid, uint16_t cntid) {
  std::vector<uint8_t> data(identify_size);
  RawCommand c{cmd::identify(cns, nsid, cntid), data, Dir::ctrl_to_host};
  if (auto r = admin(c); !r) return r.error();
  return data;
}

Result<std::vector<uint8_t>> Controller::get_log_page(uint8_t lid, uint32_t len, uint64_t offset,
                                                      uint8_t lsp, uint32_t nsid) {
  if (len == 0 || len % 4 != 0) return Error::usage("log page length must be a non-zero multiple of 4");
  std::vector<uint8_t> data(len);
  RawCommand c{cmd::get_log_page(lid, len, offset, lsp, nsid), data, Dir::ctrl_to_host};
  if (auto r = admin(c); !r) return r.error();
  return data;
}

Result<uint32_t> Controller::get_features(uint8_t fid, uint32_t cdw11, uint32_t nsid) {
  auto r = admin(RawCommand{cmd::get_features(fid, cdw11, nsid)});
  if (!r) return r.error();
  return r->cqe.dw0;
}

Result<uint32_t> Controller::set_features(uint8_t fid, uint32_t value, uint32_t nsid) {
  auto r = admin(RawCommand{cmd::set_features(fid, value, nsid)});
  if (!r) return r.error();
  return r->cqe.dw0;
}

Result<Ok> Controller::keep_alive() {
  auto r = admin(RawCommand{cmd::keep_alive()});
  if (!r) return r.error();
  _last_keep_alive_ns = monotonic_ns();
  return Ok{};
}

Result<uint64_t> Controller::property_get(nvme::Property p) {
  const bool eight = p == nvme::Property::cap;
  auto r = admin(RawCommand{cmd::property_get(p, eight)});
  if (!r) return r.error();
  return eight ? (static_cast<uint64_t>(r->cqe.dw1) << 32 | r->cqe.dw0) : r->cqe.dw0;
}

Result<Ok> Controller::property_set(nvme::Property p, uint64_t value) {
  auto r = admin(RawCommand{cmd::property_set(p, value, p == nvme::Property::cap)});
  if (!r) return r.error();
  return Ok{};
}

// ---- asynchronous events and keep-alive ---------------------------------------------------

Result<Ok> Controller::submit_async_event() {
  RawCommand c{cmd::async_event_request()};
  c.done = {[](void* ctx, const Completion& comp) {
              auto* self = static_cast<Controller*>(ctx);
              if (comp.aborted)
                self->_events.emplace_back(Error::usage("AER aborted: admin queue ended"));
              else if (!comp.status.ok())
                self->_events.emplace_back(Error::from_status(comp.status, comp.cqe, "AER"));
              else
                self->_events.emplace_back(comp.cqe.dw0);
            },
            this};
  if (!_admin->submit_raw(c)) return Error::usage("AER could not be submitted");
  _admin->flush();
  return Ok{};
}

std::optional<Result<uint32_t>> Controller::take_async_event() {
  if (_events.empty()) return std::nullopt;
  auto e = std::move(_events.front());
  _events.pop_front();
  return e;
}

Result<uint32_t> Controller::wait_async_event(int timeout_ms) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(std::max(timeout_ms, 0)) * 1'000'000;
  while (_events.empty()) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline) return Error::timeout("no asynchronous event");
    if (_admin->wait(static_cast<int>((deadline - now + 999'999) / 1'000'000)) < 0) {
      if (_events.empty()) return _admin->error();
    }
  }
  return *take_async_event();
}

bool Controller::poll() {
  if (_admin->poll() < 0) return false;
  if (_target.kato_ms == 0 || _keep_alive_outstanding) return true;
  const uint64_t now = monotonic_ns();
  if (now - _last_keep_alive_ns < static_cast<uint64_t>(_target.kato_ms) * 500'000) return true;
  RawCommand c{cmd::keep_alive()};
  c.done = {[](void* ctx, const Completion&) {
              static_cast<Controller*>(ctx)->_keep_alive_outstanding = false;
            },
            this};
  if (_admin->submit_raw(c)) {
    _keep_alive_outstanding = true;
    _last_keep_alive_ns = now;
    _admin->flush();
  }
  return _admin->state() == Queue::State::live;
}

Result<Ok> Controller::disconnect() {
  if (_admin->state() != TcpQueue::State::live) return Error::usage("admin queue is not live");
  auto cc = property_get(nvme::Property::cc);
  if (cc) {
    const uint64_t shn = (*cc & ~uint64_t{3u << 14}) | cmd::cc_shn_normal;
    if (property_set(nvme::Property::cc, shn)) {
      const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(_target.timeout_ms) * 1'000'000;
      for (uint32_t delay = 1; monotonic_ns() < deadline; delay = std::min(delay * 2, csts_poll_max_ms)) {
        auto csts = property_get(nvme::Property::csts);
        if (!csts || (*csts & cmd::csts_shst_mask) == cmd::csts_shst_complete) break;
        sleep_ms(delay);
      }
    }
  }
  _admin->close();
  return Ok{};
}

}  // namespace initiator
