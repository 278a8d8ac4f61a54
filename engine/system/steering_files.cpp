// The files steering may write (steering_files.hpp).
#include "engine/system/steering_files.hpp"

#include <net/if.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

namespace sys {

namespace {

constexpr std::string_view irq_dir = "/proc/irq/";
constexpr std::string_view net_dir = "/sys/class/net/";
constexpr std::array queue_files{QueueFile::rps_cpus, QueueFile::rps_flow_cnt, QueueFile::xps_cpus};
constexpr std::array net_core_files{NetCoreFile::rps_sock_flow_entries, NetCoreFile::busy_poll, NetCoreFile::busy_read};

// The kernel's dev_valid_name(): a name that stays one path component ("..", "a/b" do not).
bool valid_device_name(std::string_view name) {
  if (name.empty() || name.size() >= IFNAMSIZ || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(), [](char c) { return c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)); });
}

// The number that starts text, and the rest; nullopt without one.
std::optional<std::pair<unsigned, std::string_view>> leading_number(std::string_view text) {
  unsigned n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc()) return std::nullopt;
  return std::pair{n, text.substr(size_t(end - text.data()))};
}

// Whether path is one a builder makes: its numbers and device name are read back from it and the
// path built again, so a leading zero, a "+" or an extra component does not compare equal.
bool built_by_steering(std::string_view path) {
  if (path.starts_with(irq_dir)) {
    auto n = leading_number(path.substr(irq_dir.size()));
    return n && path == irq_affinity_file(n->first);
  }
  if (path.starts_with(net_dir)) {
    const std::string_view rest = path.substr(net_dir.size());
    const std::string_view device = rest.substr(0, rest.find('/'));
    constexpr std::string_view queues = "/queues/";
    if (!valid_device_name(device) || !rest.substr(device.size()).starts_with(queues)) return false;
    const std::string_view queue = rest.substr(device.size() + queues.size());
    if (!queue.starts_with("rx-") && !queue.starts_with("tx-")) return false;
    auto n = leading_number(queue.substr(3));
    return n && std::any_of(queue_files.begin(), queue_files.end(),
                            [&](QueueFile f) { return path == queue_file(device, n->first, f); });
  }
  return std::any_of(net_core_files.begin(), net_core_files.end(), [&](NetCoreFile f) { return path == net_core_file(f); });
}

}  // namespace

std::string irq_affinity_file(unsigned irq) { return std::string(irq_dir) + std::to_string(irq) + "/smp_affinity_list"; }

std::string queue_file(std::string_view device, unsigned queue, QueueFile file) {
  const bool rx = file != QueueFile::xps_cpus;
  const char* name = file == QueueFile::rps_cpus ? "rps_cpus" : file == QueueFile::rps_flow_cnt ? "rps_flow_cnt" : "xps_cpus";
  return std::string(net_dir) + std::string(device) + "/queues/" + (rx ? "rx-" : "tx-") + std::to_string(queue) + "/" + name;
}

std::string net_core_file(NetCoreFile file) {
  const char* name = file == NetCoreFile::rps_sock_flow_entries ? "rps_sock_flow_entries"
                     : file == NetCoreFile::busy_poll           ? "busy_poll"
                                                                : "busy_read";
  return std::string("/proc/sys/net/core/") + name;
}

std::string steering_file_problem(std::string_view path) {
  if (built_by_steering(path)) return {};
  return "not a file steering writes (only /proc/irq/N/smp_affinity_list, "
         "/sys/class/net/DEV/queues/{rx-N/rps_cpus,rx-N/rps_flow_cnt,tx-N/xps_cpus} and "
         "/proc/sys/net/core/{rps_sock_flow_entries,busy_poll,busy_read})";
}

}  // namespace sys
