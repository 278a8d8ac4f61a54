#pragma once
// A CPU mask as "threading.cpumask" takes it: the word "all" or a CPU list such as "0-3,6".
// CPU lists themselves (parsing, printing, which CPUs are online or allowed) are the system's:
// engine/system/topology.hpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace control {

// "all" (an empty list: every CPU this process may run on) or a CPU list; problem set when
// malformed or empty.
struct CpuMask {
  std::vector<unsigned> cpus;
  std::optional<std::string> problem;
};
CpuMask parse_cpu_mask(std::string_view text);

// "CPU 7 is not online (online: 0-1)" / "CPUs 4-7 are not online (...)"; nullopt when every CPU
// of cpus is in online.
std::optional<std::string> offline_problem(const std::vector<unsigned>& cpus, const std::vector<unsigned>& online);

// The text "cpumask" takes for every CPU (an empty list).
inline constexpr std::string_view all_cpus = "all";

}  // namespace control
