// CPU lists and masks (cpu_mask.hpp).
#include "engine/control/cpu_mask.hpp"

#include <algorithm>

#include "engine/control/json_path.hpp"
#include "engine/system/topology.hpp"

namespace control {

bool parse_cpu_list(std::string_view text, std::vector<unsigned>& out) {
  auto r = sys::parse_cpu_list(text);
  if (!r.error.empty()) return false;
  out = std::move(r.cpus);
  return true;
}

std::string format_cpu_list(const std::vector<unsigned>& cpus) { return sys::format_cpu_list(cpus); }

CpuMask parse_cpu_mask(std::string_view text) {
  if (text == all_cpus) return {};
  std::vector<unsigned> cpus;
  if (!parse_cpu_list(text, cpus))
    return {{}, "malformed CPU list " + json_quote(text) +
                    " (expected CPU numbers and ranges such as \"0-3,6\", or \"all\")"};
  if (cpus.empty()) return {{}, "empty CPU mask: name at least one CPU (e.g. \"0\" or \"0-1\"), or \"all\""};
  return {std::move(cpus), std::nullopt};
}

std::optional<std::string> offline_problem(const std::vector<unsigned>& cpus, const std::vector<unsigned>& online) {
  std::vector<unsigned> offline;
  for (unsigned cpu : cpus)
    if (!std::binary_search(online.begin(), online.end(), cpu)) offline.push_back(cpu);
  if (offline.empty()) return std::nullopt;
  const bool one = offline.size() == 1;
  return std::string(one ? "CPU " : "CPUs ") + format_cpu_list(offline) + (one ? " is" : " are") +
         " not online (online: " + format_cpu_list(online) + ")";
}

std::vector<unsigned> online_cpus() { return sys::online_cpus(); }

}  // namespace control
