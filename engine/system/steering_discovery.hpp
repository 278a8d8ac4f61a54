#pragma once
// What steers packets on this machine: network interfaces, their interrupt lines and queues,
// the RPS/XPS/RFS and busy-poll settings, and the interrupt load per CPU. Read through a
// SysRoot, so a fake /proc + /sys tree stands in for the machine in tests.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/system/sys_root.hpp"

namespace sys {

struct IrqLine {
  unsigned irq = 0;
  std::string chip;
  std::string name;                           // from /proc/interrupts ("virtio2-input.0")
  std::vector<uint64_t> per_cpu;              // counts since boot, indexed like SteeringView::cpus
  uint64_t total = 0;
  double rate = 0;                            // interrupts/s since the previous view (monitor)
  std::string affinity_path;                  // "/proc/irq/N/smp_affinity_list"
  std::optional<std::vector<unsigned>> affinity;            // smp_affinity_list (nullopt: unreadable)
  std::optional<std::vector<unsigned>> effective_affinity;  // effective_affinity_list
  std::string device;                         // the interface it serves ("" = none known)
  std::string role = "other";                 // rx | tx | txrx | other (irq_role)
  int queue = -1;
};

struct NetQueue {
  unsigned index = 0;
  std::optional<std::vector<unsigned>> cpus;  // rps_cpus (rx) or xps_cpus (tx); nullopt: absent
  std::optional<uint64_t> flow_cnt;           // rx: rps_flow_cnt
};

struct NetInterface {
  std::string name;
  std::string device;                 // the sysfs device it sits on ("" = virtual: veth, lo)
  std::vector<unsigned> irqs;         // its interrupt lines, ascending
  std::vector<NetQueue> rx, tx;
};

// Per CPU: what runs there besides the engine (the topology picker's view).
struct CpuSteering {
  unsigned cpu = 0;
  uint64_t interrupts = 0;            // numbered lines, since boot
  double irq_rate = 0;                // interrupts/s since the previous view
  uint64_t net_rx = 0, net_tx = 0;    // NET_RX / NET_TX softirqs since boot
  double net_rx_rate = 0, net_tx_rate = 0;
  std::vector<unsigned> irqs;         // lines whose effective affinity (else affinity) has this CPU
  std::vector<std::string> rps, xps;  // "eth0/rx-0" whose mask has this CPU
};

struct SteeringView {
  int64_t time_ns = 0;                          // CLOCK_MONOTONIC of the reading
  std::vector<unsigned> cpus;                   // online CPUs of the tree
  std::vector<IrqLine> irqs;                    // every numbered line, ascending
  std::vector<NetInterface> interfaces;
  std::optional<uint64_t> rps_sock_flow_entries, busy_poll, busy_read;  // /proc/sys/net/core
  std::vector<CpuSteering> per_cpu;             // one per online CPU
  std::vector<std::string> warnings;            // what could not be read, and why
};

// Reads the tree. interfaces: the names to describe (empty = every one in /sys/class/net);
// a name that does not exist gets a warning.
SteeringView discover_steering(const SysRoot& root, const std::vector<std::string>& interfaces = {});

// Fills each view's rates from the previous one it saw (rates stay 0 on the first).
class SteeringMonitor {
 public:
  void rate(SteeringView& view);

 private:
  SteeringView _last;
  bool _have = false;
};

// The interfaces that carry an IPv4 address of this network namespace (getifaddrs);
// "0.0.0.0" = every interface that has one. Empty when none matches.
std::vector<std::string> interfaces_with_address(const std::string& ipv4);

}  // namespace sys
