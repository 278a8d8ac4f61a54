// Reading and checking an experiment file (experiment_file.hpp).
#include "lab/experiment/experiment_file.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include "engine/config/config_json.hpp"
#include "engine/control/steering_json.hpp"
#include "engine/json/json_reader.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/system/topology.hpp"

namespace lab {

namespace {

using json = nlohmann::json;

// Stricter than an importer's reader (unknown keys are errors), with ranges in its messages.
class Reader : public control::JsonErrors {
 public:
  using control::JsonErrors::JsonErrors;

  // Unknown keys are errors: a typo must not silently run the default.
  bool object(const json& v, const std::string& path, const std::set<std::string>& keys) {
    if (!v.is_object()) {
      error(path, "expected an object, got " + v.dump());
      return false;
    }
    for (const auto& [k, _] : v.items())
      if (!keys.count(k)) error(path + "." + k, "unknown key \"" + k + "\"");
    return true;
  }
  std::optional<std::string> string(const json& o, const std::string& key, const std::string& path) {
    auto it = o.find(key);
    if (it == o.end()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return it->dump();  // "trsvcid": 4420, "bs": 4096
    error(path + "." + key, "expected a string, got " + it->dump());
    return std::nullopt;
  }
  std::optional<double> number(const json& o, const std::string& key, const std::string& path, double lo, double hi) {
    auto it = o.find(key);
    if (it == o.end()) return std::nullopt;
    if (!it->is_number() || it->get<double>() < lo || it->get<double>() > hi) {
      error(path + "." + key, "expected a number " + fmt(lo) + ".." + fmt(hi) + ", got " + it->dump());
      return std::nullopt;
    }
    return it->get<double>();
  }
  std::optional<unsigned> uint(const json& o, const std::string& key, const std::string& path, unsigned lo, unsigned hi) {
    auto it = o.find(key);
    if (it == o.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
      error(path + "." + key, "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + it->dump());
      return std::nullopt;
    }
    return static_cast<unsigned>(it->get<int64_t>());
  }
  const json* array(const json& o, const std::string& key, const std::string& path, bool required) {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) error(path + "." + key, "required (a non-empty array)");
      return nullptr;
    }
    if (!it->is_array() || it->empty()) {
      error(path + "." + key, "expected a non-empty array, got " + it->dump());
      return nullptr;
    }
    return &*it;
  }
  std::optional<std::vector<unsigned>> cpus(const json& o, const std::string& key, const std::string& path) {
    auto s = string(o, key, path);
    if (!s) return std::nullopt;
    auto list = sys::parse_cpu_list(*s);
    if (!list.error.empty() || list.cpus.empty()) {
      error(path + "." + key, "malformed CPU list \"" + *s + "\" (e.g. \"0\" or \"2-3,6\")");
      return std::nullopt;
    }
    return std::move(list.cpus);
  }

