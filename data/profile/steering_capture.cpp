// The steering section of a saved profile (steering_capture.hpp).
#include "data/profile/steering_capture.hpp"

#include <regex>

#include "engine/system/topology.hpp"
#include "engine/config/config.hpp"

namespace data {

namespace {

using json = nlohmann::json;

// "0-3" → {0,1,2,3}; nullopt for an empty list (off: not a profile value) or null.
std::optional<std::vector<unsigned>> cpus_of(const json& v) {
  if (!v.is_string()) return std::nullopt;
  auto l = sys::parse_cpu_list(v.get<std::string>());
  if (!l.error.empty() || l.cpus.empty()) return std::nullopt;
  return std::move(l.cpus);
}

const json* find_by(const json& array, const char* key, const json& value) {
  for (const auto& e : array)
    if (e.value(key, json()) == value) return &e;
  return nullptr;
}

}  // namespace

std::optional<SteeringConfig> steering_from_engine(const json& state) {
  static const std::regex irq_file(R"(^/proc/irq/(\d+)/smp_affinity_list$)");
  static const std::regex queue_file(R"(^/sys/class/net/([^/]+)/queues/(rx|tx)-(\d+)/(rps_cpus|xps_cpus)$)");
  SteeringConfig out;
  const json none = json::array();
  const auto member = [&](const char* key) -> const json& { return state.contains(key) ? state[key] : none; };
  const json& irqs = member("irqs");
  const json& interfaces = member("interfaces");
  for (const auto& s : member("saved")) {
    const std::string path = s.value("path", "");
    std::smatch m;
    if (std::regex_match(path, m, irq_file)) {
      const unsigned irq = unsigned(std::stoul(m[1]));
      const json* line = find_by(irqs, "irq", irq);
      if (auto cpus = line ? cpus_of((*line)["affinity"]) : std::nullopt) out.irq.push_back({irq, "", std::nullopt, *cpus});
    } else if (std::regex_match(path, m, queue_file)) {
      const json* nif = find_by(interfaces, "name", m[1].str());
      const bool rx = m[2] == "rx";
      const unsigned q = unsigned(std::stoul(m[3]));
      const json* queue = nif ? find_by((*nif)[rx ? "rx" : "tx"], "queue", q) : nullptr;
      if (auto cpus = queue ? cpus_of((*queue)[rx ? "rps_cpus" : "xps_cpus"]) : std::nullopt)
        (rx ? out.rps : out.xps).push_back({m[1], q, *cpus});
    }
  }
  if (out.irq.empty() && out.rps.empty() && out.xps.empty()) return std::nullopt;
  return out;
}

}  // namespace data
