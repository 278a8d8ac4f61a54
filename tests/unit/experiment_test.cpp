// The experiment library (lab/experiment/): file parsing with every error at its JSON path,
// the grid's order, round summaries and best cells, the results document, and the runner
// against a real engine, embedded and through its control methods (engine_caller: the same
// methods the socket serves, minus the socket, which experiment_cli_test covers).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "lab/experiment/experiment_file.hpp"
#include "lab/experiment/experiment_results.hpp"
#include "lab/experiment/experiment_runner.hpp"
#include "lab/experiment/experiment_target.hpp"
#include "data/profile/profile_apply.hpp"
#include "support/engine_config.hpp"

namespace {

using lab::Cell;
using lab::Measurement;
using json = nlohmann::json;

std::string message_at(const std::vector<control::ConfigError>& errors, const std::string& path) {
  for (const auto& e : errors)
    if (e.path == path) return e.message;
  return {};
}

TEST(ExperimentFile, EveryErrorIsReportedAtItsPath) {
  const auto parsed = lab::parse_experiment(R"({
    "settings": [{"name": "a"}, {"threading": {"mode": "spin"}}],
    "workloads": [{"qd": 0, "rw": "randread"}, {"bs": "huge"}],
    "contention": [{"lod": 50}],
    "engine": {"config": {"listeners": [{"traddr": "nowhere"}]}},
    "settle": 99})", ".");
  EXPECT_NE(message_at(parsed.errors, "$.settings[1].threading.mode").find("unknown execution mode \"spin\""),
            std::string::npos);
  EXPECT_EQ(message_at(parsed.errors, "$.workloads[0].qd"), "expected an integer 1..4096, got 0");
  EXPECT_NE(message_at(parsed.errors, "$.workloads[1]").find("--bs"), std::string::npos);
  EXPECT_EQ(message_at(parsed.errors, "$.contention[0].lod"), "unknown key \"lod\"");
  EXPECT_NE(message_at(parsed.errors, "$.engine.config.listeners[0].traddr").find("invalid IPv4 address"),
            std::string::npos);
  EXPECT_EQ(message_at(parsed.errors, "$.settle"), "expected a number 0..60, got 99");
  EXPECT_EQ(parsed.errors.size(), 6u);
}

TEST(ExperimentFile, MissingSectionsAndBadJson) {
  EXPECT_EQ(message_at(lab::parse_experiment("{}", ".").errors, "$.settings"), "required (a non-empty array)");
  EXPECT_EQ(message_at(lab::parse_experiment("{", ".").errors, "$"), "not valid JSON");
  EXPECT_EQ(message_at(lab::parse_experiment(R"({"settings": [], "workloads": [{}]})", ".").errors, "$.settings"),
            "expected a non-empty array, got []");
}

TEST(ExperimentFile, DefaultsAndTheGridOrder) {
  const auto parsed = lab::parse_experiment(R"({"settings": [{"name": "a"}, {"name": "b"}],
      "workloads": [{}, {"rw": "randwrite", "bs": "16k", "qd": 4, "time": 2}],
      "contention": [{"load": 0}, {"load": 50, "cpus": "0"}]})", ".");
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors.front().path << ": " << parsed.errors.front().message;
  const auto& plan = parsed.plan;
  EXPECT_EQ(plan.workloads[0].name, "randread-4k-qd32");
  EXPECT_DOUBLE_EQ(plan.workloads[0].perf.time_s, 5);
  EXPECT_DOUBLE_EQ(plan.workloads[0].perf.ramp_s, 1);
  EXPECT_EQ(plan.workloads[1].name, "randwrite-16k-qd4");
  EXPECT_EQ(plan.contention[1].name, "50% on 0");
  EXPECT_FALSE(plan.contention[1].on_target);
  const auto cells = lab::experiment_cells(plan);
  ASSERT_EQ(cells.size(), 8u);
  // Settings innermost: the settings compared sit next to each other.
  EXPECT_EQ(lab::cell_name(plan, cells[0]), "a x randread-4k-qd32 x none");
  EXPECT_EQ(lab::cell_name(plan, cells[1]), "b x randread-4k-qd32 x none");
  EXPECT_EQ(lab::cell_name(plan, cells[2]), "a x randwrite-16k-qd4 x none");
  EXPECT_EQ(lab::cell_name(plan, cells[7]), "b x randwrite-16k-qd4 x 50% on 0");
}

TEST(ExperimentRunner, PollTargetCpusFollowFirstCore) {
  control::ThreadingConfig t;
  t.mode = "poll";
  t.first_core = 1;
  t.threads = 2;
  EXPECT_EQ(lab::target_cpus_of(t), (std::vector<unsigned>{1, 2}));
  t.mode = "bound";
  t.cpus = {0};
  EXPECT_EQ(lab::target_cpus_of(t), (std::vector<unsigned>{0}));
}

Measurement round(double iops, double p99, double per_cpu) {
  Measurement m;
  m.ok = true;
  m.iops = iops;
  m.p99_ns = p99;
  m.iops_per_cpu = per_cpu;
  m.intervals = 4;
  m.target_cpus = "0";
  return m;
}

Measurement failed(const std::string& why) {
  Measurement m;
  m.error = why;
  return m;
}

