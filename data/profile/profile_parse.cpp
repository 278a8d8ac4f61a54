// Profile validation (profile.hpp). The configuration sections go through engine/control's own
// parser as one sub-document, so a profile's "threading.cpumask" is judged (and worded) exactly
// as a configuration file's; this file checks only what is a profile's own: the schema version,
// name, description and steering.
#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "data/profile/profile.hpp"
#include "engine/system/topology.hpp"
#include "engine/config/config_json.hpp"

namespace data {

namespace {

using json = nlohmann::json;
using control::ConfigError;

constexpr std::string_view profile_keys[] = {"schema",   "name",      "description", "threading",  "budgets",
                                             "tcp",      "steering",  "listeners",   "subsystems"};
// The keys parse_config_document judges; they share the configuration's paths ($.threading...).
constexpr std::string_view config_keys[] = {"listeners", "subsystems", "tcp", "threading", "budgets"};
constexpr std::string_view steering_keys[] = {"irq", "rps", "xps"};
constexpr std::string_view irq_keys[] = {"irq", "device", "queue", "cpus"};
constexpr std::string_view queue_keys[] = {"device", "queue", "cpus"};
constexpr std::string_view schema_prefix = "nvmetune.profile/";
constexpr size_t description_max = 4096;
constexpr size_t ifname_max = 15;       // IFNAMSIZ - 1
constexpr uint64_t irq_number_max = 65535;
constexpr uint64_t queue_index_max = 65535;

class Checker {
 public:
  explicit Checker(std::vector<ConfigError>& errors) : _errors(errors), _online(sys::online_cpus()) {}

  void error(std::string path, std::string message) { _errors.push_back({std::move(path), std::move(message)}); }

  bool object(const json& v, const std::string& path, std::span<const std::string_view> allowed) {
    if (!v.is_object()) return error(path, std::string("expected an object, got ") + v.type_name()), false;
    for (const auto& [key, value] : v.items())
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        error(path + "." + key, control::unknown_key_message(key, allowed));
    return true;
  }

  std::optional<std::string> string(const json& obj, std::string_view key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    if (!it->is_string()) return type_error(path + "." + std::string(key), "a string", *it);
    return it->get<std::string>();
  }

  std::optional<unsigned> number(const json& obj, std::string_view key, const std::string& path, uint64_t max) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    const auto p = path + "." + std::string(key);
    const bool integral = it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0);
    if (!integral) return type_error(p, "a non-negative integer", *it);
    if (it->get<uint64_t>() > max)
      return error(p, "out of range: " + it->dump() + " (expected 0.." + std::to_string(max) + ")"), std::nullopt;
    return static_cast<unsigned>(it->get<uint64_t>());
  }

  // Required: a CPU mask by the rules of threading.cpumask, every CPU online here.
  std::vector<unsigned> cpus(const json& obj, const std::string& path) {
    if (!obj.contains("cpus")) return error(path + ".cpus", "missing required key"), std::vector<unsigned>{};
    auto text = string(obj, "cpus", path);
    if (!text) return {};
    auto mask = control::parse_cpu_mask(*text);
    if (mask.problem) error(path + ".cpus", *mask.problem);
    else if (auto problem = control::offline_problem(mask.cpus, _online)) error(path + ".cpus", *problem);
    return std::move(mask.cpus);
  }

  std::string device(const json& obj, const std::string& path) {
    auto name = string(obj, "device", path);
    if (!name) return {};
    const bool ok = !name->empty() && name->size() <= ifname_max && *name != "." && *name != ".." &&
                    std::none_of(name->begin(), name->end(), [](char c) {
                      return c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) || c < 0x21 || c > 0x7e;
                    });
    if (!ok)
      error(path + ".device", "invalid network device name " + json(*name).dump() +
                                  " (1..15 printable characters, no '/', ':' or space, e.g. \"eth0\")");
    return *name;
  }

 private:
  std::nullopt_t type_error(const std::string& path, std::string_view expected, const json& got) {
    error(path, "wrong type: expected " + std::string(expected) + ", got " + got.type_name() + " " + got.dump());
    return std::nullopt;
  }

  std::vector<ConfigError>& _errors;
  std::vector<unsigned> _online;
};

void check_schema(Checker& c, const json& doc) {
  if (!doc.contains("schema"))
    return c.error("$.schema", "missing required key (expected \"" + std::string(profile_schema) + "\")");
  auto schema = c.string(doc, "schema", "$");
  if (!schema || *schema == profile_schema) return;
  if (schema->starts_with(schema_prefix))
    c.error("$.schema", "unsupported schema version \"" + schema->substr(schema_prefix.size()) + "\" (this build reads \"" +
                            std::string(profile_schema) + "\")");
  else
    c.error("$.schema", "not an nvmetune profile: schema " + json(*schema).dump() + " (expected \"" +
                            std::string(profile_schema) + "\")");
}

IrqSteering read_irq(Checker& c, const json& v, const std::string& p) {
  IrqSteering r;
  if (!c.object(v, p, irq_keys)) return r;
  r.irq = c.number(v, "irq", p, irq_number_max);
  if (v.contains("device")) r.device = c.device(v, p);
  r.queue = c.number(v, "queue", p, queue_index_max);
  const bool by_number = v.contains("irq"), by_device = v.contains("device");
  if (by_number == by_device)
    c.error(p, "name the interrupt either by \"irq\" (its number) or by \"device\" and \"queue\", not " +
                   std::string(by_number ? "both" : "neither"));
  else if (by_number && v.contains("queue"))
    c.error(p + ".queue", "goes with \"device\", not with \"irq\"");
  else if (by_device && !v.contains("queue"))
    c.error(p + ".queue", "missing required key (the device's queue whose interrupt this is)");
  r.cpus = c.cpus(v, p);
  return r;
}