 private:
  static std::string fmt(double d) {
    std::ostringstream o;
    o << d;
    return o.str();
  }
};

void read_engine(Reader& r, const json& v, const std::string& base_dir, ExperimentPlan& plan,
                 std::vector<control::ConfigError>& errors) {
  const std::string path = "$.engine";
  if (!r.object(v, path, {"config", "config_file"})) return;
  std::string text, prefix;
  if (v.contains("config") && v.contains("config_file")) return r.error(path, "give \"config\" or \"config_file\", not both");
  if (v.contains("config")) {
    text = v["config"].dump();
    prefix = path + ".config";
  } else if (auto f = r.string(v, "config_file", path)) {
    const std::string file = !f->empty() && (*f)[0] == '/' ? *f : base_dir + "/" + *f;
    std::ifstream in(file);
    if (!in) return r.error(path + ".config_file", "cannot read " + file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    prefix = file + ": $";
  } else {
    return;  // {}: the default engine
  }
  auto parsed = control::parse_config(text);
  for (auto& e : parsed.errors) errors.push_back({prefix + e.path.substr(1), e.message});
  if (parsed.errors.empty()) plan.engine_config = std::move(parsed.config);
}

void read_target(Reader& r, const json& v, ExperimentPlan& plan) {
  const std::string path = "$.target";
  if (!r.object(v, path, {"traddr", "trsvcid", "subnqn"})) return;
  if (auto s = r.string(v, "traddr", path)) plan.traddr = *s;
  if (auto s = r.string(v, "trsvcid", path)) plan.trsvcid = *s;
  if (auto s = r.string(v, "subnqn", path)) plan.subnqn = *s;
}

void read_setting(Reader& r, const json& v, const std::string& path, size_t i, ExperimentPlan& plan,
                  std::vector<control::ConfigError>& errors) {
  ExperimentSetting s;
  s.name = "setting" + std::to_string(i + 1);
  if (!r.object(v, path, {"name", "threading", "budgets", "steering"})) return;
  if (auto n = r.string(v, "name", path)) s.name = *n;
  if (v.contains("threading")) {
    s.threading = v["threading"];
    control::ThreadingConfig t;  // shape and values checked now; merged at run time
    for (auto& e : control::parse_threading(s.threading, path + ".threading", t)) errors.push_back(e);
  }
  if (v.contains("budgets")) {
    s.budgets = v["budgets"];
    control::BudgetConfig b;
    for (auto& e : control::parse_budgets(s.budgets, path + ".budgets", b)) errors.push_back(e);
  }
  if (v.contains("steering")) {
    s.steering = v["steering"];
    sys::SteeringRequest req;  // devices, queues and CPUs are the engine's to judge
    for (auto& e : control::parse_steering_request(s.steering, path + ".steering", req)) errors.push_back(e);
  }
  plan.settings.push_back(std::move(s));
}

void read_workload(Reader& r, const json& v, const std::string& path, size_t i, const ExperimentPlan&,
                   double ramp, double time, std::vector<ExperimentWorkload>& out) {
  ExperimentWorkload w;
  if (!r.object(v, path, {"name", "rw", "bs", "qd", "queues", "threads", "rwmixread", "time", "ramp", "digest", "nsid"}))
    return;
  PerfOptions& p = w.perf;
  p.ramp_s = ramp;
  p.time_s = time;
  if (auto s = r.string(v, "rw", path)) p.rw = *s;
  if (auto s = r.string(v, "bs", path)) p.bs = *s;
  if (auto n = r.uint(v, "qd", path, 1, 4096)) p.qd = *n;
  if (auto n = r.uint(v, "queues", path, 1, 1024)) p.queues = *n;
  if (auto n = r.uint(v, "threads", path, 1, 1024)) p.threads = *n;
  if (auto n = r.uint(v, "rwmixread", path, 0, 100)) p.rwmixread = *n;
  if (auto n = r.number(v, "time", path, 0.1, 86400)) p.time_s = *n;
  if (auto n = r.number(v, "ramp", path, 0, 86400)) p.ramp_s = *n;
  if (auto s = r.string(v, "digest", path)) p.digest = *s;
  if (auto n = r.uint(v, "nsid", path, 1, 0xfffffffeu)) p.nsid = *n;
  w.name = p.rw + "-" + p.bs + "-qd" + std::to_string(p.qd);
  if (auto n = r.string(v, "name", path)) w.name = *n;
  // The perf option rules, with a placeholder target (the real one is known at run time).
  p.remote = "trtype:tcp traddr:127.0.0.1 subnqn:nqn.2026-12.io.nvmetune:check";
  initiator::LoadSpec spec;
  if (auto err = resolve_perf_options(p, spec)) r.error(path, *err);
  (void)i;
  out.push_back(std::move(w));
}

void read_contention(Reader& r, const json& v, const std::string& path, std::vector<ExperimentContention>& out) {
  ExperimentContention c;
  if (!r.object(v, path, {"name", "load", "cpus", "period_ms"})) return;
  if (auto n = r.uint(v, "load", path, 0, 100)) c.load_pct = *n;
  if (auto n = r.uint(v, "period_ms", path, 1, 10000)) c.period_us = *n * 1000;
  if (v.contains("cpus") && !(v["cpus"].is_string() && v["cpus"] == "target")) {
    if (auto cpus = r.cpus(v, "cpus", path)) {
      c.cpus = *cpus;
      c.on_target = false;
    }
  }
  c.name = c.load_pct == 0 ? "none" : std::to_string(c.load_pct) + "% on " + (c.on_target ? "target" : sys::format_cpu_list(c.cpus));
  if (auto n = r.string(v, "name", path)) c.name = *n;
  out.push_back(std::move(c));
}

}  // namespace

std::string errors_text(const std::vector<control::ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "; ") + e.path + ": " + e.message;
  return out;
}

ExperimentParse parse_experiment(const std::string& text, const std::string& base_dir) {
  ExperimentParse out;
  auto& plan = out.plan;
  auto& errors = out.errors;
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    errors.push_back({"$", "not valid JSON"});
    return out;
  }
  Reader r(errors);
  if (!r.object(doc, "$", {"name", "description", "engine", "socket", "target", "initiator_cpus", "settle", "ramp",
                           "time", "rounds", "settings", "workloads", "contention"}))
    return out;
  if (auto s = r.string(doc, "name", "$")) plan.name = *s;
  if (doc.contains("engine")) read_engine(r, doc["engine"], base_dir, plan, errors);
  if (auto s = r.string(doc, "socket", "$")) plan.socket = *s;
  if (doc.contains("target")) read_target(r, doc["target"], plan);
  if (doc.contains("initiator_cpus")) {
    const json& ic = doc["initiator_cpus"];
    if (ic == "auto") {
      plan.initiator_auto = true;
    } else if (ic == "none") {
      plan.initiator_auto = false;
    } else if (auto cpus = r.cpus(doc, "initiator_cpus", "$")) {
      plan.initiator_auto = false;
      plan.initiator_cpus = *cpus;
    }
  }
  if (auto n = r.number(doc, "settle", "$", 0, 60)) plan.settle_s = *n;
  if (auto n = r.uint(doc, "rounds", "$", experiment_rounds_min, experiment_rounds_max)) plan.rounds = *n;
  const double ramp = r.number(doc, "ramp", "$", 0, 86400).value_or(1);
  const double time = r.number(doc, "time", "$", 0.1, 86400).value_or(5);
  if (const json* a = r.array(doc, "settings", "$", true))
    for (size_t i = 0; i < a->size(); ++i) read_setting(r, (*a)[i], "$.settings[" + std::to_string(i) + "]", i, plan, errors);
  if (const json* a = r.array(doc, "workloads", "$", true))
    for (size_t i = 0; i < a->size(); ++i)
      read_workload(r, (*a)[i], "$.workloads[" + std::to_string(i) + "]", i, plan, ramp, time, plan.workloads);
  if (const json* a = r.array(doc, "contention", "$", false)) {
    for (size_t i = 0; i < a->size(); ++i)
      read_contention(r, (*a)[i], "$.contention[" + std::to_string(i) + "]", plan.contention);
  } else {
    plan.contention.push_back({"none", 0, true, {}, 10'000});
  }
  return out;
}

}  // namespace lab
