// Applying a profile (profile_apply.hpp).
#include "data/profile/profile_apply.hpp"

#include <algorithm>

#include "engine/config/config_json.hpp"
#include "engine/rpc/rpc_methods.hpp"

namespace data {

namespace {

using json = nlohmann::json;
using control::ConfigError;

// An engine error's "params.mode" is the profile's "$.threading.mode".
std::vector<ConfigError> rebased(const RpcResult& r, const std::string& section, const std::string& method) {
  std::vector<ConfigError> out;
  for (auto e : r.errors) {
    if (e.path.rfind("params", 0) == 0) e.path = section + e.path.substr(6);
    out.push_back(std::move(e));
  }
  if (out.empty()) out.push_back({section, method + ": " + r.message});
  return out;
}

std::string listener_key(const std::string& traddr, const std::string& port) { return traddr + ":" + port; }

class Applier {
 public:
  Applier(const Profile& p, const RpcCaller& call, ApplyReport& report) : _p(p), _call(call), _report(report) {}

  void run() {
    if (_p.threading && !set("threading.set", control::to_json(*_p.threading), "$.threading")) return finish();
    if (_p.budgets && !set("budgets.set", control::to_json(*_p.budgets), "$.budgets")) return finish();
    if (_p.tcp)
      not_applied("tcp: transport settings take effect when the engine starts (nvmetune serve --config)");
    // Steering is one transaction in the engine: all of the section, or none of it.
    if (_p.steering && !set("steering.apply", to_json(*_p.steering), "$.steering")) return finish();
    if (_p.listeners || _p.subsystems) topology();
    finish();
  }

 private:
  // What is listed here is printed after "not applied: " (app/profile.cpp) and stored in the
  // event's "not_applied": the text names the part and why, never "not applied" again.
  void not_applied(std::string text) { _report.not_applied.push_back(std::move(text)); }

  bool set(const std::string& method, const json& params, const std::string& section) {
    auto r = _call(method, params);
    if (!r.ok) {
      auto errors = rebased(r, section, method);
      _report.errors.insert(_report.errors.end(), errors.begin(), errors.end());
      return false;
    }
    _report.applied.push_back(section.substr(2) + ": " + r.result.dump());
    return true;
  }

  void topology() {
    auto list = _call("subsystems.list", nullptr);
    if (!list.ok) {
      _report.errors.push_back({"$.subsystems", "subsystems.list: " + list.message});
      return;
    }
    if (_p.listeners) listeners(list.result.value("listeners", json::array()));
    if (_p.subsystems) {
      for (size_t i = 0; i < _p.subsystems->size() && _report.ok(); ++i)
        subsystem((*_p.subsystems)[i], "$.subsystems[" + std::to_string(i) + "]", list.result.value("subsystems", json::array()));
    }
  }

  // Listeners cannot be opened live: name the ones the engine lacks. "0" (any free port) in a
  // profile matches whatever port the engine bound on that address.
  void listeners(const json& bound) {
    std::vector<std::string> missing;
    for (const auto& l : *_p.listeners) {
      const bool present = std::any_of(bound.begin(), bound.end(), [&](const json& b) {
        return b.value("traddr", "") == l.traddr && (l.trsvcid == "0" || b.value("trsvcid", "") == l.trsvcid);
      });
      if (!present) missing.push_back(listener_key(l.traddr, l.trsvcid));
    }
    if (missing.empty()) return;
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    not_applied("listeners: " + names + " (listeners change only at start: nvmetune serve --config)");
  }

  void subsystem(const control::SubsystemConfig& s, const std::string& path, const json& existing) {
    auto it = std::find_if(existing.begin(), existing.end(), [&](const json& e) { return e.value("nqn", "") == s.nqn; });
    if (it == existing.end()) {
      auto r = _call("subsystems.add", control::to_json(s));
      if (!r.ok) return append(rebased(r, path, "subsystems.add"));
      _report.applied.push_back("subsystem " + s.nqn + " added (" + std::to_string(s.namespaces.size()) + " namespace(s))");
      return;
    }
    json want = control::to_json(s), have = *it;
    want.erase("namespaces");
    have.erase("namespaces");
    if (want != have)
      not_applied("subsystem " + s.nqn + ": serial, model and hosts: the engine has it with " + have.dump() +
                  " (a subsystem's settings change only at start)");
    const json have_ns = it->value("namespaces", json::array());
    for (size_t j = 0; j < s.namespaces.size() && _report.ok(); ++j)
      namespace_of(s.nqn, s.namespaces[j], path + ".namespaces[" + std::to_string(j) + "]", have_ns);
  }

  void namespace_of(const std::string& nqn, const control::NamespaceConfig& ns, const std::string& path, const json& have) {
    auto it = std::find_if(have.begin(), have.end(), [&](const json& e) { return e.value("nsid", 0u) == ns.nsid; });
    const json want = control::to_json(ns);
    if (it != have.end()) {
      if (*it != want)
        not_applied("subsystem " + nqn + " nsid " + std::to_string(ns.nsid) + ": not replaced: the engine serves " +
                    it->dump() + " (remove it first: nvmetune ctl namespaces.remove)");
      return;
    }
    json params = want;
    params["subnqn"] = nqn;
    auto r = _call("namespaces.add", params);
    if (!r.ok) return append(rebased(r, path, "namespaces.add"));
    _report.applied.push_back("subsystem " + nqn + ": namespace " + std::to_string(ns.nsid) + " added");
  }

  void append(std::vector<ConfigError> errors) {
    _report.errors.insert(_report.errors.end(), errors.begin(), errors.end());
  }

  // The event says what happened, refusals included: plots mark the moment either way.
  void finish() {
    json detail = {{"name", _p.name}, {"ok", _report.ok()}, {"applied", _report.applied}, {"not_applied", _report.not_applied}};
    if (!_report.ok()) detail["errors"] = control::errors_json(_report.errors);
    auto r = _call("events.add", {{"kind", "profile"}, {"detail", std::move(detail)}});
    if (!r.ok) not_applied("event: not recorded: " + r.message);
  }

  const Profile& _p;
  const RpcCaller& _call;
  ApplyReport& _report;
};

RpcResult result_of(const control::RpcOutcome& o) {
  if (!o.error) return {true, o.result, {}, {}};
  RpcResult r{false, nullptr, o.error->message, {}};
  if (o.error->data.is_array())
    for (const auto& e : o.error->data)
      if (e.is_object()) r.errors.push_back({e.value("path", ""), e.value("message", "")});
  return r;
}

}  // namespace

ApplyReport apply_profile(const Profile& p, const RpcCaller& call) {
  ApplyReport report;
  Applier(p, call, report).run();
  return report;
}

RpcCaller engine_caller(engine::Engine& engine) {
  return table_caller(control::make_engine_methods(engine, control::ControlInfo{}));
}

RpcCaller table_caller(control::RpcMethodTable table) {
  auto methods = std::make_shared<const control::RpcMethodTable>(std::move(table));
  return [methods](const std::string& method, const json& params) {
    auto it = methods->find(method);
    if (it == methods->end()) return RpcResult{false, nullptr, "method not found: " + method, {}};
    return result_of(it->second(params));
  };
}

}  // namespace data
