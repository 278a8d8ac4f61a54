#pragma once
// CPU lists and masks as configuration, profiles and the control socket write them.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace control {

// "0-3,6" ↔ {0,1,2,3,6}. parse_cpu_list returns false on malformed text.
bool parse_cpu_list(std::string_view text, std::vector<unsigned>& out);
std::string format_cpu_list(const std::vector<unsigned>& cpus);

// A CPU mask as "threading.cpumask" takes it: "all" (every online CPU: an empty list) or a CPU
// list such as "0-3,6"; problem set when malformed or empty.
struct CpuMask {
  std::vector<unsigned> cpus;
  std::optional<std::string> problem;
};
CpuMask parse_cpu_mask(std::string_view text);

// "CPU 7 is not online (online: 0-1)" / "CPUs 4-7 are not online (...)"; nullopt when every CPU
// of cpus is in online.
std::optional<std::string> offline_problem(const std::vector<unsigned>& cpus, const std::vector<unsigned>& online);

// The CPUs online now, from /sys/devices/system/cpu/online (sorted).
std::vector<unsigned> online_cpus();

// The text "cpumask" takes for every online CPU (an empty list).
inline constexpr std::string_view all_cpus = "all";

}  // namespace control
