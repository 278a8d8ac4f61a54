#include "app/experiment.hpp"

#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "app/exit_code.hpp"
#include "app/experiment_file.hpp"
#include "app/experiment_target.hpp"
#include "app/perf.hpp"
#include "engine/control/config_json.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/stats/print.hpp"
#include "engine/system/cpu_hog.hpp"

namespace app {

namespace {

using json = nlohmann::ordered_json;

// The engine's statistics are polled this often during a cell (intervals are kept by seq).
constexpr auto stats_poll = std::chrono::milliseconds(100);
// Intervals may start this much before the measured window (connect time, clock reads).
constexpr int64_t window_slack_ns = 50'000'000;

std::atomic<bool> g_interrupted{false};
extern "C" void on_experiment_signal(int) { g_interrupted.store(true); }

int64_t realtime_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// One run of one cell.
struct Measurement {
  bool ok = false;
  std::string error;  // why not ok
  std::string target_cpus, initiator_cpus, hog_cpus;
  double iops = 0, mib_s = 0, p50_ns = 0, p99_ns = 0, p999_ns = 0;
  double queue_wait_p99_ns = 0;
  double target_cpu_pct = 0;  // 100 = one CPU
  double iops_per_cpu = 0;    // IOPS per target CPU (100 %)
  double hog_duty_pct = 0;    // measured, mean over the hog's threads
  unsigned intervals = 0;     // sampler intervals the engine figures come from
  uint64_t io_errors = 0;
};

struct Cell {
  size_t setting = 0, workload = 0, contention = 0;
  std::vector<Measurement> rounds;  // in the order run
  // What the table shows and `best` compares: per figure the median over the rounds that are
  // ok, since one noisy round moves a median least; error lists the failed rounds.
  Measurement summary;
  double iops_min = 0, iops_max = 0;  // over the rounds that are ok
  std::vector<std::string> best;      // "iops", "p99", "iops_per_cpu"
};

// The CPUs a threading setting runs its workers on (what "target" means for contention and
// what the initiator avoids).
std::vector<unsigned> target_cpus_of(const control::ThreadingConfig& t) {
  const std::vector<unsigned> mask = t.cpus.empty() ? control::online_cpus() : t.cpus;
  if (t.mode == "poll" && t.first_core >= 0) {
    const unsigned n = t.threads ? t.threads : static_cast<unsigned>(mask.size());
    std::vector<unsigned> out;
    for (unsigned i = 0; i < std::max(n, 1u); ++i) out.push_back(static_cast<unsigned>(t.first_core) + i);
    return out;
  }
  return mask;
}

std::string errors_text(const std::vector<control::ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "; ") + e.path + ": " + e.message;
  return out;
}

// Collects the engine's closed intervals while a workload runs (its own thread).
class IntervalCollector {
 public:
  explicit IntervalCollector(ExperimentTarget& target) : _target(target), _thread([this] { loop(); }) {}
  ~IntervalCollector() { stop(); }
  void stop() {
    if (!_thread.joinable()) return;
    _stop.store(true);
    _thread.join();
    take();  // the interval that closed last
  }
  const std::map<uint64_t, EngineInterval>& intervals() const { return _intervals; }

