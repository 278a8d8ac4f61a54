// An experiment target reached through the control socket's methods (experiment_target.hpp).
#include <nlohmann/json.hpp>

#include "lab/experiment/experiment_target.hpp"
#include "engine/config/config_json.hpp"
#include "engine/rpc/json_codec.hpp"
#include "engine/control/steering_json.hpp"

namespace lab {

using data::RpcCaller;
using data::RpcResult;

namespace {

using json = nlohmann::json;

class RpcTarget final : public ExperimentTarget {
 public:
  RpcTarget(RpcCaller call, std::string where) : _call(std::move(call)), _where(std::move(where)) {}

  std::string open(const ExperimentPlan& plan) {
    auto th = call("threading.get", json());
    auto bu = th ? call("budgets.get", json()) : std::nullopt;
    auto subs = bu ? call("subsystems.list", json()) : std::nullopt;
    if (!subs) return _error;
    if (auto errors = control::parse_threading(*th, "threading.get", _threading); !errors.empty())
      return errors_text(errors);
    if (auto errors = control::parse_budgets(*bu, "budgets.get", _budgets); !errors.empty()) return errors_text(errors);
    return choose_target(plan, (*subs)["listeners"], (*subs)["subsystems"]);
  }
  std::string describe() const override {
    return "engine at " + _where + " (" + _target.traddr + ":" + std::to_string(_target.port) + " " + _target.subnqn + ")";
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
  std::string steer(const json& request) override {
    if (_steered && !call("steering.revert", json::object())) return "steering.revert: " + _error;
    _steered = false;
    if (request.is_null()) return {};
    if (!call("steering.apply", request)) return "steering.apply refused: " + _error;
    _steered = true;
    return {};
  }
  ~RpcTarget() override {
    if (_steered) call("steering.revert", json::object());
  }
  std::optional<EngineInterval> latest() override;

 private:
  // The plan's target where it names one, else the engine's first listener and subsystem.
  std::string choose_target(const ExperimentPlan& plan, const json& listeners, const json& subsystems) {
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

  std::optional<json> call(const std::string& method, const json& params) {
    RpcResult r = _call(method, params);
    if (r.ok) return std::move(r.result);
    if (r.transport_failed) {
      _error = method + ": " + r.message;
      return std::nullopt;
    }
    _error = r.message;
    for (const auto& e : r.errors) _error += "; " + e.path + ": " + e.message;
    return std::nullopt;
  }

  RpcCaller _call;
  bool _steered = false;  // this experiment applied steering on the remote engine
  std::string _where, _error;
  initiator::Target _target;
  control::ThreadingConfig _threading;
  control::BudgetConfig _budgets;
};

std::optional<EngineInterval> RpcTarget::latest() {
  auto r = call("stats.get", {{"histograms", true}});
  if (!r || !r->contains("total")) return std::nullopt;
  EngineInterval iv;
  iv.seq = r->value("seq", uint64_t{0});
  iv.end_ns = r->value("time_ns", int64_t{0});
  iv.interval_ns = r->value("interval_ns", uint64_t{0});
  iv.commands = (*r)["total"].value("commands", uint64_t{0});
  for (const auto& w : r->value("workers", json::array())) iv.worker_cpu_ns += w.value("cpu_ns", uint64_t{0});
  const json& total = (*r)["total"];
  if (total.contains("queue_wait")) iv.queue_wait = control::histogram_from_json(total["queue_wait"]);
  // An engine from before the target latency has none: its figures stay 0 ("-").
  for (const char* key : {"target_read_latency", "target_write_latency"})
    if (total.contains(key)) iv.target_latency.merge(control::histogram_from_json(total[key]));
  return iv;
}

}  // namespace

std::unique_ptr<ExperimentTarget> connect_rpc_target(const ExperimentPlan& plan, RpcCaller call, std::string where,
                                                     std::string& error) {
  auto t = std::make_unique<RpcTarget>(std::move(call), std::move(where));
  error = t->open(plan);
  if (!error.empty()) return nullptr;
  return t;
}

}  // namespace lab
