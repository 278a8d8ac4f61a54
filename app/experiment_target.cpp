#include "app/experiment_target.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "engine/control/rpc_client.hpp"
#include "engine/control/config_json.hpp"
#include "engine/control/engine.hpp"
#include "engine/control/json_codec.hpp"

namespace app {

namespace {

using json = nlohmann::json;

constexpr const char* experiment_nqn = "nqn.2026-12.io.nvmetune:experiment";
constexpr uint64_t default_ram_bytes = 512ull << 20;
// Short sampler intervals: a 5 s measurement then spans several whole intervals.
constexpr unsigned embedded_sample_ms = 250;

std::string join_errors(const std::vector<control::ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "; ") + e.path + ": " + e.message;
  return out;
}

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

  std::string start() {
    _engine.set_log_sink([](engine::LogLevel level, std::string_view msg) {
      if (level != engine::LogLevel::info)
        std::fprintf(stderr, "nvmetune experiment: engine: %.*s\n", static_cast<int>(msg.size()), msg.data());
    });
    if (auto errors = _engine.start(); !errors.empty()) return join_errors(errors);
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
    if (auto errors = _engine.set_threading(t); !errors.empty()) return "threading.set refused: " + join_errors(errors);
    if (auto errors = _engine.set_budgets(b); !errors.empty()) return "budgets.set refused: " + join_errors(errors);
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
    return iv;
  }

 private:
  control::Config _cfg;
  engine::Engine _engine;
};

class RemoteTarget final : public ExperimentTarget {
 public:
  std::string open(const ExperimentPlan& plan, const std::string& path) {
    _path = path;
    if (auto err = _rpc.open(path); !err.empty()) return err;
    auto th = call("threading.get", json());
    auto bu = th ? call("budgets.get", json()) : std::nullopt;
    auto subs = bu ? call("subsystems.list", json()) : std::nullopt;
    if (!subs) return _error;
    if (auto errors = control::parse_threading(*th, "threading.get", _threading); !errors.empty())
      return join_errors(errors);
    if (auto errors = control::parse_budgets(*bu, "budgets.get", _budgets); !errors.empty()) return join_errors(errors);
    const json& listeners = (*subs)["listeners"];
    const json& subsystems = (*subs)["subsystems"];
    _target.traddr = plan.traddr;
    std::string port = plan.trsvcid;
    _target.subnqn = plan.subnqn;
    if (_target.traddr.empty() && listeners.is_array() && !listeners.empty())
      _target.traddr = listeners[0].value("traddr", "127.0.0.1");
    if (_target.traddr.empty() || _target.traddr == "0.0.0.0") _target.traddr = "127.0.0.1";
    if (port.empty() && listeners.is_array() && !listeners.empty()) port = listeners[0].value("trsvcid", "4420");
    if (_target.subnqn.empty() && subsystems.is_array() && !subsystems.empty())
      _target.subnqn = subsystems[0].value("nqn", "");
    if (_target.subnqn.empty()) return "the engine serves no subsystem (and the file names no target.subnqn)";
    _target.port = static_cast<uint16_t>(std::stoul(port.empty() ? "4420" : port));
    return {};
  }
  std::string describe() const override {
    return "engine at " + _path + " (" + _target.traddr + ":" + std::to_string(_target.port) + " " + _target.subnqn + ")";
  }
  initiator::Target perf_target() const override { return _target; }
  control::ThreadingConfig base_threading() const override { return _threading; }
  control::BudgetConfig base_budgets() const override { return _budgets; }
  // Whole objects, not the cell's partial ones: the engine merges onto its current value,
  // and every cell must start from the experiment's base instead.
  std::string apply(const control::ThreadingConfig& t, const control::BudgetConfig& b) override {
    if (!call("threading.set", control::to_json(t))) return "threading.set refused: " + _error;
    if (!call("budgets.set", control::to_json(b))) return "budgets.set refused: " + _error;
    return {};
  }
  std::optional<EngineInterval> latest() override {
    auto r = call("stats.get", {{"histograms", true}});
    if (!r || !r->contains("total")) return std::nullopt;
    EngineInterval iv;
    iv.seq = r->value("seq", uint64_t{0});
    iv.end_ns = r->value("time_ns", int64_t{0});
    iv.interval_ns = r->value("interval_ns", uint64_t{0});
    iv.commands = (*r)["total"].value("commands", uint64_t{0});
    for (const auto& w : r->value("workers", json::array())) iv.worker_cpu_ns += w.value("cpu_ns", uint64_t{0});
    if ((*r)["total"].contains("queue_wait")) iv.queue_wait = control::histogram_from_json((*r)["total"]["queue_wait"]);
    return iv;
  }

 private:
  std::optional<json> call(const std::string& method, const json& params) {
    json req = {{"jsonrpc", "2.0"}, {"id", ++_id}, {"method", method}};
    if (!params.is_null()) req["params"] = params;
    std::string error;
    auto resp = _rpc.call(req, error);
    if (!resp) {
      _error = method + ": " + error;
      return std::nullopt;
    }
    if (auto e = resp->find("error"); e != resp->end()) {
      _error = e->value("message", std::string("error"));
      if (e->contains("data") && (*e)["data"].is_array())
        for (const auto& d : (*e)["data"])
          if (d.is_object()) _error += "; " + d.value("path", std::string()) + ": " + d.value("message", std::string());
      return std::nullopt;
    }
    return resp->value("result", json());
  }

  control::RpcClient _rpc;
  std::string _path, _error;
  int _id = 0;
  initiator::Target _target;
  control::ThreadingConfig _threading;
  control::BudgetConfig _budgets;
};

}  // namespace

std::unique_ptr<ExperimentTarget> start_embedded_target(const ExperimentPlan& plan, std::string& error) {
  auto t = std::make_unique<EmbeddedTarget>(plan.engine_config.value_or(default_experiment_config()));
  error = t->start();
  if (!error.empty()) return nullptr;
  return t;
}

std::unique_ptr<ExperimentTarget> connect_remote_target(const ExperimentPlan& plan, const std::string& socket_path,
                                                        std::string& error) {
  auto t = std::make_unique<RemoteTarget>();
  error = t->open(plan, socket_path);
  if (!error.empty()) return nullptr;
  return t;
}

}  // namespace app