 private:
  void loop() {
    while (!_stop.load()) {
      take();
      std::this_thread::sleep_for(stats_poll);
    }
  }
  void take() {
    if (auto iv = _target.latest(); iv && iv->interval_ns) _intervals[iv->seq] = std::move(*iv);
  }
  ExperimentTarget& _target;
  std::atomic<bool> _stop{false};
  std::map<uint64_t, EngineInterval> _intervals;
  std::thread _thread;
};

// The engine's figures over the measured window [from, to] (CLOCK_REALTIME): intervals that lie
// inside it, or, when the window is shorter than one interval, those that overlap it.
void engine_figures(const std::map<uint64_t, EngineInterval>& all, int64_t from, int64_t to, Measurement& m) {
  std::vector<const EngineInterval*> inside, overlap;
  for (const auto& [seq, iv] : all) {
    const int64_t start = iv.end_ns - static_cast<int64_t>(iv.interval_ns);
    if (start >= from - window_slack_ns && iv.end_ns <= to + window_slack_ns) inside.push_back(&iv);
    if (iv.end_ns > from && start < to) overlap.push_back(&iv);
  }
  const auto& use = inside.empty() ? overlap : inside;
  stats::HistogramData qw;
  uint64_t cpu = 0, span = 0;
  for (const auto* iv : use) {
    qw.merge(iv->queue_wait);
    cpu += iv->worker_cpu_ns;
    span += iv->interval_ns;
  }
  m.intervals = static_cast<unsigned>(use.size());
  m.queue_wait_p99_ns = qw.percentile(99);
  m.target_cpu_pct = span ? 100.0 * static_cast<double>(cpu) / static_cast<double>(span) : 0;
  m.iops_per_cpu = m.target_cpu_pct > 0 ? m.iops / (m.target_cpu_pct / 100.0) : 0;
}

std::string cell_name(const ExperimentPlan& p, const Cell& c) {
  return p.settings[c.setting].name + " x " + p.workloads[c.workload].name + " x " + p.contention[c.contention].name;
}

// Applies the setting, starts the contention, runs the workload and reads the engine's figures.
void run_cell(const ExperimentPlan& plan, ExperimentTarget& target, const Cell& c, Measurement& m) {
  const ExperimentSetting& s = plan.settings[c.setting];
  const ExperimentContention& k = plan.contention[c.contention];
  control::ThreadingConfig t = target.base_threading();
  control::BudgetConfig b = target.base_budgets();
  const std::string sp = "$.settings[" + std::to_string(c.setting) + "]";
  if (auto e = control::parse_threading(s.threading, sp + ".threading", t); !e.empty()) {
    m.error = errors_text(e);
    return;
  }
  if (auto e = control::parse_budgets(s.budgets, sp + ".budgets", b); !e.empty()) {
    m.error = errors_text(e);
    return;
  }
  if (m.error = target.apply(t, b); !m.error.empty()) return;
  if (m.error = target.steer(s.steering); !m.error.empty()) return;
  const std::vector<unsigned> tcpus = target_cpus_of(t);
  m.target_cpus = control::format_cpu_list(tcpus);

  sys::CpuHog hog;
  if (k.load_pct > 0) {
    sys::HogSpec hs{k.on_target ? tcpus : k.cpus, k.load_pct, k.period_us};
    m.hog_cpus = control::format_cpu_list(hs.cpus);
    if (auto err = hog.start(hs); !err.empty()) {
      m.error = "contention: " + err;
      return;
    }
  }
  std::vector<unsigned> icpus = plan.initiator_cpus;
  if (plan.initiator_auto)
    for (unsigned cpu : control::online_cpus())
      if (std::find(tcpus.begin(), tcpus.end(), cpu) == tcpus.end()) icpus.push_back(cpu);
  m.initiator_cpus = icpus.empty() ? "any" : control::format_cpu_list(icpus);
  std::this_thread::sleep_for(std::chrono::duration<double>(plan.settle_s));

  PerfOptions po = plan.workloads[c.workload].perf;
  const initiator::Target pt = target.perf_target();
  po.remote = "trtype:tcp traddr:" + pt.traddr + " trsvcid:" + std::to_string(pt.port) + " subnqn:" + pt.subnqn;
  po.cpus = icpus.empty() ? "" : control::format_cpu_list(icpus);
  initiator::LoadSpec spec;
  if (auto err = resolve_perf_options(po, spec)) {
    m.error = "workload: " + *err;
    return;
  }
  spec.stop = &g_interrupted;

  IntervalCollector collector(target);
  const int64_t t0 = realtime_ns();
  const initiator::LoadResult r = initiator::run_load(spec);
  const int64_t t1 = realtime_ns();
  collector.stop();
  if (hog.running()) {
    double sum = 0;
    const auto hs = hog.stats();
    for (const auto& h : hs) sum += h.duty_pct();
    m.hog_duty_pct = hs.empty() ? 0 : sum / static_cast<double>(hs.size());
    hog.stop();
  }
  if (r.status != initiator::LoadResult::Status::ok) {
    m.error = "perf: " + r.error;
    return;
  }
  stats::HistogramData lat = r.read.h;
  lat.merge(r.write.h);
  m.io_errors = r.read.errors + r.write.errors;
  m.iops = r.runtime_s > 0 ? static_cast<double>(lat.count) / r.runtime_s : 0;
  m.mib_s = m.iops * spec.bs / 1048576.0;
  m.p50_ns = lat.percentile(50);
  m.p99_ns = lat.percentile(99);
  m.p999_ns = lat.percentile(99.9);
  engine_figures(collector.intervals(), t0 + static_cast<int64_t>(spec.ramp_s * 1e9), t1, m);
  if (!r.failure.empty()) {
    m.error = "perf: " + r.failure;
    return;
  }
  if (g_interrupted.load()) {
    m.error = "interrupted";
    return;
  }
  m.ok = true;
}

// The middle value; the mean of the two middle ones for an even count.
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// The failed rounds' errors, each once ("round 1,3: ..."): a cell usually fails the same way
// every round. With one round just the error, so the table reads as before.
std::string round_failures(const Cell& c) {
  std::vector<std::pair<std::string, std::string>> by_error;  // error, its rounds; in run order
  for (size_t r = 0; r < c.rounds.size(); ++r) {
    if (c.rounds[r].ok) continue;
    const std::string& e = c.rounds[r].error;
    auto it = std::find_if(by_error.begin(), by_error.end(), [&](const auto& p) { return p.first == e; });
    if (it == by_error.end()) it = by_error.insert(by_error.end(), {e, ""});
    it->second += (it->second.empty() ? "" : ",") + std::to_string(r + 1);
  }
  std::string out;
  for (const auto& [error, rounds] : by_error) {
    if (!out.empty()) out += "; ";
    if (c.rounds.size() > 1) out += "round " + rounds + ": ";
    out += error;
  }
  return out;
}

size_t rounds_ok(const Cell& c) {
  return static_cast<size_t>(std::count_if(c.rounds.begin(), c.rounds.end(), [](const Measurement& m) { return m.ok; }));
}

void summarize(Cell& c) {
  std::vector<const Measurement*> ok;
  for (const auto& m : c.rounds)
    if (m.ok) ok.push_back(&m);
  Measurement& s = c.summary;
  s = Measurement{};
  s.error = round_failures(c);
  // Errors in any round are worth knowing about; a median would hide them.
  for (const auto& m : c.rounds) s.io_errors += m.io_errors;
  // The CPUs are the same every round; a cell that never got far enough has none.
  const Measurement& first = ok.empty() ? c.rounds.front() : *ok.front();
  s.target_cpus = first.target_cpus;
  s.initiator_cpus = first.initiator_cpus;
  s.hog_cpus = first.hog_cpus;
  if (ok.empty()) return;
  s.ok = true;
  auto med = [&]<typename T>(T Measurement::*figure) {
    std::vector<double> v;
    for (const auto* m : ok) v.push_back(static_cast<double>(m->*figure));
    if constexpr (std::is_integral_v<T>)
      s.*figure = static_cast<T>(std::llround(median(std::move(v))));
    else
      s.*figure = median(std::move(v));
  };
  med(&Measurement::iops);
  med(&Measurement::mib_s);
  med(&Measurement::p50_ns);
  med(&Measurement::p99_ns);
  med(&Measurement::p999_ns);
  med(&Measurement::queue_wait_p99_ns);
  med(&Measurement::target_cpu_pct);
  med(&Measurement::iops_per_cpu);
  med(&Measurement::hog_duty_pct);
  med(&Measurement::intervals);
  const auto [lo, hi] = std::minmax_element(ok.begin(), ok.end(), [](auto* a, auto* b) { return a->iops < b->iops; });
  c.iops_min = (*lo)->iops;
  c.iops_max = (*hi)->iops;
}

// Marks the best cell of each workload x contention group per objective.
void mark_best(std::vector<Cell>& cells) {
  std::map<std::pair<size_t, size_t>, std::vector<Cell*>> groups;
  for (auto& c : cells)
    if (c.summary.ok && c.summary.iops > 0) groups[{c.workload, c.contention}].push_back(&c);
  for (auto& [key, g] : groups) {
    auto best = [&](const char* name, auto better) {
      Cell* b = g.front();
      for (Cell* c : g)
        if (better(c->summary, b->summary)) b = c;
      b->best.push_back(name);
    };
    best("iops", [](const Measurement& a, const Measurement& b) { return a.iops > b.iops; });
    best("p99", [](const Measurement& a, const Measurement& b) { return a.p99_ns < b.p99_ns; });
    best("iops_per_cpu", [](const Measurement& a, const Measurement& b) { return a.iops_per_cpu > b.iops_per_cpu; });
  }
}

bool is_best(const Cell& c, const char* what) { return std::find(c.best.begin(), c.best.end(), what) != c.best.end(); }

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
  return "ok in " + std::to_string(rounds_ok(c)) + "/" + std::to_string(c.rounds.size()) + " rounds; FAILED " +
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
  std::printf("%-3s %-*s %-*s %-*s %s %9s %9s %10s %10s %10s %8s %11s  %s\n", "#", is, "setting", iw, "workload", ic,
              "contention", pad_left("IOPS", wi).c_str(), "MiB/s", "p50", "p99", "p99.9", "qwait p99", "tgt CPU",
              "IOPS/CPU", "status");
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    const Measurement& m = c.summary;
    char p99[32], ipc[32], cpu[32];
    std::snprintf(p99, sizeof p99, "%s%s", dur(m.p99_ns).c_str(), is_best(c, "p99") ? "*" : "");
    std::snprintf(ipc, sizeof ipc, "%.0f%s", m.iops_per_cpu, is_best(c, "iops_per_cpu") ? "*" : "");
    std::snprintf(cpu, sizeof cpu, "%.0f%%", m.target_cpu_pct);
    std::printf("%-3zu %-*s %-*s %-*s %s %9.1f %9s %10s %10s %10s %8s %11s  %s\n", i + 1, is,
                p.settings[c.setting].name.c_str(), iw, p.workloads[c.workload].name.c_str(), ic,
                p.contention[c.contention].name.c_str(), pad_left(iops[i], wi).c_str(), m.mib_s,
                dur(m.p50_ns).c_str(), p99, dur(m.p999_ns).c_str(), dur(m.queue_wait_p99_ns).c_str(), cpu, ipc,
                status_text(c).c_str());
  }
  std::printf("* best of its workload x contention group: max IOPS, min p99, max IOPS per target CPU.\n"
              "Latencies: perf's submit-to-completion (read and write); qwait p99: the engine's queue wait;\n"
              "tgt CPU: the engine workers' CPU time over the measured intervals (100%% = one CPU).\n");
  if (rounds > 1)
    std::printf("Each figure is the median over the rounds that ran ok (of %u); IOPS also (min\u2013max).\n", rounds);
}

