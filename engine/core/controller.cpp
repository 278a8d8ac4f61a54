#include "engine/core/controller.hpp"

#include <algorithm>

#include "engine/core/submission_queue.hpp"
#include "engine/core/target.hpp"

namespace core {
namespace {

namespace cc_bits {
inline constexpr uint32_t en = 1u << 0;
inline uint32_t shn(uint32_t cc) { return (cc >> 14) & 3; }
inline uint32_t css(uint32_t cc) { return (cc >> 4) & 7; }
inline uint32_t mps(uint32_t cc) { return (cc >> 7) & 0xf; }
inline uint32_t iosqes(uint32_t cc) { return (cc >> 16) & 0xf; }
inline uint32_t iocqes(uint32_t cc) { return (cc >> 20) & 0xf; }
}  // namespace cc_bits

namespace csts_bits {
inline constexpr uint32_t rdy = 1u << 0;
inline constexpr uint32_t cfs = 1u << 1;
inline constexpr uint32_t shst_complete = 2u << 2;
}  // namespace csts_bits

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Controller::Controller(Target& target, std::shared_ptr<Subsystem> subsys, std::string hostnqn,
                       std::array<uint8_t, 16> hostid, uint32_t kato_ms)
    : _target(target), _subsys(std::move(subsys)), _hostnqn(std::move(hostnqn)), _hostid(hostid),
      _kato_ms(0), _io_queues(static_cast<uint16_t>(target.limits().max_io_queues)) {
  _kato_ms.store(kato_for(kato_ms));
  _queues.resize(target.limits().max_io_queues + 1u, nullptr);
  keep_alive();
  _target.counters().controllers.fetch_add(1);
}

Controller::~Controller() { _target.counters().controllers.fetch_sub(1); }

uint64_t Controller::cap() const {
  const uint64_t mqes = _target.limits().queue_depth - 1;
  const uint64_t cqr = 1ull << 16;        // queues must be physically contiguous (fabrics: yes)
  const uint64_t to = 15ull << 24;        // 7.5 s for CSTS.RDY transitions, in 500 ms units
  const uint64_t css_nvm = 1ull << 37;    // NVM command set
  return mqes | cqr | to | css_nvm;       // MPSMIN = MPSMAX = 0: 4 KiB pages
}

void Controller::write_cc(uint32_t value) {
  std::lock_guard lk(_mutex);
  const uint32_t old = _cc.exchange(value);
  uint32_t csts = _csts.load();
  if ((value & cc_bits::en) && !(old & cc_bits::en)) {
    // 64-byte SQEs and 16-byte CQEs are the only sizes fabrics allow; CAP offers 4 KiB pages
    // (MPSMIN = MPSMAX = 0) and the NVM command set (CSS 000b) only.
    const bool ok = cc_bits::iosqes(value) == 6 && cc_bits::iocqes(value) == 4 && cc_bits::mps(value) == 0 &&
                    cc_bits::css(value) == 0;
    csts = ok ? (csts | csts_bits::rdy) : (csts | csts_bits::cfs);
    _resetting = false;  // queues of the last reset still closing no longer decide RDY
  } else if (!(value & cc_bits::en) && (old & cc_bits::en)) {
    csts &= ~csts_bits::shst_complete;
    if (!reset_io_queues_locked()) csts &= ~csts_bits::rdy;
  }
  if (cc_bits::shn(value) != 0) csts = (csts & ~(3u << 2)) | csts_bits::shst_complete;
  _csts.store(csts, std::memory_order_release);
}

// Closes every I/O queue (each notices at its next pass, SubmissionQueue::poll_events);
// returns whether any was open, RDY then dropping when the last one detaches.
bool Controller::reset_io_queues_locked() {
  _resets.fetch_add(1, std::memory_order_acq_rel);
  bool any = false;
  for (size_t qid = 1; qid < _queues.size(); ++qid) {
    if (!_queues[qid]) continue;
    any = true;
    _queues[qid]->transport().kick();
  }
  _resetting = any;
  return any;
}

bool Controller::attach_queue(uint16_t qid, SubmissionQueue* sq) {
  std::lock_guard lk(_mutex);
  if (qid >= _queues.size() || _queues[qid] != nullptr) return false;
  _queues[qid] = sq;
  return true;
}

void Controller::detach_queue(uint16_t qid) {
  std::lock_guard lk(_mutex);
  if (qid < _queues.size()) _queues[qid] = nullptr;
  if (!_resetting || qid == 0) return;
  if (std::any_of(_queues.begin() + 1, _queues.end(), [](const SubmissionQueue* q) { return q != nullptr; })) return;
  _resetting = false;
  _csts.fetch_and(~csts_bits::rdy, std::memory_order_acq_rel);
}

std::vector<SubmissionQueue*> Controller::queues_locked_snapshot() const {
  std::lock_guard lk(_mutex);
  std::vector<SubmissionQueue*> out;
  for (auto* q : _queues)
    if (q) out.push_back(q);
  return out;
}

// Connect and Set Features both pass through here, so a discovery host cannot turn the
// timeout off after connecting either.
uint32_t Controller::kato_for(uint32_t ms) const {
  return ms == 0 && _subsys->is_discovery() ? _target.limits().discovery_kato_ms : ms;
}

void Controller::keep_alive() { _last_ka_ns.store(now_ns(), std::memory_order_relaxed); }

bool Controller::keep_alive_expired(std::chrono::steady_clock::time_point now) const {
  const uint32_t kato = _kato_ms.load();
  if (kato == 0) return false;
  const int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  return t - _last_ka_ns.load(std::memory_order_relaxed) > int64_t{kato} * 1'000'000;
}

void Controller::fail(const char* reason) {
  if (_dead.exchange(true)) return;
  _target.log(EventLevel::warning, "controller " + std::to_string(_cntlid) + " of " +
                                       _subsys->nqn() + " for " + _hostnqn + ": " + reason);
  // Kicking under the lock: a queue unregisters itself (same lock) before it is freed.
  std::lock_guard lk(_mutex);
  for (auto* q : _queues)
    if (q) q->transport().kick();
}

void Controller::raise_event(uint32_t bits, uint32_t nsid) {
  std::lock_guard lk(_mutex);
  if (std::find(_changed_nsids.begin(), _changed_nsids.end(), nsid) == _changed_nsids.end())
    _changed_nsids.push_back(nsid);
  _events.fetch_or(bits);
  if (!_queues.empty() && _queues[0]) _queues[0]->transport().kick();
}

std::vector<uint32_t> Controller::take_changed_nsids() {
  std::lock_guard lk(_mutex);
  std::vector<uint32_t> out;
  out.swap(_changed_nsids);
  std::sort(out.begin(), out.end());
  return out;
}

Controller::Smart Controller::smart() const {
  Smart s;
  std::lock_guard lk(_mutex);
  // Counters are written by each queue's own thread; a relaxed, slightly stale read is fine
  // for a health log.
  for (auto* q : _queues) {
    if (!q) continue;
    const auto& c = q->counters();
    s.data_units_read += q->stats().read_bytes.get() / 512000;  // units of 1000 512-byte blocks
    s.data_units_written += q->stats().write_bytes.get() / 512000;
    s.host_reads += c.read_commands.get();
    s.host_writes += c.write_commands.get();
  }
  return s;
}

}  // namespace core
