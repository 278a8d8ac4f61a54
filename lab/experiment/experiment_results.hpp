#pragma once
// An experiment's results: each cell's rounds summarised (medians over the rounds that ran
// ok), the best cell of each workload x contention group marked, and the whole as JSON (the
// document `nvmetune experiment --out` writes).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/experiment/experiment_runner.hpp"

namespace lab {

// Fills each cell's summary, iops_min and iops_max from its rounds.
void summarize_cells(std::vector<Cell>& cells);

// Marks the best cell of each workload x contention group per objective ("iops": max IOPS,
// "p99": min p99, "iops_per_cpu": max IOPS per target CPU), by the summaries.
void mark_best(std::vector<Cell>& cells);

bool is_best(const Cell& c, const char* objective);
size_t rounds_ok(const Cell& c);

// The middle value; the mean of the two middle ones for an even count.
double median(std::vector<double> v);

// What the results document records besides the cells.
struct ResultsMeta {
  std::string file;     // the experiment file
  std::string target;   // ExperimentTarget::describe()
  int64_t started_ns = 0;
  std::string version;
  unsigned rounds = 1;
};

nlohmann::ordered_json results_json(const ExperimentPlan& plan, const std::vector<Cell>& cells, const ResultsMeta& meta);

}  // namespace lab
