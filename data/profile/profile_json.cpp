// Profile encoding (profile.hpp): the canonical document, built from engine/control's encoders
// so a profile's sections read exactly like a configuration file's.
#include <nlohmann/json.hpp>

#include "data/profile/profile.hpp"
#include "engine/system/topology.hpp"
#include "engine/config/config_json.hpp"

namespace data {

namespace {

using json = nlohmann::json;

// The order a reader wants in a file: what it is first, then tuning, then topology.
constexpr std::string_view text_order[] = {"schema",   "name",      "description", "threading", "budgets",
                                           "tcp",      "steering",  "listeners",   "subsystems"};

std::string cpus_text(const std::vector<unsigned>& cpus) {
  return cpus.empty() ? std::string("all") : sys::format_cpu_list(cpus);
}

}  // namespace

json to_json(const SteeringConfig& s) {
  json irq = json::array(), rps = json::array(), xps = json::array();
  for (const auto& r : s.irq) {
    json j = {{"cpus", cpus_text(r.cpus)}};
    if (r.irq) j["irq"] = *r.irq;
    if (!r.device.empty()) j["device"] = r.device;
    if (r.queue) j["queue"] = *r.queue;
    irq.push_back(std::move(j));
  }
  for (const auto& [rules, out] : {std::pair{&s.rps, &rps}, std::pair{&s.xps, &xps}})
    for (const auto& r : *rules) out->push_back({{"device", r.device}, {"queue", r.queue}, {"cpus", cpus_text(r.cpus)}});
  return {{"irq", std::move(irq)}, {"rps", std::move(rps)}, {"xps", std::move(xps)}};
}

json to_json(const Profile& p) {
  json j = {{"schema", profile_schema}};
  if (!p.name.empty()) j["name"] = p.name;
  if (!p.description.empty()) j["description"] = p.description;
  if (p.threading) j["threading"] = control::to_json(*p.threading);
  if (p.budgets) j["budgets"] = control::to_json(*p.budgets);
  if (p.tcp) j["tcp"] = control::to_json(*p.tcp);
  if (p.steering) j["steering"] = to_json(*p.steering);
  if (p.listeners) {
    json& arr = j["listeners"] = json::array();
    for (const auto& l : *p.listeners) arr.push_back(control::to_json(l));
  }
  if (p.subsystems) {
    json& arr = j["subsystems"] = json::array();
    for (const auto& s : *p.subsystems) arr.push_back(control::to_json(s));
  }
  return j;
}

std::string to_text(const json& canonical) {
  // nlohmann::json keeps keys sorted; ordered_json keeps insertion order, so build one at the top
  // level (sections inside stay sorted, which diffs well).
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (auto key : text_order)
    if (auto it = canonical.find(key); it != canonical.end())
      out[std::string(key)] = nlohmann::ordered_json::parse(it->dump());
  for (const auto& [key, value] : canonical.items())
    if (!out.contains(key)) out[key] = nlohmann::ordered_json::parse(value.dump());
  return out.dump(2) + "\n";
}

std::string to_text(const Profile& p) { return to_text(to_json(p)); }

}  // namespace data
