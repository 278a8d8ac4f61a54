// `nvmetune experiment` (experiment.hpp): the command line, progress lines and the table. The
// file, the targets, the runner and the results are lab/experiment/.
#include "app/experiment.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "app/exit_code.hpp"
#include "app/socket_caller.hpp"
#include "lab/experiment/experiment_file.hpp"
#include "lab/experiment/experiment_results.hpp"
#include "lab/experiment/experiment_runner.hpp"
#include "lab/experiment/experiment_target.hpp"
#include "data/store/store.hpp"
#include "engine/stats/print.hpp"

namespace app {

namespace {

using lab::Cell;
using lab::ExperimentPlan;
using lab::is_best;
using lab::Measurement;
using lab::experiment_rounds_max;
using lab::experiment_rounds_min;

std::atomic<bool> g_interrupted{false};
extern "C" void on_experiment_signal(int) { g_interrupted.store(true); }

std::string dur(double ns) { return ns > 0 ? stats::format_duration(ns) : "-"; }

// 338k, 1.25M: three significant digits are more than a noisy machine's rounds agree on.
std::string compact(double v) {
  char b[32];
  if (v >= 999.5e3)
    std::snprintf(b, sizeof b, "%.3gM", v / 1e6);
  else if (v >= 999.5)
    std::snprintf(b, sizeof b, "%.3gk", v / 1e3);
  else
    std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}

std::string iops_text(const Cell& c) {
  std::string t;
  if (c.rounds.size() > 1 && c.summary.ok) {
    t = compact(c.summary.iops) + " (" + compact(c.iops_min) + "\u2013" + compact(c.iops_max) + ")";
  } else {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", c.summary.iops);
    t = b;
  }
  return t + (is_best(c, "iops") ? "*" : "");
}

std::string status_text(const Cell& c) {
  if (!c.summary.ok) return "FAILED: " + c.summary.error;
  if (c.summary.error.empty()) return "ok";
  return "ok in " + std::to_string(lab::rounds_ok(c)) + "/" + std::to_string(c.rounds.size()) + " rounds; FAILED " +
         c.summary.error;
}

// printf pads by bytes; the IOPS column holds an en dash (3 bytes, one column).
size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
}

std::string pad_left(const std::string& s, size_t width) {
  return std::string(width > columns(s) ? width - columns(s) : 0, ' ') + s;
}

void print_table(const ExperimentPlan& p, const std::vector<Cell>& cells, unsigned rounds) {
  size_t ws = 7, ww = 8, wc = 10, wi = 11;
  std::vector<std::string> iops;
  for (const auto& c : cells) {
    ws = std::max(ws, p.settings[c.setting].name.size());
    ww = std::max(ww, p.workloads[c.workload].name.size());
    wc = std::max(wc, p.contention[c.contention].name.size());
    iops.push_back(iops_text(c));
    wi = std::max(wi, columns(iops.back()));
  }
  const int is = static_cast<int>(ws), iw = static_cast<int>(ww), ic = static_cast<int>(wc);
  std::printf("%-3s %-*s %-*s %-*s %s %9s %9s %10s %10s %10s %10s %8s %11s  %s\n", "#", is, "setting", iw, "workload",
              ic, "contention", pad_left("IOPS", wi).c_str(), "MiB/s", "p50", "p99", "p99.9", "tgt p99", "qwait p99",
              "tgt CPU", "IOPS/CPU", "status");
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    const Measurement& m = c.summary;
    char p99[32], ipc[32], cpu[32];
    std::snprintf(p99, sizeof p99, "%s%s", dur(m.p99_ns).c_str(), is_best(c, "p99") ? "*" : "");
    std::snprintf(ipc, sizeof ipc, "%.0f%s", m.iops_per_cpu, is_best(c, "iops_per_cpu") ? "*" : "");
    std::snprintf(cpu, sizeof cpu, "%.0f%%", m.target_cpu_pct);
    std::printf("%-3zu %-*s %-*s %-*s %s %9.1f %9s %10s %10s %10s %10s %8s %11s  %s\n", i + 1, is,
                p.settings[c.setting].name.c_str(), iw, p.workloads[c.workload].name.c_str(), ic,
                p.contention[c.contention].name.c_str(), pad_left(iops[i], wi).c_str(), m.mib_s,
                dur(m.p50_ns).c_str(), p99, dur(m.p999_ns).c_str(), dur(m.target_p99_ns).c_str(),
                dur(m.queue_wait_p99_ns).c_str(), cpu, ipc, status_text(c).c_str());
  }
  std::printf("* best of its workload x contention group: max IOPS, min p99, max IOPS per target CPU.\n"
              "Latencies: perf's submit-to-completion (read and write), the host's view; tgt p99: the engine's\n"
              "target latency (capsule's kernel arrival stamp -> response handed to the socket); qwait p99:\n"
              "the engine's queue wait;\n"
              "tgt CPU: the engine workers' CPU time over the measured intervals (100%% = one CPU).\n");
  if (rounds > 1)
    std::printf("Each figure is the median over the rounds that ran ok (of %u); IOPS also (min\u2013max).\n", rounds);
}

