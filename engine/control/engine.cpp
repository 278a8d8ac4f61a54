// engine::Engine: builds the target from a Config and runs it.
#include "engine/control/engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/config/config_json.hpp"
#include "engine/control/executor_factory.hpp"
#include "engine/control/transport_factory.hpp"
#include "engine/core/controller.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/connection_cap.hpp"
#include "engine/exec/executor.hpp"
#include "engine/nvme/spec.hpp"
#include "engine/stats/event_log.hpp"
#include "engine/stats/registry.hpp"
#include "engine/stats/sampler.hpp"
#include "engine/transport/transport.hpp"

namespace engine {
namespace {

using control::ConfigError;

inline constexpr auto housekeeping_period = std::chrono::milliseconds(100);
// How long a live switch waits for every queue to reach an io_work boundary.
inline constexpr unsigned switch_timeout_ms = 10000;

// io_uring pays only where a queue's ring can belong to one thread (IoContext::set_owned): say
// so when it is chosen with an executor that moves queues between threads.
void note_mechanism(core::Target& target, const control::ThreadingConfig& t, const exec::Executor& ex) {
  if (t.io_mechanism != "io_uring" || ex.keeps_tasks_on_one_thread()) return;
  target.log(core::EventLevel::info, "threading: io_uring with " + t.mode +
                                         " shares each queue's ring between the threads that run it (each "
                                         "receive's completion work goes to the thread that armed it): epoll "
                                         "is faster here; bound, poll and unbound with one worker per pod "
                                         "give each queue a ring of its own");
}

core::Limits limits_of(const control::Config& c) {
  const auto q = control::queue_limits_of(c);
  core::Limits l;
  l.queue_depth = q.queue_depth;
  l.max_io_queues = q.max_io_queues;
  l.mdts_bytes = q.mdts_bytes;
  l.io_ccsz = q.io_icd_size + nvme::sqe_size;
  l.discovery_kato_ms = c.tcp.discovery_kato_ms;
  return l;
}

}  // namespace

struct Engine::Impl {
  control::Config cfg;
  stats::Registry registry;  // outlives the transport, whose queues register in it
  stats::EventLog events;
  std::unique_ptr<stats::Sampler> sampler;
  unsigned sample_ms = 1000;
  core::Target target;
  std::unique_ptr<exec::Executor> executor;
  // One limit for every transport's connections; before them, as they give slots back.
  std::unique_ptr<exec::ConnectionCap> connections;
  // One per trtype a listener names, made by the first such listener (transport_factory.hpp).
  std::vector<std::unique_ptr<transport::Transport>> transports;
  std::vector<ListenerInfo> listeners;
  std::mutex log_mutex;
  LogSink log_sink;
  std::thread housekeeper;
  std::mutex hk_mutex;
  std::condition_variable hk_cv;
  bool hk_stop = false;
  std::atomic<bool> running{false};
  mutable std::mutex tune_mutex;  // one live change at a time; guards cfg.threading/budgets
  control::SteeringControl steering;

  explicit Impl(control::Config c) : cfg(std::move(c)), target(limits_of(cfg)) {
    target.set_event_hook([this](std::string_view kind, std::string detail) { events.append(std::string(kind), std::move(detail)); });
    steering.set_event_sink([this](const std::string& detail) { events.append("steering", detail); });
    steering.set_interfaces([this] {
      std::vector<std::string> names;
      for (const auto& l : cfg.listeners)
        for (auto& n : sys::interfaces_with_address(l.traddr))
          if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(std::move(n));
      return names;
    });
    target.set_log([this](core::EventLevel lvl, std::string_view msg) {
      std::lock_guard lk(log_mutex);
      if (log_sink) log_sink(static_cast<LogLevel>(lvl), msg);
    });
  }

