// Running an experiment's cells (experiment_runner.hpp).
#include "lab/experiment/experiment_runner.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "engine/system/topology.hpp"
#include "lab/load/perf_options.hpp"
#include "data/store/store.hpp"
#include "engine/config/config_json.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/system/cpu_hog.hpp"

namespace lab {

namespace {

// The engine's statistics are polled this often during a cell (intervals are kept by seq).
constexpr auto stats_poll = std::chrono::milliseconds(100);
// Intervals may start this much before the measured window (connect time, clock reads).
constexpr int64_t window_slack_ns = 50'000'000;

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
  stats::HistogramData qw, target;
  uint64_t cpu = 0, span = 0;
  for (const auto* iv : use) {
    qw.merge(iv->queue_wait);
    target.merge(iv->target_latency);
    cpu += iv->worker_cpu_ns;
    span += iv->interval_ns;
  }
  m.intervals = static_cast<unsigned>(use.size());
  m.queue_wait_p99_ns = qw.percentile(99);
  if (target.count) {
    m.target_p50_ns = target.percentile(50);
    m.target_p99_ns = target.percentile(99);
    m.target_p999_ns = target.percentile(99.9);
  }
  m.target_cpu_pct = span ? 100.0 * static_cast<double>(cpu) / static_cast<double>(span) : 0;
  m.iops_per_cpu = m.target_cpu_pct > 0 ? m.iops / (m.target_cpu_pct / 100.0) : 0;
}

// Merges the cell's setting onto the target's base and applies it; the threading applied, or
// nullopt with m.error set.
std::optional<control::ThreadingConfig> apply_setting(const ExperimentPlan& plan, ExperimentTarget& target,
                                                      const Cell& c, Measurement& m) {
  const ExperimentSetting& s = plan.settings[c.setting];
  control::ThreadingConfig t = target.base_threading();
  control::BudgetConfig b = target.base_budgets();
  const std::string sp = "$.settings[" + std::to_string(c.setting) + "]";
  if (auto e = control::parse_threading(s.threading, sp + ".threading", t); !e.empty()) {
    m.error = errors_text(e);
    return std::nullopt;
  }
  if (auto e = control::parse_budgets(s.budgets, sp + ".budgets", b); !e.empty()) {
    m.error = errors_text(e);
    return std::nullopt;
  }
  if (m.error = target.apply(t, b); !m.error.empty()) return std::nullopt;
  if (m.error = target.steer(s.steering); !m.error.empty()) return std::nullopt;
  return t;
}

std::vector<unsigned> initiator_cpus(const ExperimentPlan& plan, const std::vector<unsigned>& target_cpus) {
  std::vector<unsigned> icpus = plan.initiator_cpus;
  if (plan.initiator_auto)
    for (unsigned cpu : sys::online_cpus())
      if (std::find(target_cpus.begin(), target_cpus.end(), cpu) == target_cpus.end()) icpus.push_back(cpu);
  return icpus;
}

double mean_duty_pct(const sys::CpuHog& hog) {
  double sum = 0;
  const auto hs = hog.stats();
  for (const auto& h : hs) sum += h.duty_pct();
  return hs.empty() ? 0 : sum / static_cast<double>(hs.size());
}

// The load's own figures: IOPS, MiB/s and command latency percentiles over reads and writes.
void load_figures(const initiator::LoadResult& r, const initiator::LoadSpec& spec, Measurement& m) {
  stats::HistogramData lat = r.read.h;
  lat.merge(r.write.h);
  m.io_errors = r.read.errors + r.write.errors;
  m.iops = r.runtime_s > 0 ? static_cast<double>(lat.count) / r.runtime_s : 0;
  m.mib_s = m.iops * spec.bs / 1048576.0;
  m.p50_ns = lat.percentile(50);
  m.p99_ns = lat.percentile(99);
  m.p999_ns = lat.percentile(99.9);
}

// Runs the cell's workload pinned to icpus while the hog (if running) competes; the load's and
// the engine's figures land in m.
void run_workload(const ExperimentPlan& plan, ExperimentTarget& target, const Cell& c,
                  const std::vector<unsigned>& icpus, sys::CpuHog& hog, const std::atomic<bool>& stop,
                  Measurement& m) {
  PerfOptions po = plan.workloads[c.workload].perf;
  const initiator::Target pt = target.perf_target();
  po.remote = "trtype:tcp traddr:" + pt.traddr + " trsvcid:" + std::to_string(pt.port) + " subnqn:" + pt.subnqn;
  po.cpus = icpus.empty() ? "" : sys::format_cpu_list(icpus);
  initiator::LoadSpec spec;
  if (auto err = resolve_perf_options(po, spec)) {
    m.error = "workload: " + *err;
    return;
  }
  spec.stop = &stop;

  IntervalCollector collector(target);
  const int64_t t0 = data::realtime_ns();
  const initiator::LoadResult r = initiator::run_load(spec);
  const int64_t t1 = data::realtime_ns();
  collector.stop();
  if (hog.running()) {
    m.hog_duty_pct = mean_duty_pct(hog);
    hog.stop();
  }
  if (r.status != initiator::LoadResult::Status::ok) {
    m.error = "perf: " + r.error;
    return;
  }
  load_figures(r, spec, m);
  engine_figures(collector.intervals(), t0 + static_cast<int64_t>(spec.ramp_s * 1e9), t1, m);
  if (!r.failure.empty()) {
    m.error = "perf: " + r.failure;
    return;
  }
  if (stop.load()) {
    m.error = "interrupted";
    return;
  }
  m.ok = true;
}

// Applies the setting, starts the contention, runs the workload and reads the engine's figures.
void run_cell(const ExperimentPlan& plan, ExperimentTarget& target, const Cell& c, const std::atomic<bool>& stop,
              Measurement& m) {
  const auto t = apply_setting(plan, target, c, m);
  if (!t) return;
  const std::vector<unsigned> tcpus = target_cpus_of(*t);
  m.target_cpus = sys::format_cpu_list(tcpus);

  const ExperimentContention& k = plan.contention[c.contention];
  sys::CpuHog hog;
  if (k.load_pct > 0) {
    sys::HogSpec hs{k.on_target ? tcpus : k.cpus, k.load_pct, k.period_us};
    m.hog_cpus = sys::format_cpu_list(hs.cpus);
    if (auto err = hog.start(hs); !err.empty()) {
      m.error = "contention: " + err;
      return;
    }
  }
  const std::vector<unsigned> icpus = initiator_cpus(plan, tcpus);
  m.initiator_cpus = icpus.empty() ? "any" : sys::format_cpu_list(icpus);
  std::this_thread::sleep_for(std::chrono::duration<double>(plan.settle_s));
  run_workload(plan, target, c, icpus, hog, stop, m);
}

}  // namespace