std::unique_ptr<lab::ExperimentTarget> open_target(const ExperimentPlan& plan, const std::string& socket,
                                                    std::string& error) {
  if (socket.empty())
    return lab::start_embedded_target(
        plan,
        [](engine::LogLevel level, std::string_view msg) {
          if (level != engine::LogLevel::info)
            std::fprintf(stderr, "nvmetune experiment: engine: %.*s\n", static_cast<int>(msg.size()), msg.data());
        },
        error);
  auto caller = std::make_shared<SocketCaller>();
  if (error = caller->open(socket); !error.empty()) return nullptr;
  return lab::connect_rpc_target(
      plan, [caller](const std::string& m, const nlohmann::json& p) { return (*caller)(m, p); }, socket, error);
}

void print_progress(const ExperimentPlan& plan, const lab::RunProgress& p) {
  const std::string where =
      "[" + std::to_string(p.run) + "/" + std::to_string(p.runs) + "] " +
      (p.rounds == 1 ? "" : "round " + std::to_string(p.round) + "/" + std::to_string(p.rounds) + ": ") +
      lab::cell_name(plan, *p.cell);
  const Measurement* m = p.result;
  if (!m)
    std::fprintf(stderr, "nvmetune experiment: %s: running\n", where.c_str());
  else if (m->ok)
    std::fprintf(stderr,
                 "nvmetune experiment: %s: %.0f IOPS, p99 %s (host) / %s (target), queue wait p99 %s, target CPU %.0f%% "
                 "(target on %s, initiator on %s%s%s)\n",
                 where.c_str(), m->iops, dur(m->p99_ns).c_str(), dur(m->target_p99_ns).c_str(), dur(m->queue_wait_p99_ns).c_str(), m->target_cpu_pct,
                 m->target_cpus.c_str(), m->initiator_cpus.c_str(), m->hog_cpus.empty() ? "" : ", hog on ",
                 m->hog_cpus.c_str());
  else
    std::fprintf(stderr, "nvmetune experiment: %s: FAILED: %s\n", where.c_str(), m->error.c_str());
}

std::optional<ExperimentPlan> read_plan(const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "nvmetune experiment: cannot read %s\n", file.c_str());
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string dir = file.find('/') == std::string::npos ? "." : file.substr(0, file.rfind('/'));
  lab::ExperimentParse parsed = lab::parse_experiment(ss.str(), dir);
  if (parsed.errors.empty()) return std::move(parsed.plan);
  for (const auto& e : parsed.errors) std::fprintf(stderr, "%s: %s: %s\n", file.c_str(), e.path.c_str(), e.message.c_str());
  return std::nullopt;
}

bool write_results(const ExperimentOptions& o, const ExperimentPlan& plan, const std::vector<Cell>& cells,
                   const lab::ResultsMeta& meta) {
  std::ofstream out(o.out);
  out << lab::results_json(plan, cells, meta).dump(2) << "\n";
  return static_cast<bool>(out);
}

}  // namespace