// The figures of one round, or a cell's medians.
json measurement_json(const Measurement& m) {
  json j;
  j["status"] = m.ok ? "ok" : "failed";
  if (!m.error.empty()) j["error"] = m.error;
  j["target_cpus"] = m.target_cpus;
  j["initiator_cpus"] = m.initiator_cpus;
  j["hog"] = {{"cpus", m.hog_cpus}, {"measured_duty_pct", m.hog_duty_pct}};
  j["iops"] = m.iops;
  j["mib_s"] = m.mib_s;
  j["lat_p50_ns"] = m.p50_ns;
  j["lat_p99_ns"] = m.p99_ns;
  j["lat_p99_9_ns"] = m.p999_ns;
  j["queue_wait_p99_ns"] = m.queue_wait_p99_ns;
  j["target_cpu_pct"] = m.target_cpu_pct;
  j["iops_per_cpu"] = m.iops_per_cpu;
  j["engine_intervals"] = m.intervals;
  j["io_errors"] = m.io_errors;
  return j;
}

json cell_json(const ExperimentPlan& p, const Cell& c) {
  json j;
  j["setting"] = p.settings[c.setting].name;
  j["workload"] = p.workloads[c.workload].name;
  j["contention"] = p.contention[c.contention].name;
  j["setting_params"] = {{"threading", p.settings[c.setting].threading}, {"budgets", p.settings[c.setting].budgets}};
  if (!p.settings[c.setting].steering.is_null()) j["setting_params"]["steering"] = p.settings[c.setting].steering;
  j.update(measurement_json(c.summary));
  j["hog"]["load_pct"] = p.contention[c.contention].load_pct;
  j["rounds_ok"] = rounds_ok(c);
  j["iops_min"] = c.iops_min;
  j["iops_max"] = c.iops_max;
  j["best"] = c.best;
  json rounds = json::array();
  for (const auto& m : c.rounds) rounds.push_back(measurement_json(m));
  j["rounds"] = std::move(rounds);
  return j;
}

