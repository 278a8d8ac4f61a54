#include "probes/probe_rpc.hpp"

#include "engine/rpc/rpc_methods.hpp"
#include "probes/probe_catalog.hpp"

namespace probes {

namespace {

using json = nlohmann::json;

json status_json(const ProbeStatus& s) {
  return {{"name", s.name},     {"summary", s.summary}, {"available", s.available},
          {"reason", s.reason}, {"running", s.running}, {"filter", s.filter}};
}

// {name, filter?}: the name of a known probe and an optional string; every bad field reported.
std::vector<control::ConfigError> read_params(const json& params, bool filter_allowed, std::string& name,
                                              std::string& filter) {
  std::vector<control::ConfigError> errors;
  if (!params.is_object()) return {{"params", "expected an object {\"name\": PROBE}"}};
  for (const auto& [key, value] : params.items()) {
    if (key == "name") {
      if (!value.is_string()) errors.push_back({"params.name", "expected a string, got " + value.dump()});
      else name = value.get<std::string>();
    } else if (key == "filter" && filter_allowed) {
      if (!value.is_string()) errors.push_back({"params.filter", "expected a string, got " + value.dump()});
      else filter = value.get<std::string>();
    } else {
      errors.push_back({"params." + key, "unknown parameter (expected: name" +
                                             std::string(filter_allowed ? ", filter)" : ")")});
    }
  }
  if (!params.contains("name")) errors.push_back({"params.name", "missing required parameter"});
  else if (params["name"].is_string() && find_probe_kind(name) == nullptr)
    errors.push_back({"params.name", "unknown probe \"" + name + "\" (probes: " + probe_names() + ")"});
  return errors;
}

// The files and block devices behind the engine's namespaces, as configured now (namespaces
// come and go live).
std::vector<std::string> backing_paths(const engine::Engine& engine) {
  std::vector<std::string> out;
  for (const auto& s : engine.config().subsystems)
    for (const auto& ns : s.namespaces)
      if (!ns.backend.path.empty()) out.push_back(ns.backend.path);
  return out;
}

}  // namespace

void add_probe_methods(control::RpcMethodTable& table, ProbeSet& probes, engine::Engine& engine) {
  probes.set_backing_paths([&engine] { return backing_paths(engine); });
  table["probes.list"] = [&probes](const json&) {
    json out = json::array();
    for (const auto& s : probes.list()) out.push_back(status_json(s));
    return control::RpcOutcome::ok({{"probes", std::move(out)}});
  };
  table["probes.start"] = [&probes, &engine](const json& params) {
    std::string name, filter;
    if (auto errors = read_params(params, true, name, filter); !errors.empty()) return control::invalid_params(errors);
    if (std::string error = probes.start(name, filter); !error.empty())
      return control::engine_refused("probe " + name + " not started", {{"params.name", error}});
    engine.record_event("probe_start", json{{"probe", name}, {"filter", filter}}.dump());
    return control::RpcOutcome::ok({{"name", name}, {"running", true}, {"filter", filter}});
  };
  table["probes.stop"] = [&probes, &engine](const json& params) {
    std::string name, filter;
    if (auto errors = read_params(params, false, name, filter); !errors.empty()) return control::invalid_params(errors);
    probes.stop(name);
    engine.record_event("probe_stop", json{{"probe", name}}.dump());
    return control::RpcOutcome::ok({{"name", name}, {"running", false}});
  };
}

}  // namespace probes