void add_experiment_options(CLI::App& cmd, ExperimentOptions& o) {
  cmd.add_option("file", o.file, "The experiment, a JSON file (docs/guide/compare-runs.md).")
      ->required()
      ->type_name("FILE.json");
  cmd.add_option("--socket", o.socket,
                 "Run against the engine behind this control socket instead of starting one in this "
                 "process (overrides the file's \"socket\").")
      ->type_name("PATH");
  cmd.add_option("--out", o.out, "Also write every cell's results (each round's and the medians) as JSON to FILE.")
      ->type_name("FILE.json");
  cmd.add_option("--rounds", o.rounds, "Run the whole grid N times (overrides the file's \"rounds\", default 1).")
      ->check(CLI::Range(experiment_rounds_min, experiment_rounds_max))
      ->type_name("N");
  cmd.footer(
      "For each contention level x workload x engine setting (in that nesting, so the settings\n"
      "being compared sit next to each other): merge the setting's partial \"threading\" and\n"
      "\"budgets\" onto the engine's starting values and apply them live (as threading.set and\n"
      "budgets.set do); start the contention (hog threads on the setting's target CPUs or a given\n"
      "list); run the workload with perf's load generator in this process, pinned to the CPUs the\n"
      "target does not use (\"initiator_cpus\": \"auto\"); ramp, then measure. Per cell: IOPS,\n"
      "MiB/s, p50/p99/p99.9 command latency, the engine's p99 queue wait and its workers' CPU\n"
      "time (from the engine's sampler intervals inside the measured window). A cell the engine\n"
      "refuses (e.g. a mode it cannot switch to) is reported as failed and the rest go on.\n"
      "With rounds N > 1 the whole grid runs N times in the same order (A B C A B C ...), so\n"
      "slow drifts of a shared machine hit every setting alike; the table shows per cell the\n"
      "median of each figure over the rounds that ran ok, and for IOPS also the min-max. A failed\n"
      "round is reported and left out; a cell failing every round is failed.\n"
      "A progress line per run goes to stderr; the table to stdout, with '*' on the best cell of\n"
      "each workload x contention group per objective (medians): max IOPS, min p99, max IOPS\n"
      "per CPU.\n"
      "Without --socket (or \"socket\") the engine is started here from the file's \"engine\"\n"
      "configuration or a default: a 512 MiB RAM namespace on a free 127.0.0.1 port.\n"
      "Exit codes: 0 ran (failed cells are in the table); 1 no cell could be measured;\n"
      "2 bad command line or experiment file.\n"
      "Example: nvmetune experiment experiments/seed-compare.json --out results.json");
}

int run_experiment(const ExperimentOptions& o) {
  const auto plan = read_plan(o.file);
  if (!plan) return exit_usage;
  const std::string socket = o.socket.empty() ? plan->socket : o.socket;
  std::string error;
  auto target = open_target(*plan, socket, error);
  if (!target) {
    std::fprintf(stderr, "nvmetune experiment: %s\n", error.c_str());
    return exit_failure;
  }
  const unsigned rounds = o.rounds ? o.rounds : plan->rounds;
  std::vector<Cell> cells = lab::experiment_cells(*plan);
  std::fprintf(stderr,
               "nvmetune experiment: %s: %zu cells (%zu settings x %zu workloads x %zu contention levels) x %u "
               "round%s on %s\n",
               plan->name.empty() ? o.file.c_str() : plan->name.c_str(), cells.size(), plan->settings.size(),
               plan->workloads.size(), plan->contention.size(), rounds, rounds == 1 ? "" : "s",
               target->describe().c_str());

  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_experiment_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  const lab::ResultsMeta meta{o.file, target->describe(), data::realtime_ns(), NVMETUNE_VERSION, rounds};
  lab::run_experiment_rounds(*plan, *target, cells, rounds, g_interrupted,
                              [&](const lab::RunProgress& p) { print_progress(*plan, p); });
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  lab::summarize_cells(cells);
  lab::mark_best(cells);
  print_table(*plan, cells, rounds);
  std::fflush(stdout);
  if (!o.out.empty() && !write_results(o, *plan, cells, meta)) {
    std::fprintf(stderr, "nvmetune experiment: cannot write %s\n", o.out.c_str());
    return exit_failure;
  }
  const bool any_ok = std::any_of(cells.begin(), cells.end(), [](const Cell& c) { return c.summary.ok; });
  return any_ok ? exit_ok : exit_failure;
}

}  // namespace app
