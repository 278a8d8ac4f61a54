// threading.cpumask as configuration writes it (config_cpumask.hpp).
#include "engine/config/config_cpumask.hpp"

#include <algorithm>

#include "engine/json/json_path.hpp"
#include "engine/system/topology.hpp"

namespace control {

CpuMask parse_cpu_mask(std::string_view text) {
  if (text == all_cpus) return {};
  auto list = sys::parse_cpu_list(text);
  if (!list.error.empty())
    return {{}, "malformed CPU list " + json_quote(text) +
                    " (expected CPU numbers and ranges such as \"0-3,6\", or \"all\")"};
  if (list.cpus.empty()) return {{}, "empty CPU mask: name at least one CPU (e.g. \"0\" or \"0-1\"), or \"all\""};
  return {std::move(list.cpus), std::nullopt};
}

std::optional<std::string> offline_problem(const std::vector<unsigned>& cpus, const std::vector<unsigned>& online) {
  std::vector<unsigned> offline;
  for (unsigned cpu : cpus)
    if (!std::binary_search(online.begin(), online.end(), cpu)) offline.push_back(cpu);
  if (offline.empty()) return std::nullopt;
  const bool one = offline.size() == 1;
  return std::string(one ? "CPU " : "CPUs ") + sys::format_cpu_list(offline) + (one ? " is" : " are") +
         " not online (online: " + sys::format_cpu_list(online) + ")";
}

}  // namespace control