  std::unique_ptr<core::Namespace> open_namespace(const std::string& nqn, const control::NamespaceConfig& n,
                                                  const std::string& path, std::vector<ConfigError>& errs) {
    std::string err;
    auto be = backend::open_backend(n.backend, err);
    if (!be) {
      errs.push_back({path, err});
      return nullptr;
    }
    std::array<uint8_t, 16> uuid{};
    if (n.uuid.empty()) uuid = core::derive_uuid(nqn, n.nsid);
    else if (!core::parse_uuid(n.uuid, uuid)) errs.push_back({path + ".uuid", "not a UUID: " + n.uuid});
    return std::make_unique<core::Namespace>(n.nsid, std::move(be), n.block_size, uuid);
  }

  void build_subsystems(std::vector<ConfigError>& errs) {
    for (size_t i = 0; i < cfg.subsystems.size(); ++i) {
      const auto& s = cfg.subsystems[i];
      auto sub = std::make_shared<core::Subsystem>(s.nqn, s.serial, s.model, s.allow_any_host, s.hosts, false);
      for (size_t j = 0; j < s.namespaces.size(); ++j) {
        const std::string path = "$.subsystems[" + std::to_string(i) + "].namespaces[" + std::to_string(j) + "]";
        if (auto ns = open_namespace(s.nqn, s.namespaces[j], path, errs)) sub->add_namespace(std::move(ns));
      }
      target.add_subsystem(std::move(sub));
    }
  }

  // The transport of this trtype, made on first use.
  transport::Transport* transport_for(const std::string& trtype, std::string& err) {
    for (auto& t : transports)
      if (t->name() == trtype) return t.get();
    const control::TransportContext ctx{target,
                                        *executor,
                                        registry,
                                        *connections,
                                        control::budgets_of(cfg.budgets),
                                        control::mechanism_of(cfg.threading)};
    auto t = control::make_transport(trtype, cfg, ctx, err);
    if (!t) return nullptr;
    transports.push_back(std::move(t));
    return transports.back().get();
  }

  void bind_listeners(std::vector<ConfigError>& errs) {
    for (size_t i = 0; i < cfg.listeners.size(); ++i) {
      const auto& l = cfg.listeners[i];
      const std::string where = "$.listeners[" + std::to_string(i) + "]";
      std::string err;
      auto* t = transport_for(l.trtype, err);
      const uint16_t port = t ? t->listen(l.traddr, l.trsvcid, err) : 0;
      if (port) {
        listeners.push_back({l.trtype, l.traddr, port});
        target.add_listener({t->trtype(), 1, l.traddr, std::to_string(port), 0});
      } else if (t && t->listen_failure() == transport::ListenFailure::serves_the_rest) {
        listener_error(where, l, err);
      } else {
        errs.push_back({where, err});
      }
    }
  }

  // A listener that cannot listen and need not stop the engine (RDMA on a host without an RDMA
  // device) is reported, as an error in the log and a "listener_error" event.
  void listener_error(const std::string& where, const control::ListenerConfig& l, const std::string& err) {
    target.log(core::EventLevel::error, where + " " + l.trtype + " " + l.traddr + ":" + l.trsvcid + ": " + err);
    events.append("listener_error", "{\"path\":" + core::json_string(where) + ",\"trtype\":" +
                                        core::json_string(l.trtype) + ",\"traddr\":" + core::json_string(l.traddr) +
                                        ",\"error\":" + core::json_string(err) + "}");
  }

  void threading_event(const control::ThreadingConfig& t, const char* how) {
    events.append("threading", "{\"mode\":" + core::json_string(t.mode) + ",\"cpumask\":" +
                                   core::json_string(sys::format_cpu_list(t.cpus)) + ",\"threads\":" +
                                   std::to_string(t.threads) + ",\"how\":\"" + how + "\"}");
  }

