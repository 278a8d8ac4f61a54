#pragma once
// The set of subsystems and listeners one engine serves; what discovery reports.
#include <atomic>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/subsystem.hpp"
#include "engine/core/wire_text.hpp"

namespace core {

inline constexpr uint8_t trtype_rdma = 1, trtype_tcp = 3;  // Discovery Log Page TRTYPE

struct ListenerAddress {
  uint8_t trtype = 3;  // TCP
  uint8_t adrfam = 1;  // IPv4
  std::string traddr;
  std::string trsvcid;
  uint16_t portid = 0;
};

// A discovery controller whose host asked for no keep-alive (KATO 0, what nvme-cli's one-shot
// discover sends) still expires after this long, as the kernel target's NVMET_DISC_KATO_MS:
// otherwise a host that connects and goes silent holds a connection (of max_connections) for
// as long as the TCP connection lives.
inline constexpr uint32_t default_discovery_kato_ms = 120'000;

struct Limits {
  uint32_t queue_depth = 128;   // MQES + 1
  uint32_t max_io_queues = 64;
  uint32_t mdts_bytes = 1 << 20;
  uint32_t io_ccsz = 8192 + 64;  // command capsule size of I/O queues
  uint32_t discovery_kato_ms = default_discovery_kato_ms;
};

struct TargetCounters {
  std::atomic<uint64_t> connects{0};
  std::atomic<uint64_t> disconnects{0};
  std::atomic<uint32_t> controllers{0};
};

enum class EventLevel { info, warning, error };
using EventLog = std::function<void(EventLevel, std::string_view)>;
// Structured events (connect, disconnect): kind and a JSON object with the details.
using EventHook = std::function<void(std::string_view kind, std::string detail_json)>;

// A JSON string literal of s (quotes included), shown as display_text shows it: NQNs come from
// the wire and may hold anything, and the event log's JSON must stay valid UTF-8.
inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : display_text(s)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class Target {
 public:
  explicit Target(Limits limits);

  const Limits& limits() const { return _limits; }
  Subsystem& discovery() { return *_discovery; }
  std::shared_ptr<Subsystem> find(std::string_view nqn) const;  // includes discovery
  void add_subsystem(std::shared_ptr<Subsystem> s);
  std::vector<std::shared_ptr<Subsystem>> subsystems() const;  // excluding discovery

  void add_listener(ListenerAddress a);
  std::vector<ListenerAddress> listeners() const;
  uint64_t genctr() const { return _genctr.load(); }
  void bump_genctr() { _genctr.fetch_add(1); }

  TargetCounters& counters() { return _counters; }
  void set_log(EventLog log) { _log = std::move(log); }
  // Every engine log line passes here: text a peer sent reaches the sink escaped, whichever
  // transport or command quoted it.
  void log(EventLevel lvl, std::string_view msg) const {
    if (!_log) return;
    if (is_display_safe(msg)) _log(lvl, msg);
    else _log(lvl, display_text(msg));
  }
  void set_event_hook(EventHook hook) { _event = std::move(hook); }
  void event(std::string_view kind, std::string detail_json) const {
    if (_event) _event(kind, std::move(detail_json));
  }

 private:
  Limits _limits;
  std::shared_ptr<Subsystem> _discovery;
  mutable std::mutex _mutex;
  std::vector<std::shared_ptr<Subsystem>> _subsystems;
  std::vector<ListenerAddress> _listeners;
  std::atomic<uint64_t> _genctr{1};
  TargetCounters _counters;
  EventLog _log;
  EventHook _event;
};

}  // namespace core
