#pragma once
// engine::Engine, the facade every upper room uses (app/, ui/, the control socket).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/steering_control.hpp"
#include "engine/stats/sampler.hpp"
#include "engine/stats/snapshot.hpp"

namespace engine {

struct ListenerInfo {
  std::string trtype;
  std::string traddr;
  uint16_t port = 0;  // the bound port (useful when the config asked for port 0)
};

// An engine thread, for pinning checks and the GUI's thread view.
struct ThreadInfo {
  int tid = 0;
  std::string name;   // as in /proc/self/task/TID/comm
  std::string role;   // "worker", "poller", "notifier", "accept", "sampler", "housekeeping"
  std::vector<unsigned> cpus;  // the affinity the engine asked for (empty = any)
};

using SnapshotSink = std::function<void(const stats::Snapshot&)>;

struct EngineStats {
  uint64_t commands = 0;
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  uint64_t pdus_rx = 0;
  uint64_t pdus_tx = 0;
  uint64_t connects = 0;
  uint64_t disconnects = 0;
  uint64_t protocol_errors = 0;  // queues ended with a C2HTermReq
  uint32_t queues = 0;           // connected TCP queues now
  uint32_t controllers = 0;      // live controllers now
};

enum class LogLevel { info, warning, error };
using LogSink = std::function<void(LogLevel, std::string_view)>;

class Engine {
 public:
  explicit Engine(control::Config cfg);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Opens backends, binds listeners, starts the executor. Returns every error (empty = running).
  std::vector<control::ConfigError> start();
  // Closes listeners and all queues, stops threads. Idempotent.
  void stop();
  bool running() const;

  std::vector<ListenerInfo> listeners() const;
  EngineStats stats() const;
  // A copy: live changes (namespaces, subsystems, threading) update it from other threads.
  control::Config config() const;

  // Live topology changes (hosts connected get an Asynchronous Event Notice).
  std::optional<control::ConfigError> add_namespace(std::string_view subnqn, const control::NamespaceConfig& ns);
  std::optional<control::ConfigError> remove_namespace(std::string_view subnqn, uint32_t nsid);

  // Connects, disconnects, refusals and protocol errors; called from engine threads.
  void set_log_sink(LogSink sink);

  // --- Live tuning (all take effect while hosts run I/O; a refused change changes nothing) ---
  std::vector<control::ConfigError> set_threading(const control::ThreadingConfig& t);
  control::ThreadingConfig threading() const;
  std::vector<control::ConfigError> set_budgets(const control::BudgetConfig& b);
  control::BudgetConfig budgets() const;
  std::optional<control::ConfigError> add_subsystem(const control::SubsystemConfig& s);
  std::vector<ThreadInfo> threads() const;

  // --- Statistics: the sampler closes an interval every sample_interval and hands it to sinks.
  // Sinks run on the sampler thread, never on the data path; keep them short.
  uint64_t subscribe(SnapshotSink sink);
  void unsubscribe(uint64_t id);
  // Outside data (eBPF probes) added to each snapshot before the sinks see it; see
  // stats::Sampler::add_provider. The engine does not know the providers' kind.
  uint64_t add_snapshot_provider(stats::SnapshotProvider provider);
  void remove_snapshot_provider(uint64_t id);
  stats::Snapshot last_snapshot() const;
  void set_sample_interval_ms(unsigned ms);
  // Events after seq `after` (0 = from the start), oldest first, at most max.
  std::vector<stats::Event> events(uint64_t after = 0, size_t max = 1000) const;
  // Records an event the engine did not cause itself (a profile applied, a note from the GUI),
  // so plots show it with the engine's own; detail_json must be a JSON object. Returns it
  // numbered and timed.
  stats::Event record_event(std::string kind, std::string detail_json);

  // --- Steering (IRQ affinity, RPS/XPS/RFS, busy-poll sysctls; control/steering_control.hpp).
  // Every apply and revert is a "steering" event; stop() reverts what the engine changed.
  // Before start(): where /proc and /sys are ("/" = this machine) and the crash state file
  // ("" = sys::default_steering_state_path()).
  void set_steering_root(std::string root, std::string state_file = {});
  // Discovery of the listeners' interfaces (all = every interface), with rates since the
  // previous call, and what the engine changed.
  control::SteeringState steering(bool all_interfaces = false);
  // The dry run: one row per file (path, old, new); errors name the rule's field.
  sys::SteeringPlan plan_steering(const sys::SteeringRequest& request);
  // All or nothing: on a refused write every earlier write is rolled back.
  control::SteeringOutcome apply_steering(const sys::SteeringRequest& request);
  // Restores every file the engine changed (also those a crashed engine left in the state file).
  sys::TxnResult revert_steering();

 private:
  stats::Sampler& sampler();  // created on first use
  struct Impl;
  std::unique_ptr<Impl> _impl;
};

}  // namespace engine