bool write_json(const std::string& path, const ExperimentOptions& o, const ExperimentPlan& p, unsigned rounds,
                const std::string& target, int64_t started, const std::vector<Cell>& cells) {
  json doc;
  doc["experiment"] = p.name;
  doc["file"] = o.file;
  doc["target"] = target;
  doc["started_ns"] = started;
  doc["version"] = NVMETUNE_VERSION;
  doc["online_cpus"] = control::format_cpu_list(control::online_cpus());
  doc["rounds"] = rounds;
  json arr = json::array();
  for (const auto& c : cells) arr.push_back(cell_json(p, c));
  doc["cells"] = std::move(arr);
  std::ofstream out(path);
  out << doc.dump(2) << "\n";
  return static_cast<bool>(out);
}

}  // namespace

void add_experiment_options(CLI::App& cmd, ExperimentOptions& o) {
  cmd.add_option("file", o.file, "The experiment, a JSON file (README.md \"nvmetune experiment\").")
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
  std::ifstream in(o.file);
  if (!in) {
    std::fprintf(stderr, "nvmetune experiment: cannot read %s\n", o.file.c_str());
    return exit_usage;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string dir = o.file.find('/') == std::string::npos ? "." : o.file.substr(0, o.file.rfind('/'));
  ExperimentParse parsed = parse_experiment(ss.str(), dir);
  if (!parsed.errors.empty()) {
    for (const auto& e : parsed.errors) std::fprintf(stderr, "%s: %s: %s\n", o.file.c_str(), e.path.c_str(), e.message.c_str());
    return exit_usage;
  }
  const ExperimentPlan& plan = parsed.plan;
  const std::string socket = o.socket.empty() ? plan.socket : o.socket;
  std::string error;
  auto target = socket.empty() ? start_embedded_target(plan, error) : connect_remote_target(plan, socket, error);
  if (!target) {
    std::fprintf(stderr, "nvmetune experiment: %s\n", error.c_str());
    return exit_failure;
  }
  const unsigned rounds = o.rounds ? o.rounds : plan.rounds;
  std::vector<Cell> cells;
  for (size_t k = 0; k < plan.contention.size(); ++k)
    for (size_t w = 0; w < plan.workloads.size(); ++w)
      for (size_t s = 0; s < plan.settings.size(); ++s) cells.push_back(Cell{s, w, k});
  std::fprintf(stderr,
               "nvmetune experiment: %s: %zu cells (%zu settings x %zu workloads x %zu contention levels) x %u "
               "round%s on %s\n",
               plan.name.empty() ? o.file.c_str() : plan.name.c_str(), cells.size(), plan.settings.size(),
               plan.workloads.size(), plan.contention.size(), rounds, rounds == 1 ? "" : "s",
               target->describe().c_str());

  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_experiment_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  const int64_t started = realtime_ns();
  const size_t runs = cells.size() * rounds;
  size_t run = 0;
  // Round by round rather than cell by cell: A B C A B C spreads the machine's drift over
  // every setting, where A A A B B B would hand it to whichever ran during the slow minute.
  for (unsigned round = 1; round <= rounds; ++round) {
    for (Cell& c : cells) {
      const std::string where =
          "[" + std::to_string(++run) + "/" + std::to_string(runs) + "] " +
          (rounds == 1 ? "" : "round " + std::to_string(round) + "/" + std::to_string(rounds) + ": ") + cell_name(plan, c);
      Measurement& m = c.rounds.emplace_back();
      if (g_interrupted.load()) {
        m.error = "skipped (interrupted)";
        continue;
      }
      std::fprintf(stderr, "nvmetune experiment: %s: running\n", where.c_str());
      run_cell(plan, *target, c, m);
      if (m.ok)
        std::fprintf(stderr,
                     "nvmetune experiment: %s: %.0f IOPS, p99 %s, queue wait p99 %s, target CPU %.0f%% "
                     "(target on %s, initiator on %s%s%s)\n",
                     where.c_str(), m.iops, dur(m.p99_ns).c_str(), dur(m.queue_wait_p99_ns).c_str(), m.target_cpu_pct,
                     m.target_cpus.c_str(), m.initiator_cpus.c_str(), m.hog_cpus.empty() ? "" : ", hog on ",
                     m.hog_cpus.c_str());
      else
        std::fprintf(stderr, "nvmetune experiment: %s: FAILED: %s\n", where.c_str(), m.error.c_str());
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  for (Cell& c : cells) summarize(c);
  mark_best(cells);
  print_table(plan, cells, rounds);
  std::fflush(stdout);
  if (!o.out.empty() && !write_json(o.out, o, plan, rounds, target->describe(), started, cells)) {
    std::fprintf(stderr, "nvmetune experiment: cannot write %s\n", o.out.c_str());
    return exit_failure;
  }
  const bool any_ok = std::any_of(cells.begin(), cells.end(), [](const Cell& c) { return c.summary.ok; });
  return any_ok ? exit_ok : exit_failure;
}

}  // namespace app
