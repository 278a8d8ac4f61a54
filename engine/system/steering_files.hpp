#pragma once
// The kernel files steering writes, and no others. Discovery and the planner name files only
// through these functions, and the transaction refuses any path they would not build: the state
// file that lets a crashed engine be undone is read back as root, so it may restore steering
// but must not be able to name anything else to write (/etc/passwd, a device, a symlink's target).
// Paths are as on the machine; a SysRoot puts them under a fake tree in tests.
#include <string>
#include <string_view>

namespace sys {

// The files of an rx (rps_*) or tx (xps_*) queue.
enum class QueueFile { rps_cpus, rps_flow_cnt, xps_cpus };
// The net.core sysctls steering sets.
enum class NetCoreFile { rps_sock_flow_entries, busy_poll, busy_read };

// /proc/irq/IRQ/smp_affinity_list
std::string irq_affinity_file(unsigned irq);
// /sys/class/net/DEVICE/queues/rx-QUEUE/rps_cpus (rx-: rps_*, tx-: xps_cpus)
std::string queue_file(std::string_view device, unsigned queue, QueueFile file);
// /proc/sys/net/core/NAME
std::string net_core_file(NetCoreFile file);

// "" when path is one of the files above; else why steering refuses it (without the path).
std::string steering_file_problem(std::string_view path);

}  // namespace sys
