// The engine's control-socket methods (rpc_methods.hpp). Each is: read and validate params
// (every bad field reported), check against the engine's current state, apply, answer with the
// state after the change.
#include "engine/rpc/rpc_methods.hpp"

#include <unistd.h>

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "engine/config/config_json.hpp"
#include "engine/config/settings_schema.hpp"
#include "engine/rpc/json_codec.hpp"
#include "engine/control/steering_json.hpp"

namespace control {

namespace {

using json = nlohmann::json;

constexpr uint64_t events_max_default = 1000;
constexpr uint64_t events_max_limit = 10'000;
constexpr const char* params_path = "params";
constexpr size_t event_kind_max = 64;
constexpr size_t event_detail_max = 64 * 1024;
// events.get stops before its details pass this (the next call goes on from last_seq): 10,000
// events of 64 KiB would otherwise be a 640 MiB response.
constexpr size_t events_bytes_max = size_t{16} << 20;
// Kinds the engine records itself: a client may not forge them (plots trust them).
constexpr std::string_view engine_event_kinds[] = {"start", "threading", "budgets", "namespace_add",
                                                   "namespace_remove", "connect", "disconnect", "steering"};

std::string key_path(std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  return plain ? std::string(params_path) + "." + std::string(key)
               : std::string(params_path) + "[" + json(std::string(key)).dump() + "]";
}

// Named params of the small methods: an object (or nothing), only known keys, typed values.
class Params {
 public:
  Params(const json& params, std::initializer_list<std::string_view> keys) {
    if (params.is_null() || (params.is_array() && params.empty())) return;
    if (!params.is_object()) {
      error(params_path, std::string("expected an object of named parameters, got ") + params.type_name());
      _shape_ok = false;
      return;
    }
    _obj = params;
    for (const auto& [key, value] : params.items()) {
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      std::string expected;
      for (auto k : keys) expected += (expected.empty() ? "" : ", ") + std::string(k);
      error(key_path(key), "unknown parameter " + json(key).dump() +
                               (expected.empty() ? " (this method takes none)" : " (expected: " + expected + ")"));
    }
  }

