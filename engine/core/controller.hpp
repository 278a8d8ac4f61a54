#pragma once
// A controller: the association of one host with one subsystem, created by Connect on the
// admin queue. State shared by its queues lives here; the data path only reads it.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/subsystem.hpp"

namespace core {

class SubmissionQueue;
class Target;

// Controller lifecycle (CC.EN / CSTS.RDY / shutdown), changed only through set_state().
enum class CtrlState : uint8_t { disabled, ready, shutdown_complete, dead };

// Asynchronous event bits waiting to be reported through a parked AER.
namespace aen {
inline constexpr uint32_t ns_changed = 1u << 0;
}

class Controller {
 public:
  Controller(Target& target, std::shared_ptr<Subsystem> subsys, std::string hostnqn,
             std::array<uint8_t, 16> hostid, uint32_t kato_ms);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Target& target() const { return _target; }
  Subsystem& subsystem() const { return *_subsys; }
  const std::shared_ptr<Subsystem>& subsystem_ptr() const { return _subsys; }
  const std::string& hostnqn() const { return _hostnqn; }
  const std::array<uint8_t, 16>& hostid() const { return _hostid; }
  uint16_t cntlid() const { return _cntlid; }
  void set_cntlid(uint16_t id) { _cntlid = id; }

  // Properties.
  uint64_t cap() const;
  uint32_t cc() const { return _cc.load(std::memory_order_acquire); }
  uint32_t csts() const { return _csts.load(std::memory_order_acquire); }
  // CC.EN 1 -> 0 is a controller reset: the I/O queues are closed (as SPDK does) and CSTS.RDY
  // drops once the last of them is gone; CC.EN 0 -> 1 sets RDY again (or CFS).
  void write_cc(uint32_t value);
  // Commands other than Fabrics ones are served only while CC.EN and CSTS.RDY are both 1.
  bool enabled() const { return (csts() & 1) && (cc() & 1); }
  // Advances at each reset: an I/O queue bound in an older one closes.
  uint32_t reset_count() const { return _resets.load(std::memory_order_acquire); }

  // Queues.
  bool attach_queue(uint16_t qid, SubmissionQueue* sq);  // false if taken or out of range
  void detach_queue(uint16_t qid);
  uint16_t io_queues_allowed() const { return _io_queues.load(); }
  void set_io_queues_allowed(uint16_t n) { _io_queues.store(n); }
  std::vector<SubmissionQueue*> queues_locked_snapshot() const;

  // Keep alive: KATO in ms, 0 = disabled (never for a discovery controller: kato_for()).
  uint32_t kato_ms() const { return _kato_ms.load(); }
  void set_kato_ms(uint32_t v) { _kato_ms.store(kato_for(v)); keep_alive(); }
  void keep_alive();
  bool keep_alive_expired(std::chrono::steady_clock::time_point now) const;

  // Teardown: marks the controller dead and kicks every queue so each closes itself.
  void fail(const char* reason);
  bool dead() const { return _dead.load(std::memory_order_acquire); }

  // Asynchronous events.
  void raise_event(uint32_t bits, uint32_t nsid);
  uint32_t take_events() { return _events.exchange(0); }
  // Puts back events no parked AER could take; they wait for the next AER (no kick).
  void defer_events(uint32_t bits) { _events.fetch_or(bits); }
  uint32_t async_event_config() const { return _aec.load(); }
  void set_async_event_config(uint32_t v) { _aec.store(v); }
  std::vector<uint32_t> take_changed_nsids();
  bool volatile_write_cache() const { return _vwc.load(); }
  void set_volatile_write_cache(bool v) { _vwc.store(v); }

  // SMART counters (summed from the queues' own counters when read: no shared writes per I/O).
  struct Smart {
    uint64_t data_units_read = 0, data_units_written = 0, host_reads = 0, host_writes = 0;
  };
  Smart smart() const;

 private:
  bool reset_io_queues_locked();
  uint32_t kato_for(uint32_t ms) const;

  Target& _target;
  std::shared_ptr<Subsystem> _subsys;
  std::string _hostnqn;
  std::array<uint8_t, 16> _hostid;
  uint16_t _cntlid = 0;
  std::atomic<uint32_t> _cc{0}, _csts{0};
  std::atomic<uint32_t> _kato_ms;
  std::atomic<int64_t> _last_ka_ns{0};
  std::atomic<uint16_t> _io_queues;
  std::atomic<bool> _dead{false};
  std::atomic<uint32_t> _resets{0};
  bool _resetting = false;  // guarded by _mutex: RDY drops when the last I/O queue detaches
  std::atomic<uint32_t> _events{0};
  std::atomic<uint32_t> _aec{0x100};  // namespace attribute notices enabled
  std::atomic<bool> _vwc{true};
  mutable std::mutex _mutex;  // queues, changed-namespace list, CSTS changes
  std::vector<SubmissionQueue*> _queues;  // index = qid
  std::vector<uint32_t> _changed_nsids;
};

}  // namespace core