TEST(ExperimentResults, MediansMinMaxFailuresAndBest) {
  std::vector<Cell> cells(2);
  cells[1].setting = 1;
  cells[0].rounds = {round(100, 50, 10), failed("perf: boom"), round(300, 30, 30), round(200, 40, 20)};
  cells[1].rounds = {failed("threading.set refused: x"), failed("threading.set refused: x")};
  lab::summarize_cells(cells);
  const Measurement& s = cells[0].summary;
  EXPECT_TRUE(s.ok);
  EXPECT_DOUBLE_EQ(s.iops, 200);
  EXPECT_DOUBLE_EQ(s.p99_ns, 40);
  EXPECT_EQ(s.intervals, 4u);
  EXPECT_DOUBLE_EQ(cells[0].iops_min, 100);
  EXPECT_DOUBLE_EQ(cells[0].iops_max, 300);
  EXPECT_EQ(s.error, "round 2: perf: boom");
  EXPECT_EQ(lab::rounds_ok(cells[0]), 3u);
  EXPECT_FALSE(cells[1].summary.ok);
  EXPECT_EQ(cells[1].summary.error, "round 1,2: threading.set refused: x");
  EXPECT_DOUBLE_EQ(lab::median({4, 1, 3, 2}), 2.5);

  lab::mark_best(cells);
  EXPECT_TRUE(lab::is_best(cells[0], "iops"));
  EXPECT_TRUE(lab::is_best(cells[0], "p99"));
  EXPECT_TRUE(cells[1].best.empty()) << "a failed cell is never best";
}

TEST(ExperimentResults, DocumentCarriesEachRound) {
  const auto parsed = lab::parse_experiment(R"({"name": "t", "settings": [{"threading": {"mode": "poll"}}],
      "workloads": [{}]})", ".");
  ASSERT_TRUE(parsed.errors.empty());
  auto cells = lab::experiment_cells(parsed.plan);
  cells[0].rounds = {round(10, 1, 1), failed("interrupted")};
  lab::summarize_cells(cells);
  const auto doc = lab::results_json(parsed.plan, cells, {"f.json", "somewhere", 42, "9.9", 2});
  EXPECT_EQ(doc["experiment"], "t");
  EXPECT_EQ(doc["rounds"], 2);
  EXPECT_EQ(doc["started_ns"], 42);
  ASSERT_EQ(doc["cells"].size(), 1u);
  const auto& c = doc["cells"][0];
  EXPECT_EQ(c["setting_params"]["threading"]["mode"], "poll");
  EXPECT_EQ(c["rounds_ok"], 1);
  EXPECT_EQ(c["rounds"].size(), 2u);
  EXPECT_EQ(c["rounds"][1]["status"], "failed");
  EXPECT_EQ(c["rounds"][1]["error"], "interrupted");
}

constexpr const char* short_plan = R"({"settle": 0, "ramp": 0, "time": 0.6,
    "settings": [{"name": "bound", "threading": {"mode": "bound"}},
                 {"name": "poll", "threading": {"mode": "poll", "threads": 1, "first_core": 0, "cpumask": "0"},
                  "budgets": {"recv_pdus": 4}}],
    "workloads": [{"qd": 4}], "initiator_cpus": "none"})";

// Real I/O from perf's load generator against a real engine in this process.
TEST(ExperimentRunner, RunsEveryCellOnAnEmbeddedEngine) {
  auto parsed = lab::parse_experiment(short_plan, ".");
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors.front().path << ": " << parsed.errors.front().message;
  std::string error;
  auto target = lab::start_embedded_target(parsed.plan, nullptr, error);
  ASSERT_TRUE(target) << error;
  auto cells = lab::experiment_cells(parsed.plan);
  std::atomic<bool> stop{false};
  int starts = 0, ends = 0;
  lab::run_experiment_rounds(parsed.plan, *target, cells, 1, stop, [&](const lab::RunProgress& p) {
    EXPECT_EQ(p.runs, 2u);
    (p.result ? ends : starts)++;
  });
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(ends, 2);
  for (const Cell& c : cells) {
    ASSERT_EQ(c.rounds.size(), 1u);
    EXPECT_TRUE(c.rounds[0].ok) << c.rounds[0].error;
    EXPECT_GT(c.rounds[0].iops, 0);
    EXPECT_EQ(c.rounds[0].io_errors, 0u);
  }
  EXPECT_EQ(cells[1].rounds[0].target_cpus, "0");
}

// The control-method target: the engine's base values, each cell applied whole, stats read back.
TEST(ExperimentRunner, RpcTargetAppliesThroughTheControlMethods) {
  engine::Engine engine(test_support::one_namespace_config("nqn.2026-12.io.nvmetune:x", {"ram", 8 << 20}));
  ASSERT_TRUE(engine.start().empty());
  engine.set_sample_interval_ms(100);
  auto parsed = lab::parse_experiment(short_plan, ".");
  ASSERT_TRUE(parsed.errors.empty());
  std::string error;
  auto target = lab::connect_rpc_target(parsed.plan, data::engine_caller(engine), "in-process", error);
  ASSERT_TRUE(target) << error;
  EXPECT_EQ(target->perf_target().subnqn, "nqn.2026-12.io.nvmetune:x");
  EXPECT_NE(target->describe().find("engine at in-process"), std::string::npos);
  control::ThreadingConfig t = target->base_threading();
  t.mode = "unbound";
  control::BudgetConfig b = target->base_budgets();
  b.send_pdus = 3;
  EXPECT_EQ(target->apply(t, b), "");
  EXPECT_EQ(engine.threading().mode, "unbound");
  EXPECT_EQ(engine.budgets().send_pdus, 3u);
  t.idle_poll_us = 99'999'999;
  EXPECT_NE(target->apply(t, b).find("threading.set refused: invalid params"), std::string::npos);
  auto cells = lab::experiment_cells(parsed.plan);
  std::atomic<bool> stop{false};
  lab::run_experiment_rounds(parsed.plan, *target, cells, 1, stop, nullptr);
  EXPECT_TRUE(cells[0].rounds[0].ok) << cells[0].rounds[0].error;
  EXPECT_GT(cells[0].rounds[0].intervals, 0u) << "engine intervals read through stats.get";
  engine.stop();
}

}  // namespace
