#pragma once
// A steering request (which CPUs serve which interrupt line and queue, RFS and busy-poll
// sysctls) turned into a plan: one row per kernel file, with the value there now and the value
// to write. The plan is what a dry run prints and what a transaction applies.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/system/steering_discovery.hpp"
#include "engine/system/sys_root.hpp"

namespace sys {

// A CPU set in a rule: nullopt = every online CPU ("all"); an empty list = none ("none",
// RPS/XPS off; not allowed for an interrupt line).
using CpuChoice = std::optional<std::vector<unsigned>>;

// An interrupt line by number, or by device (+ queue: every line of the device serving it; no
// queue: every queue line of the device).
struct IrqRule {
  std::optional<unsigned> irq;
  std::string device;
  std::optional<unsigned> queue;
  CpuChoice cpus;
};

// RPS (rx queues) or XPS (tx queues) of a device; no queue = every queue of the device.
struct QueueRule {
  std::string device;
  std::optional<unsigned> queue;
  CpuChoice cpus;
  std::optional<uint64_t> flow_cnt;  // rps only: rps_flow_cnt (RFS flow table of the queue)
  bool set_cpus = true;              // false: the rule only sets flow_cnt
};

struct SteeringRequest {
  std::vector<IrqRule> irq;
  std::vector<QueueRule> rps;
  std::vector<QueueRule> xps;
  std::optional<uint64_t> rps_sock_flow_entries;  // RFS global table
  std::optional<uint64_t> busy_poll, busy_read;   // net.core sysctls, µs
  bool empty() const;
};

// One file of the plan.
struct PlanRow {
  std::string path;       // as on the machine: "/proc/irq/38/smp_affinity_list"
  std::string what;       // "irq 38 (virtio2-input.0)", "eth0 rx-0 rps_cpus"
  std::string old_value;  // the content now, verbatim ("0-1\n")
  std::string new_value;  // what will be written ("1")
  bool change = true;     // false: already holds the new value (nothing to write)
};

struct PlanError {
  std::string field;      // "irq[1].device", "rps[0].cpus"
  std::string message;
};

struct SteeringPlan {
  std::vector<PlanRow> rows;       // in rule order; a later rule for the same file replaces
  std::vector<PlanError> errors;   // every bad rule; a plan with errors applies nothing
  bool ok() const { return errors.empty(); }
  size_t changes() const;
};

// Reads every file the request touches (through view, taken from the same root) and plans it.
SteeringPlan plan_steering(const SysRoot& root, const SteeringView& view, const SteeringRequest& request);

}  // namespace sys