  // Keep-alive: a controller whose host went silent for KATO is torn down. Removed namespaces
  // no command holds any more are freed (a removal with no later one would otherwise wait).
  void housekeeping() {
    pthread_setname_np(pthread_self(), "nvmt-house");
    std::unique_lock lk(hk_mutex);
    while (!hk_cv.wait_for(lk, housekeeping_period, [this] { return hk_stop; })) {
      const auto now = std::chrono::steady_clock::now();
      auto subs = target.subsystems();
      subs.push_back(target.find(nvme::discovery_nqn));
      for (auto& s : subs) {
        for (auto& c : s->controllers())
          if (!c->dead() && c->keep_alive_expired(now)) c->fail("keep-alive timeout");
        s->namespaces().reclaim();
      }
    }
  }
};

Engine::Engine(control::Config cfg) : _impl(std::make_unique<Impl>(std::move(cfg))) {}

Engine::~Engine() { stop(); }

std::vector<ConfigError> Engine::start() {
  auto& im = *_impl;
  auto errs = control::validate(im.cfg);
  if (!errs.empty()) return errs;
  im.build_subsystems(errs);
  if (!errs.empty()) return errs;
  errs = control::check_threading(im.cfg.threading);
  auto more = control::validate_budgets(im.cfg.budgets);
  errs.insert(errs.end(), more.begin(), more.end());
  if (!errs.empty()) return errs;
  std::string err;
  im.executor = control::make_executor(im.cfg.threading, err, &im.registry);
  if (!im.executor) return {{"$.threading.mode", err}};
  im.transports.clear();  // (a restart) every transport lets go of the old cap before it goes
  im.connections = std::make_unique<exec::ConnectionCap>(im.cfg.tcp.max_connections);
  note_mechanism(im.target, im.cfg.threading, *im.executor);
  im.bind_listeners(errs);
  if (!errs.empty()) {
    im.transports.clear();
    im.executor->stop();
    return errs;
  }
  for (auto& t : im.transports) t->start();
  im.sampler = std::make_unique<stats::Sampler>(im.registry, std::chrono::milliseconds(im.sample_ms));
  im.sampler->set_mode(im.cfg.threading.mode);
  im.events.append("start", "{\"mode\":" + core::json_string(im.cfg.threading.mode) + "}");
  im.hk_stop = false;
  im.housekeeper = std::thread([&im] { im.housekeeping(); });
  im.running = true;
  return {};
}

void Engine::stop() {
  auto& im = *_impl;
  // A clean exit leaves the machine as the engine found it.
  if (im.steering.changed()) {
    const auto r = im.steering.revert();
    std::lock_guard lk(im.log_mutex);
    if (!r.ok() && im.log_sink) im.log_sink(LogLevel::error, "steering revert at stop: " + r.message());
  }
  if (!im.running.exchange(false)) return;
  for (auto& t : im.transports) t->stop_accepting();
  im.executor->stop();  // retires (closes and frees) every queue
  im.sampler->stop();
  {
    std::lock_guard lk(im.hk_mutex);
    im.hk_stop = true;
  }
  im.hk_cv.notify_all();
  im.housekeeper.join();
}

bool Engine::running() const { return _impl->running; }

std::vector<ListenerInfo> Engine::listeners() const { return _impl->listeners; }

control::Config Engine::config() const {
  std::lock_guard lk(_impl->tune_mutex);
  return _impl->cfg;
}

EngineStats Engine::stats() const {
  EngineStats s;
  auto& im = *_impl;
  if (!im.transports.empty()) {  // started: the queues' blocks are in the registry
    const auto total = im.registry.collect().total();
    s.commands = total.commands;
    s.read_bytes = total.read_bytes;
    s.write_bytes = total.write_bytes;
  }
  for (const auto& tr : im.transports) {
    const auto t = tr->totals();
    s.pdus_rx += t.pdus_rx;
    s.pdus_tx += t.pdus_tx;
    s.protocol_errors += t.protocol_errors;
    s.queues += t.queues;
  }
  auto& c = im.target.counters();
  s.connects = c.connects.load();
  s.disconnects = c.disconnects.load();
  s.controllers = c.controllers.load();
  return s;
}

std::optional<ConfigError> Engine::add_namespace(std::string_view subnqn, const control::NamespaceConfig& ns) {
  auto& im = *_impl;
  auto sub = im.target.find(subnqn);
  if (!sub || sub->is_discovery()) return ConfigError{"subnqn", "no such subsystem: " + std::string(subnqn)};
  if (ns.nsid < 1 || ns.nsid > core::max_nsid) return ConfigError{"nsid", "must be 1..1024"};
  if (ns.block_size != 512 && ns.block_size != 4096) return ConfigError{"block_size", "must be 512 or 4096"};
  std::vector<ConfigError> errs;
  auto n = im.open_namespace(sub->nqn(), ns, "namespace", errs);
  if (!errs.empty()) return errs.front();
  if (!sub->add_namespace(std::move(n))) return ConfigError{"nsid", "NSID " + std::to_string(ns.nsid) + " is in use"};
  {
    std::lock_guard lk(im.tune_mutex);
    for (auto& s : im.cfg.subsystems)
      if (s.nqn == subnqn) s.namespaces.push_back(ns);
  }
  im.events.append("namespace_add", "{\"subnqn\":" + core::json_string(subnqn) + ",\"nsid\":" + std::to_string(ns.nsid) + "}");
  return std::nullopt;
}

std::optional<ConfigError> Engine::remove_namespace(std::string_view subnqn, uint32_t nsid) {
  auto sub = _impl->target.find(subnqn);
  if (!sub || sub->is_discovery()) return ConfigError{"subnqn", "no such subsystem: " + std::string(subnqn)};
  if (!sub->remove_namespace(nsid)) return ConfigError{"nsid", "no namespace " + std::to_string(nsid)};
  {
    std::lock_guard lk(_impl->tune_mutex);
    for (auto& s : _impl->cfg.subsystems)
      if (s.nqn == subnqn) std::erase_if(s.namespaces, [&](const control::NamespaceConfig& n) { return n.nsid == nsid; });
  }
  _impl->events.append("namespace_remove", "{\"subnqn\":" + core::json_string(subnqn) + ",\"nsid\":" + std::to_string(nsid) + "}");
  return std::nullopt;
}

std::vector<ConfigError> Engine::set_threading(const control::ThreadingConfig& t) {
  auto& im = *_impl;
  std::lock_guard lk(im.tune_mutex);
  auto errs = control::check_threading(t);
  if (!errs.empty()) return errs;
  if (!im.running) {
    im.cfg.threading = t;
    return {};
  }
  std::string err;
  if (control::reconfigure_in_place(*im.executor, im.cfg.threading, t, err)) {
    if (!err.empty()) return {{"$.threading", err}};
    for (auto& tr : im.transports) tr->set_io_mechanism(control::mechanism_of(t));
    im.cfg.threading = t;
    im.target.log(core::EventLevel::info, "threading: " + t.mode + " re-pinned in place");
    im.threading_event(t, "in_place");
    return {};
  }
  auto next = control::make_executor(t, err, &im.registry);
  if (!next) return {{"$.threading.mode", err}};
  // Before the move: a queue accepted during the switch already gets the new mechanism.
  for (auto& tr : im.transports) tr->set_io_mechanism(control::mechanism_of(t));
  for (auto& tr : im.transports) {
    auto moved = tr->move_queues(*next, switch_timeout_ms);
    if (err.empty()) err = std::move(moved);
  }
  // Even on a timeout the old executor must go: queues it still holds are retired (closed).
  im.executor->stop();
  im.executor = std::move(next);
  im.cfg.threading = t;
  im.target.log(core::EventLevel::info, "threading: switched to " + t.mode);
  note_mechanism(im.target, t, *im.executor);
  im.sampler->set_mode(t.mode);
  im.threading_event(t, err.empty() ? "switched" : "switch_timeout");
  if (!err.empty()) return {{"$.threading", err}};
  return {};
}

control::ThreadingConfig Engine::threading() const {
  std::lock_guard lk(_impl->tune_mutex);
  return _impl->cfg.threading;
}

std::vector<ConfigError> Engine::set_budgets(const control::BudgetConfig& b) {
  auto& im = *_impl;
  std::lock_guard lk(im.tune_mutex);
  auto errs = control::validate_budgets(b);
  if (!errs.empty()) return errs;
  im.cfg.budgets = b;
  for (auto& t : im.transports) t->set_budgets(control::budgets_of(b));
  im.events.append("budgets", "{\"recv_pdus\":" + std::to_string(b.recv_pdus) + ",\"send_pdus\":" +
                                  std::to_string(b.send_pdus) + ",\"ops_per_pass\":" + std::to_string(b.ops_per_pass) +
                                  ",\"bytes_per_pass\":" + std::to_string(b.bytes_per_pass) + ",\"deadline_us\":" +
                                  std::to_string(b.deadline_us) + ",\"reap_batch\":" + std::to_string(b.reap_batch) + "}");
  return {};
}

control::BudgetConfig Engine::budgets() const {
  std::lock_guard lk(_impl->tune_mutex);
  return _impl->cfg.budgets;
}

std::vector<ThreadInfo> Engine::threads() const {
  auto& im = *_impl;
  std::lock_guard lk(im.tune_mutex);
  std::vector<ThreadInfo> out;
  if (!im.executor) return out;
  for (auto& t : im.executor->threads()) out.push_back({t.tid, t.name, t.role, t.cpus});
  return out;
}

std::optional<ConfigError> Engine::add_subsystem(const control::SubsystemConfig& s) {
  auto& im = *_impl;
  control::Config probe = im.cfg;
  probe.subsystems = {s};
  for (auto& e : control::validate(probe))
    if (e.path.rfind("$.subsystems", 0) == 0) return e;
  if (im.target.find(s.nqn)) return ConfigError{"nqn", "subsystem " + s.nqn + " exists"};
  std::vector<ConfigError> errs;
  auto sub = std::make_shared<core::Subsystem>(s.nqn, s.serial, s.model, s.allow_any_host, s.hosts, false);
  for (size_t j = 0; j < s.namespaces.size(); ++j)
    if (auto ns = im.open_namespace(s.nqn, s.namespaces[j], "namespaces[" + std::to_string(j) + "]", errs))
      sub->add_namespace(std::move(ns));
  if (!errs.empty()) return errs.front();
  im.target.add_subsystem(std::move(sub));
  std::lock_guard lk(im.tune_mutex);
  im.cfg.subsystems.push_back(s);
  return std::nullopt;
}

stats::Sampler& Engine::sampler() {
  auto& im = *_impl;
  if (!im.sampler) im.sampler = std::make_unique<stats::Sampler>(im.registry, std::chrono::milliseconds(im.sample_ms));
  return *im.sampler;
}

uint64_t Engine::subscribe(SnapshotSink sink) { return sampler().subscribe(std::move(sink)); }

uint64_t Engine::add_snapshot_provider(stats::SnapshotProvider provider) {
  return sampler().add_provider(std::move(provider));
}

void Engine::remove_snapshot_provider(uint64_t id) {
  if (_impl->sampler) _impl->sampler->remove_provider(id);
}

void Engine::unsubscribe(uint64_t id) {
  if (_impl->sampler) _impl->sampler->unsubscribe(id);
}

stats::Snapshot Engine::last_snapshot() const {
  return _impl->sampler ? _impl->sampler->last() : stats::Snapshot{};
}

void Engine::set_sample_interval_ms(unsigned ms) {
  auto& im = *_impl;
  im.sample_ms = ms ? ms : 1000;
  if (im.sampler) im.sampler->set_interval(std::chrono::milliseconds(im.sample_ms));
}

std::vector<stats::Event> Engine::events(uint64_t after, size_t max) const { return _impl->events.since(after, max); }

stats::Event Engine::record_event(std::string kind, std::string detail_json) {
  return _impl->events.append(std::move(kind), std::move(detail_json));
}

void Engine::set_log_sink(LogSink sink) {
  std::lock_guard lk(_impl->log_mutex);
  _impl->log_sink = std::move(sink);
}

}  // namespace engine

namespace engine {

void Engine::set_steering_root(std::string root, std::string state_file) {
  _impl->steering.set_root(std::move(root), std::move(state_file));
}

control::SteeringState Engine::steering(bool all_interfaces) { return _impl->steering.state(all_interfaces); }

sys::SteeringPlan Engine::plan_steering(const sys::SteeringRequest& request) { return _impl->steering.plan(request); }

control::SteeringOutcome Engine::apply_steering(const sys::SteeringRequest& request) {
  return _impl->steering.apply(request);
}

sys::TxnResult Engine::revert_steering() { return _impl->steering.revert(); }

}  // namespace engine