  std::optional<uint64_t> u64(std::string_view key, uint64_t lo, uint64_t hi) {
    auto it = _obj.find(key);
    if (it == _obj.end()) return std::nullopt;
    const bool ok = it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0);
    const uint64_t v = ok ? it->get<uint64_t>() : 0;
    if (!ok || v < lo || v > hi) {
      error(key_path(key), "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + it->dump());
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> boolean(std::string_view key) {
    auto it = _obj.find(key);
    if (it == _obj.end()) return std::nullopt;
    if (!it->is_boolean()) return error(key_path(key), "expected true or false, got " + it->dump()), std::nullopt;
    return it->get<bool>();
  }

  std::optional<std::string> string(std::string_view key, bool required) {
    auto it = _obj.find(key);
    if (it == _obj.end()) {
      if (required && _shape_ok) error(key_path(key), "missing required parameter");
      return std::nullopt;
    }
    if (!it->is_string()) return error(key_path(key), "expected a string, got " + it->dump()), std::nullopt;
    return it->get<std::string>();
  }

  void require(std::string_view key) {
    if (_shape_ok && !_obj.contains(key)) error(key_path(key), "missing required parameter");
  }
  void error(std::string path, std::string message) { _errors.push_back({std::move(path), std::move(message)}); }
  std::vector<ConfigError>& errors() { return _errors; }

 private:
  json _obj = json::object();
  bool _shape_ok = true;  // params is an object (or absent): a missing key is worth reporting
  std::vector<ConfigError> _errors;
};

// An engine error's path as the request named it: "$.threading.mode" -> "params.mode" (for
// prefix "$.threading"), a bare "nsid" -> "params.nsid".
std::string rebase(const std::string& path, std::string_view prefix) {
  if (!prefix.empty() && path.compare(0, prefix.size(), prefix) == 0) return params_path + path.substr(prefix.size());
  if (path.empty() || path[0] == '$' || path.compare(0, 6, params_path) == 0) return path.empty() ? params_path : path;
  return key_path(path);
}

std::vector<ConfigError> rebased(std::vector<ConfigError> errors, std::string_view prefix) {
  for (auto& e : errors) e.path = rebase(e.path, prefix);
  return errors;
}

const SubsystemConfig* find_subsystem(const Config& cfg, std::string_view nqn) {
  for (const auto& s : cfg.subsystems)
    if (s.nqn == nqn) return &s;
  return nullptr;
}

std::string subsystem_names(const Config& cfg) {
  std::string names;
  for (const auto& s : cfg.subsystems) names += (names.empty() ? "" : ", ") + s.nqn;
  return names.empty() ? "none" : names;
}

json listeners_json(const engine::Engine& engine) {
  json out = json::array();
  for (const auto& l : engine.listeners())
    out.push_back({{"trtype", l.trtype}, {"traddr", l.traddr}, {"trsvcid", std::to_string(l.port)}});
  return out;
}

// ---------------------------------------------------------------- methods

class Methods {
 public:
  Methods(engine::Engine& engine, ControlInfo info) : _engine(engine), _info(std::move(info)) {}

  RpcOutcome info(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    const auto s = _engine.stats();
    const auto uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - _info.started).count();
    return RpcOutcome::ok({{"version", _info.version},
                           {"pid", getpid()},
                           {"uptime_s", static_cast<uint64_t>(uptime)},
                           {"running", _engine.running()},
                           {"mode", _engine.threading().mode},
                           {"control_socket", _info.socket_path},
                           {"listeners", listeners_json(_engine)},
                           {"counters",
                            {{"commands", s.commands},
                             {"read_bytes", s.read_bytes},
                             {"write_bytes", s.write_bytes},
                             {"pdus_rx", s.pdus_rx},
                             {"pdus_tx", s.pdus_tx},
                             {"connects", s.connects},
                             {"disconnects", s.disconnects},
                             {"protocol_errors", s.protocol_errors},
                             {"queues", s.queues},
                             {"controllers", s.controllers}}}});
  }

  RpcOutcome threading_get(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    return RpcOutcome::ok(to_json(_engine.threading()));
  }

  // Partial objects merge onto the current value; the merged whole is validated, then applied.
  RpcOutcome threading_set(const json& params) {
    const ThreadingConfig current = _engine.threading();
    ThreadingConfig next = current;
    if (auto errors = parse_threading(params, params_path, next); !errors.empty()) return invalid_params(errors);
    if (to_json(next) == to_json(current)) return RpcOutcome::ok(to_json(current));
    if (auto errors = _engine.set_threading(next); !errors.empty())
      return engine_refused("the engine refused the threading change", rebased(std::move(errors), "$.threading"));
    return RpcOutcome::ok(to_json(_engine.threading()));
  }

  RpcOutcome budgets_get(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    return RpcOutcome::ok(to_json(_engine.budgets()));
  }

  RpcOutcome budgets_set(const json& params) {
    const BudgetConfig current = _engine.budgets();
    BudgetConfig next = current;
    if (auto errors = parse_budgets(params, params_path, next); !errors.empty()) return invalid_params(errors);
    if (to_json(next) == to_json(current)) return RpcOutcome::ok(to_json(current));
    if (auto errors = _engine.set_budgets(next); !errors.empty())
      return engine_refused("the engine refused the budgets change", rebased(std::move(errors), "$.budgets"));
    return RpcOutcome::ok(to_json(_engine.budgets()));
  }

  RpcOutcome subsystems_list(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    json subsystems = json::array();
    for (const auto& s : _engine.config().subsystems) subsystems.push_back(to_json(s));
    return RpcOutcome::ok({{"subsystems", std::move(subsystems)}, {"listeners", listeners_json(_engine)}});
  }

  // params: one subsystem object, exactly as in the configuration's "subsystems" array.
  RpcOutcome subsystems_add(const json& params) {
    SubsystemConfig s;
    auto errors = parse_subsystem(params, params_path, s);
    if (errors.empty() && find_subsystem(_engine.config(), s.nqn))
      errors.push_back({key_path("nqn"), "subsystem " + json(s.nqn).dump() + " already exists"});
    if (!errors.empty()) return invalid_params(errors);
    if (auto e = _engine.add_subsystem(s)) return engine_refused("the engine refused the new subsystem", rebased({*e}, "$.subsystems[0]"));
    return RpcOutcome::ok(to_json(s));
  }

  // params: {"subnqn": NQN} plus one namespace object's keys (as in "namespaces[]").
  RpcOutcome namespaces_add(const json& params) {
    if (!params.is_object())
      return invalid_params({{params_path, std::string("expected an object (subnqn and the namespace's keys), got ") +
                                               params.type_name()}});
    json ns_params = params;
    ns_params.erase("subnqn");
    NamespaceConfig ns;
    auto errors = parse_namespace(ns_params, params_path, ns);
    std::optional<std::string> subnqn;
    if (auto it = params.find("subnqn"); it == params.end())
      errors.push_back({key_path("subnqn"), "missing required parameter (the subsystem's NQN)"});
    else if (!it->is_string())
      errors.push_back({key_path("subnqn"), "expected a string, got " + it->dump()});
    else
      subnqn = it->get<std::string>();
    const Config cfg = _engine.config();
    const SubsystemConfig* sub = subnqn ? find_subsystem(cfg, *subnqn) : nullptr;
    if (subnqn && !sub)
      errors.push_back({key_path("subnqn"), "no subsystem " + json(*subnqn).dump() + " (subsystems: " + subsystem_names(cfg) + ")"});
    if (sub && errors.empty() &&
        std::any_of(sub->namespaces.begin(), sub->namespaces.end(), [&](const NamespaceConfig& n) { return n.nsid == ns.nsid; }))
      errors.push_back({key_path("nsid"), "nsid " + std::to_string(ns.nsid) + " is in use in " + *subnqn});
    if (!errors.empty()) return invalid_params(errors);
    if (auto e = _engine.add_namespace(*subnqn, ns)) return engine_refused("the engine refused the namespace", rebased({*e}, ""));
    return RpcOutcome::ok({{"subnqn", *subnqn}, {"namespace", to_json(ns)}});
  }

  RpcOutcome namespaces_remove(const json& params) {
    Params p(params, {"subnqn", "nsid"});
    auto subnqn = p.string("subnqn", true);
    auto nsid = p.u64("nsid", 1, 1024);
    p.require("nsid");
    if (subnqn && !find_subsystem(_engine.config(), *subnqn))
      p.error(key_path("subnqn"), "no subsystem " + json(*subnqn).dump() + " (subsystems: " + subsystem_names(_engine.config()) + ")");
    if (!p.errors().empty()) return invalid_params(p.errors());
    if (auto e = _engine.remove_namespace(*subnqn, static_cast<uint32_t>(*nsid)))
      return engine_refused("the engine refused to remove the namespace", rebased({*e}, ""));
    return RpcOutcome::ok({{"subnqn", *subnqn}, {"nsid", *nsid}, {"removed", true}});
  }

  RpcOutcome stats_get(const json& params) {
    Params p(params, {"histograms"});
    const bool buckets = p.boolean("histograms").value_or(false);
    if (!p.errors().empty()) return invalid_params(p.errors());
    return RpcOutcome::ok(snapshot_json(_engine.last_snapshot(), buckets));
  }

  RpcOutcome events_get(const json& params) {
    Params p(params, {"after", "max"});
    const uint64_t after = p.u64("after", 0, UINT64_MAX).value_or(0);
    const uint64_t max = p.u64("max", 1, events_max_limit).value_or(events_max_default);
    if (!p.errors().empty()) return invalid_params(p.errors());
    json events = json::array();
    uint64_t last = after;
    size_t bytes = 0;
    for (const auto& e : _engine.events(after, static_cast<size_t>(max))) {
      bytes += e.detail_json.size();
      if (bytes > events_bytes_max && !events.empty()) break;
      events.push_back(event_json(e));
      last = std::max(last, e.seq);
    }
    return RpcOutcome::ok({{"events", std::move(events)}, {"last_seq", last}});
  }

  // params: {"kind": "profile", "detail": {...}}; recorded as an event of the engine's log.
  RpcOutcome events_add(const json& params) {
    Params p(params, {"kind", "detail"});
    auto kind = p.string("kind", true);
    if (kind) {
      const bool well_formed = !kind->empty() && kind->size() <= event_kind_max && (*kind)[0] >= 'a' &&
                               (*kind)[0] <= 'z' && std::all_of(kind->begin(), kind->end(), [](char c) {
                                 return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
                               });
      if (!well_formed)
        p.error(key_path("kind"), "expected a lowercase name of at most 64 characters ([a-z][a-z0-9_.]*), got " + json(*kind).dump());
      else if (std::find(std::begin(engine_event_kinds), std::end(engine_event_kinds), *kind) != std::end(engine_event_kinds))
        p.error(key_path("kind"), "kind " + json(*kind).dump() + " is recorded by the engine itself");
    }
    json detail = json::object();
    if (params.is_object() && params.contains("detail")) {
      detail = params["detail"];
      if (!detail.is_object()) p.error(key_path("detail"), "expected a JSON object, got " + detail.dump());
      else if (detail.dump().size() > event_detail_max) p.error(key_path("detail"), "larger than 64 KiB");
    }
    if (!p.errors().empty()) return invalid_params(p.errors());
    return RpcOutcome::ok(event_json(_engine.record_event(*kind, detail.dump())));
  }

  RpcOutcome threads_get(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    json threads = json::array();
    for (const auto& t : _engine.threads()) threads.push_back(thread_json(t));
    return RpcOutcome::ok({{"threads", std::move(threads)}});
  }

  // The tuning settings' description (settings_schema.hpp): what a front end builds forms from.
  RpcOutcome settings_schema(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    return RpcOutcome::ok(settings_schema_json());
  }

  // params: {"all": bool}: discovery of the listeners' interfaces (or all), and what the engine changed.
  RpcOutcome steering_get(const json& params) {
    Params p(params, {"all"});
    const bool all = p.boolean("all").value_or(false);
    if (!p.errors().empty()) return invalid_params(p.errors());
    auto s = _engine.steering(all);
    json out = to_json(s.view);
    out["saved"] = saved_json(s.saved);
    out["active"] = to_json(s.active);
    out["root"] = s.root;
    out["state_file"] = s.state_file;
    out["blocked"] = s.blocked;
    return RpcOutcome::ok(std::move(out));
  }

  // params: a steering request (steering_json.hpp); the dry run: rows with old and new values.
  RpcOutcome steering_plan(const json& params) {
    sys::SteeringRequest req;
    if (auto errors = parse_steering_request(params, params_path, req); !errors.empty()) return invalid_params(errors);
    const auto plan = _engine.plan_steering(req);
    if (!plan.ok()) return invalid_params(plan_errors(plan, params_path));
    return RpcOutcome::ok({{"rows", rows_json(plan.rows)}, {"changes", plan.changes()}});
  }

  RpcOutcome steering_apply(const json& params) {
    sys::SteeringRequest req;
    if (auto errors = parse_steering_request(params, params_path, req); !errors.empty()) return invalid_params(errors);
    const auto out = _engine.apply_steering(req);
    if (!out.plan.ok()) return invalid_params(plan_errors(out.plan, params_path));
    if (!out.result.ok()) return engine_refused("steering not applied (nothing changed)", txn_errors(out.result));
    return RpcOutcome::ok({{"rows", rows_json(out.plan.rows)}, {"changes", out.result.done.size()}});
  }

  RpcOutcome steering_revert(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    const auto r = _engine.revert_steering();
    if (!r.ok()) return engine_refused("steering revert incomplete", txn_errors(r));
    return RpcOutcome::ok({{"restored", saved_json(r.done)}});
  }

  RpcOutcome topology_get(const json& params) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    return RpcOutcome::ok(topology_json(sys::Topology::host()));
  }