QueueSteering read_queue(Checker& c, const json& v, const std::string& p) {
  QueueSteering r;
  if (!c.object(v, p, queue_keys)) return r;
  if (!v.contains("device")) c.error(p + ".device", "missing required key");
  else r.device = c.device(v, p);
  if (!v.contains("queue")) c.error(p + ".queue", "missing required key");
  else r.queue = c.number(v, "queue", p, queue_index_max).value_or(0);
  r.cpus = c.cpus(v, p);
  return r;
}

// Reads one of the steering arrays with its own reader; reports a second rule for the same
// target (which of the two would win is not obvious to a reader).
template <typename Rule, typename ReadFn, typename KeyFn>
std::vector<Rule> read_rules(Checker& c, const json& s, std::string_view key, ReadFn read, KeyFn key_of) {
  std::vector<Rule> rules;
  auto it = s.find(key);
  if (it == s.end()) return rules;
  const std::string path = "$.steering." + std::string(key);
  if (!it->is_array()) return c.error(path, std::string("expected an array, got ") + it->type_name()), rules;
  std::set<std::string> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    rules.push_back(read(c, (*it)[i], p));
    if (auto k = key_of(rules.back()); !k.empty() && !seen.insert(k).second)
      c.error(p, "a second rule for " + k + " (one rule per target)");
  }
  return rules;
}

SteeringConfig read_steering(Checker& c, const json& s) {
  SteeringConfig out;
  if (!c.object(s, "$.steering", steering_keys)) return out;
  out.irq = read_rules<IrqSteering>(c, s, "irq", read_irq, [](const IrqSteering& r) {
    if (r.irq) return "irq " + std::to_string(*r.irq);
    return r.device.empty() || !r.queue ? std::string() : r.device + " queue " + std::to_string(*r.queue);
  });
  auto queue_key = [](const QueueSteering& r) { return r.device.empty() ? std::string() : r.device + " queue " + std::to_string(r.queue); };
  out.rps = read_rules<QueueSteering>(c, s, "rps", read_queue, queue_key);
  out.xps = read_rules<QueueSteering>(c, s, "xps", read_queue, queue_key);
  return out;
}

// Sends the configuration sections through the configuration's parser (which keeps the
// duplicate-key errors of the whole document, and adds its own) and takes the sections present.
std::vector<ConfigError> read_config_sections(const json& doc, std::vector<ConfigError> syntax_errors, Profile& p) {
  json sub = json::object();
  for (auto key : config_keys)
    if (auto it = doc.find(key); it != doc.end()) sub[std::string(key)] = *it;
  auto parsed = control::parse_config_document(sub, std::move(syntax_errors));
  const auto& cfg = parsed.config;
  if (sub.contains("threading")) p.threading = cfg.threading;
  if (sub.contains("budgets")) p.budgets = cfg.budgets;
  if (sub.contains("tcp")) p.tcp = cfg.tcp;
  if (sub.contains("listeners")) p.listeners = cfg.listeners;
  if (sub.contains("subsystems")) p.subsystems = cfg.subsystems;
  return std::move(parsed.errors);
}

}  // namespace

std::string profile_name_problem(std::string_view name) {
  if (name.empty()) return "empty profile name";
  if (name.size() > profile_name_max) return "profile name longer than " + std::to_string(profile_name_max) + " characters";
  if (name[0] == '.' || name[0] == '-') return "a profile name may not start with '.' or '-'";
  const bool ok = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (!ok) return "invalid profile name " + json(std::string(name)).dump() + " (letters, digits, '.', '_' and '-' only)";
  return {};
}

ProfileParse parse_profile(std::string_view json_text) {
  ProfileParse out;
  auto parsed = control::parse_json_document(json_text);
  if (!parsed.syntax_ok) return {Profile{}, std::move(parsed.errors)};
  const json& doc = parsed.doc;
  if (!doc.is_object()) {
    out.errors.push_back({"$", std::string("expected a profile object {\"schema\": \"") + std::string(profile_schema) +
                                   "\", ...}, got " + doc.type_name()});
    return out;
  }
  out.errors = read_config_sections(doc, std::move(parsed.errors), out.profile);
  Checker c(out.errors);
  for (const auto& [key, value] : doc.items())
    if (std::find(std::begin(profile_keys), std::end(profile_keys), key) == std::end(profile_keys))
      c.error("$." + key, control::unknown_key_message(key, profile_keys));
  check_schema(c, doc);
  if (auto name = c.string(doc, "name", "$")) {
    if (auto problem = profile_name_problem(*name); !problem.empty()) c.error("$.name", problem);
    out.profile.name = *name;
  }
  if (auto text = c.string(doc, "description", "$")) {
    if (text->size() > description_max) c.error("$.description", "longer than 4096 bytes");
    out.profile.description = *text;
  }
  if (auto it = doc.find("steering"); it != doc.end()) out.profile.steering = read_steering(c, *it);
  control::sort_by_path(out.errors);
  return out;
}

}  // namespace data
