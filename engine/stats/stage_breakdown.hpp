#pragma once
// Where a target latency's time went over an interval: each stage's mean share and p99.
// A stage's share is its time summed over every command it timed, divided by the commands
// that got a target latency, so the shares add up to the mean target latency even though not
// every command has every stage (a read never waits for data). The dashboard stacks them;
// stats.get and `ctl stats --watch` print them.
#include <cstdint>
#include <vector>

#include "engine/stats/latency_sources.hpp"

namespace stats {

struct StageFigure {
  const LatencySource* source = nullptr;  // kind == LatencyKind::stage
  double share_ns = 0;  // sum of the stage's samples / commands
  double mean_ns = 0;   // over the commands that had this stage
  double p99_ns = 0;
  uint64_t count = 0;
};

struct StageBreakdown {
  uint64_t commands = 0;       // commands with a target latency in the interval
  double target_mean_ns = 0;   // their mean target latency
  std::vector<StageFigure> stages;  // in latency_sources' order
};

StageBreakdown stage_breakdown(const QueueRow& row);

}  // namespace stats