  // A transport's settings as the configuration encodes them: read only, they apply at start.
  template <class Section>
  RpcOutcome transport_get(const json& params, const Section& section) {
    Params p(params, {});
    if (!p.errors().empty()) return invalid_params(p.errors());
    return RpcOutcome::ok(to_json(section));
  }

  RpcOutcome tcp_get(const json& params) { return transport_get(params, _engine.config().tcp); }
  RpcOutcome rdma_get(const json& params) { return transport_get(params, _engine.config().rdma); }

 private:
  engine::Engine& _engine;
  ControlInfo _info;
};

}  // namespace

json errors_json(const std::vector<ConfigError>& errors) {
  json out = json::array();
  for (const auto& e : errors) out.push_back({{"path", e.path}, {"message", e.message}});
  return out;
}

RpcOutcome invalid_params(const std::vector<ConfigError>& errors) {
  std::string message = "invalid params";
  if (!errors.empty()) message += ": " + errors.front().path + ": " + errors.front().message;
  if (errors.size() > 1) message += " (and " + std::to_string(errors.size() - 1) + " more)";
  return RpcOutcome::fail(rpc_code::invalid_params, std::move(message), errors_json(errors));
}

RpcOutcome engine_refused(const std::string& what, const std::vector<ConfigError>& errors) {
  std::string message = what;
  if (!errors.empty()) message += ": " + errors.front().path + ": " + errors.front().message;
  if (errors.size() > 1) message += " (and " + std::to_string(errors.size() - 1) + " more)";
  return RpcOutcome::fail(rpc_code::engine_refused, std::move(message), errors_json(errors));
}

RpcNames concurrent_engine_methods() {
  return {"engine.info", "threading.get", "budgets.get", "subsystems.list", "stats.get", "events.get", "events.add",
          "threads.get", "settings.schema", "topology.get", "tcp.get", "rdma.get"};
}

RpcMethodTable make_engine_methods(engine::Engine& engine, ControlInfo info) {
  auto m = std::make_shared<Methods>(engine, std::move(info));
  using Fn = RpcOutcome (Methods::*)(const json&);
  const std::pair<const char*, Fn> table[] = {
      {"engine.info", &Methods::info},
      {"threading.get", &Methods::threading_get},
      {"threading.set", &Methods::threading_set},
      {"budgets.get", &Methods::budgets_get},
      {"budgets.set", &Methods::budgets_set},
      {"subsystems.list", &Methods::subsystems_list},
      {"subsystems.add", &Methods::subsystems_add},
      {"namespaces.add", &Methods::namespaces_add},
      {"namespaces.remove", &Methods::namespaces_remove},
      {"stats.get", &Methods::stats_get},
      {"events.get", &Methods::events_get},
      {"events.add", &Methods::events_add},
      {"threads.get", &Methods::threads_get},
      {"settings.schema", &Methods::settings_schema},
      {"steering.get", &Methods::steering_get},
      {"steering.plan", &Methods::steering_plan},
      {"steering.apply", &Methods::steering_apply},
      {"steering.revert", &Methods::steering_revert},
      {"topology.get", &Methods::topology_get},
      {"tcp.get", &Methods::tcp_get},
      {"rdma.get", &Methods::rdma_get},
  };
  RpcMethodTable methods;
  for (const auto& [name, fn] : table) methods[name] = [m, fn = fn](const json& params) { return ((*m).*fn)(params); };
  return methods;
}

}  // namespace control
