#pragma once
// An experiment file (README.md "nvmetune experiment"): engine settings x workloads x
// contention levels, and where to run them. Parsed and validated in one
// pass; every error names its JSON path, like the engine's configuration.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/load/perf_options.hpp"
#include "engine/config/config.hpp"

namespace lab {

// One engine setting: a partial "threading" and/or "budgets" object, as threading.set and
// budgets.set take them, merged onto the engine's starting values (never onto the previous cell),
// and optionally a "steering" request (as steering.apply takes it), applied after the previous
// cell's steering was reverted.
struct ExperimentSetting {
  std::string name;
  nlohmann::json threading = nlohmann::json::object();
  nlohmann::json budgets = nlohmann::json::object();
  nlohmann::json steering;  // null = the machine's own steering
};

struct ExperimentWorkload {
  std::string name;
  PerfOptions perf;  // rw, bs, qd, queues, threads, rwmixread, time, ramp, digest, nsid
};

struct ExperimentContention {
  std::string name;
  unsigned load_pct = 0;     // 0 = no hog
  bool on_target = true;     // "cpus": "target" (the cell's target CPUs)
  std::vector<unsigned> cpus;  // else this list
  unsigned period_us = 10'000;
};

// Bounds of "rounds" and --rounds, one place so the file and the command line agree.
inline constexpr unsigned experiment_rounds_min = 1, experiment_rounds_max = 100;

struct ExperimentPlan {
  std::string name;
  unsigned rounds = 1;       // the whole grid this many times, same order each round
  std::optional<control::Config> engine_config;  // embedded: "engine" (inline or a file)
  std::string socket;        // remote: a running engine's control socket
  std::string traddr;        // remote: where perf connects (default: the engine's first listener)
  std::string trsvcid;
  std::string subnqn;        // default: the first subsystem
  bool initiator_auto = true;          // "initiator_cpus": "auto": the CPUs the target does not use
  std::vector<unsigned> initiator_cpus;  // else this list (empty with auto=false: not pinned)
  double settle_s = 0.5;     // after applying a setting, before the workload starts
  std::vector<ExperimentSetting> settings;
  std::vector<ExperimentWorkload> workloads;
  std::vector<ExperimentContention> contention;
};

struct ExperimentParse {
  ExperimentPlan plan;
  std::vector<control::ConfigError> errors;  // empty = valid
};

// base_dir resolves a relative "engine": {"config_file": ...}.
ExperimentParse parse_experiment(const std::string& text, const std::string& base_dir);

// Errors on one line, "path: message; path: message", as a failed cell reports them.
std::string errors_text(const std::vector<control::ConfigError>& errors);

}  // namespace lab
