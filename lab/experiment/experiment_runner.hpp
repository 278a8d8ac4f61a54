#pragma once
// Running an experiment: the grid of cells (setting x workload x contention), each run once
// per round on an ExperimentTarget with perf's load generator in this process, contention
// from sys::CpuHog, and the engine's figures from its sampler intervals inside the measured
// window. What a cell measured and how rounds are summarised is experiment_results.hpp.
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "lab/experiment/experiment_file.hpp"
#include "lab/experiment/experiment_target.hpp"

namespace lab {

// One run of one cell.
struct Measurement {
  bool ok = false;
  std::string error;  // why not ok
  std::string target_cpus, initiator_cpus, hog_cpus;
  double iops = 0, mib_s = 0, p50_ns = 0, p99_ns = 0, p999_ns = 0;
  double queue_wait_p99_ns = 0;
  // The engine's target latency (arrival stamp -> response handed to the socket), reads and
  // writes, over the measured intervals: beside the load's own p50/p99/p99.9 above.
  double target_p50_ns = 0, target_p99_ns = 0, target_p999_ns = 0;
  double target_cpu_pct = 0;  // 100 = one CPU
  double iops_per_cpu = 0;    // IOPS per target CPU (100 %)
  double hog_duty_pct = 0;    // measured, mean over the hog's threads
  unsigned intervals = 0;     // sampler intervals the engine figures come from
  uint64_t io_errors = 0;
};

struct Cell {
  size_t setting = 0, workload = 0, contention = 0;
  std::vector<Measurement> rounds;  // in the order run
  // What a table shows and `best` compares: per figure the median over the rounds that are
  // ok, since one noisy round moves a median least; error lists the failed rounds.
  Measurement summary;
  double iops_min = 0, iops_max = 0;  // over the rounds that are ok
  std::vector<std::string> best;      // "iops", "p99", "iops_per_cpu"
};

// Every cell of the plan, contention outermost and settings innermost, so the settings being
// compared sit next to each other.
std::vector<Cell> experiment_cells(const ExperimentPlan& plan);

// "setting x workload x contention"
std::string cell_name(const ExperimentPlan& plan, const Cell& c);

// One run, before (result == nullptr) and after it; skipped runs (stop set) are not reported.
struct RunProgress {
  size_t run = 0, runs = 0;       // 1-based
  unsigned round = 0, rounds = 0; // 1-based
  const Cell* cell = nullptr;
  const Measurement* result = nullptr;
};
using ProgressFn = std::function<void(const RunProgress&)>;

// Runs every cell `rounds` times, round by round, appending one Measurement per run to each
// cell's rounds. stop (set from another thread or a signal handler) ends the current run early
// and skips the rest. Cells are not summarised (summarize_cells, experiment_results.hpp).
void run_experiment_rounds(const ExperimentPlan& plan, ExperimentTarget& target, std::vector<Cell>& cells,
                           unsigned rounds, const std::atomic<bool>& stop, const ProgressFn& progress);

// The CPUs a threading setting runs its workers on (what "target" means for contention and
// what the initiator avoids).
std::vector<unsigned> target_cpus_of(const control::ThreadingConfig& t);

}  // namespace lab
