// An experiment target that is an engine in this process (experiment_target.hpp).
#include "lab/experiment/experiment_target.hpp"

#include <nlohmann/json.hpp>

#include "engine/control/steering_json.hpp"

namespace lab {

namespace {

using json = nlohmann::json;

constexpr const char* experiment_nqn = "nqn.2026-12.io.nvmetune:experiment";
constexpr uint64_t default_ram_bytes = 512ull << 20;
// Short sampler intervals: a 5 s measurement then spans several whole intervals.
constexpr unsigned embedded_sample_ms = 250;

control::Config default_experiment_config() {
  control::Config c;
  c.listeners.push_back({"tcp", "127.0.0.1", "0"});
  control::SubsystemConfig s;
  s.nqn = experiment_nqn;
  s.allow_any_host = true;
  control::NamespaceConfig ns;
  ns.nsid = 1;
  ns.backend.kind = "ram";
  ns.backend.size_bytes = default_ram_bytes;
  s.namespaces.push_back(ns);
  c.subsystems.push_back(s);
  return c;
}

class EmbeddedTarget final : public ExperimentTarget {
 public:
  explicit EmbeddedTarget(control::Config cfg) : _cfg(cfg), _engine(std::move(cfg)) {}
  ~EmbeddedTarget() override { _engine.stop(); }

  std::string start(engine::LogSink log) {
    _engine.set_log_sink(std::move(log));
    if (auto errors = _engine.start(); !errors.empty()) return errors_text(errors);
    _engine.set_sample_interval_ms(embedded_sample_ms);
    if (_engine.listeners().empty() || _cfg.subsystems.empty()) return "the engine configuration serves nothing";
    return {};
  }
  std::string describe() const override {
    const auto l = _engine.listeners().front();
    return "embedded engine on " + l.traddr + ":" + std::to_string(l.port) + " (" + _cfg.subsystems.front().nqn + ")";
  }
  initiator::Target perf_target() const override {
    initiator::Target t;
    const auto l = _engine.listeners().front();
    t.traddr = l.traddr == "0.0.0.0" ? "127.0.0.1" : l.traddr;
    t.port = l.port;
    t.subnqn = _cfg.subsystems.front().nqn;
    return t;
  }
  control::ThreadingConfig base_threading() const override { return _cfg.threading; }
  control::BudgetConfig base_budgets() const override { return _cfg.budgets; }
  std::string apply(const control::ThreadingConfig& t, const control::BudgetConfig& b) override {
    if (auto errors = _engine.set_threading(t); !errors.empty()) return "threading.set refused: " + errors_text(errors);
    if (auto errors = _engine.set_budgets(b); !errors.empty()) return "budgets.set refused: " + errors_text(errors);
    return {};
  }
  std::string steer(const json& request) override {
    if (auto r = _engine.revert_steering(); !r.ok()) return "steering.revert: " + r.message();
    if (request.is_null()) return {};
    sys::SteeringRequest req;
    if (auto errors = control::parse_steering_request(request, "steering", req); !errors.empty()) return errors_text(errors);
    const auto out = _engine.apply_steering(req);
    if (!out.plan.ok()) return "steering.apply refused: " + errors_text(control::plan_errors(out.plan, "steering"));
    if (!out.result.ok()) return "steering.apply refused: " + out.result.message();
    return {};
  }
  std::optional<EngineInterval> latest() override {
    const stats::Snapshot s = _engine.last_snapshot();
    if (s.seq == 0 && s.interval_ns == 0) return std::nullopt;
    EngineInterval iv;
    iv.seq = s.seq;
    iv.end_ns = s.time_ns;
    iv.interval_ns = s.interval_ns;
    iv.commands = s.total.commands;
    for (const auto& w : s.workers) iv.worker_cpu_ns += w.cpu_ns;
    iv.queue_wait = s.total.queue_wait;
    iv.target_latency = s.total.target_read_latency;
    iv.target_latency.merge(s.total.target_write_latency);
    return iv;
  }

 private:
  control::Config _cfg;
  engine::Engine _engine;
};

}  // namespace

std::unique_ptr<ExperimentTarget> start_embedded_target(const ExperimentPlan& plan, engine::LogSink log,
                                                        std::string& error) {
  auto t = std::make_unique<EmbeddedTarget>(plan.engine_config.value_or(default_experiment_config()));
  error = t->start(std::move(log));
  if (!error.empty()) return nullptr;
  return t;
}

}  // namespace lab