std::vector<unsigned> target_cpus_of(const control::ThreadingConfig& t) {
  const std::vector<unsigned> mask = t.cpus.empty() ? sys::online_cpus() : t.cpus;
  if (t.mode == "poll" && t.first_core >= 0) {
    const unsigned n = t.threads ? t.threads : static_cast<unsigned>(mask.size());
    std::vector<unsigned> out;
    for (unsigned i = 0; i < std::max(n, 1u); ++i) out.push_back(static_cast<unsigned>(t.first_core) + i);
    return out;
  }
  return mask;
}

std::vector<Cell> experiment_cells(const ExperimentPlan& plan) {
  std::vector<Cell> cells;
  for (size_t k = 0; k < plan.contention.size(); ++k)
    for (size_t w = 0; w < plan.workloads.size(); ++w)
      for (size_t s = 0; s < plan.settings.size(); ++s) cells.push_back(Cell{s, w, k, {}, {}, 0, 0, {}});
  return cells;
}

std::string cell_name(const ExperimentPlan& p, const Cell& c) {
  return p.settings[c.setting].name + " x " + p.workloads[c.workload].name + " x " + p.contention[c.contention].name;
}

void run_experiment_rounds(const ExperimentPlan& plan, ExperimentTarget& target, std::vector<Cell>& cells,
                           unsigned rounds, const std::atomic<bool>& stop, const ProgressFn& progress) {
  const size_t runs = cells.size() * rounds;
  size_t run = 0;
  // Round by round rather than cell by cell: A B C A B C spreads the machine's drift over
  // every setting, where A A A B B B would hand it to whichever ran during the slow minute.
  for (unsigned round = 1; round <= rounds; ++round) {
    for (Cell& c : cells) {
      RunProgress p{++run, runs, round, rounds, &c, nullptr};
      Measurement& m = c.rounds.emplace_back();
      if (stop.load()) {
        m.error = "skipped (interrupted)";
        continue;
      }
      if (progress) progress(p);
      run_cell(plan, target, c, stop, m);
      p.result = &m;
      if (progress) progress(p);
    }
  }
}

}  // namespace lab
