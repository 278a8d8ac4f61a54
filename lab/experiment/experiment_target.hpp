#pragma once
// Where an experiment applies its settings and reads the engine's statistics: an engine it
// starts itself (embedded, in this process) or a running one reached through the control
// socket's methods (any data::RpcCaller, data/profile). Both look the same to the runner.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "lab/experiment/experiment_file.hpp"
#include "data/profile/profile_apply.hpp"
#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/initiator/target.hpp"
#include "engine/stats/histogram_data.hpp"

namespace lab {

// One closed sampler interval, reduced to what a cell reports.
struct EngineInterval {
  uint64_t seq = 0;
  int64_t end_ns = 0;        // CLOCK_REALTIME at the interval's end
  uint64_t interval_ns = 0;
  uint64_t commands = 0;
  uint64_t worker_cpu_ns = 0;  // summed over the engine's workers
  stats::HistogramData queue_wait;  // all queues
  // Reads and writes, arrival stamp -> response handed to the socket (stats::latency_sources).
  stats::HistogramData target_latency;
};

class ExperimentTarget {
 public:
  virtual ~ExperimentTarget() = default;
  virtual std::string describe() const = 0;
  // Where perf connects (nsid is the workload's).
  virtual initiator::Target perf_target() const = 0;
  // The values settings are merged onto (the engine's at the start of the experiment).
  virtual control::ThreadingConfig base_threading() const = 0;
  virtual control::BudgetConfig base_budgets() const = 0;
  // Applies both live. Empty on success, else the engine's refusal (each bad field named).
  virtual std::string apply(const control::ThreadingConfig& t, const control::BudgetConfig& b) = 0;
  // Reverts the steering of the previous cell, then applies request (null: none). Empty on
  // success, else the engine's refusal. The engine's own revert restores the machine at the end.
  virtual std::string steer(const nlohmann::json& request) = 0;
  // The last closed interval, if any yet.
  virtual std::optional<EngineInterval> latest() = 0;
};

// Starts an engine from the plan's configuration or a default (a 512 MiB RAM namespace on a
// free 127.0.0.1 port); its warnings and errors go to log. nullptr with error set when it does
// not start.
std::unique_ptr<ExperimentTarget> start_embedded_target(const ExperimentPlan& plan, engine::LogSink log,
                                                        std::string& error);

// The engine behind call (its control socket's methods); where names it in describe() (the
// socket path). nullptr with error set when it does not answer as an engine.
std::unique_ptr<ExperimentTarget> connect_rpc_target(const ExperimentPlan& plan, data::RpcCaller call, std::string where,
                                                     std::string& error);

}  // namespace lab
