// Summaries, best cells and the results document (experiment_results.hpp).
#include "engine/system/topology.hpp"
#include "lab/experiment/experiment_results.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>

namespace lab {

namespace {

using json = nlohmann::ordered_json;

// The failed rounds' errors, each once ("round 1,3: ..."): a cell usually fails the same way
// every round. With one round just the error, so a table reads as with no rounds at all.
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

// Each figure of s as the median over ok.
void medians(const std::vector<const Measurement*>& ok, Measurement& s) {
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
  med(&Measurement::target_p50_ns);
  med(&Measurement::target_p99_ns);
  med(&Measurement::target_p999_ns);
  med(&Measurement::target_cpu_pct);
  med(&Measurement::iops_per_cpu);
  med(&Measurement::hog_duty_pct);
  med(&Measurement::intervals);
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
  medians(ok, s);
  const auto [lo, hi] = std::minmax_element(ok.begin(), ok.end(), [](auto* a, auto* b) { return a->iops < b->iops; });
  c.iops_min = (*lo)->iops;
  c.iops_max = (*hi)->iops;
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
  j["target_lat_p50_ns"] = m.target_p50_ns;
  j["target_lat_p99_ns"] = m.target_p99_ns;
  j["target_lat_p99_9_ns"] = m.target_p999_ns;
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

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

size_t rounds_ok(const Cell& c) {
  return static_cast<size_t>(std::count_if(c.rounds.begin(), c.rounds.end(), [](const Measurement& m) { return m.ok; }));
}

void summarize_cells(std::vector<Cell>& cells) {
  for (Cell& c : cells) summarize(c);
}

void mark_best(std::vector<Cell>& cells) {
  std::map<std::pair<size_t, size_t>, std::vector<Cell*>> groups;
  for (auto& c : cells)
    if (c.summary.ok && c.summary.iops > 0) groups[{c.workload, c.contention}].push_back(&c);
  for (auto& group : groups) {
    auto& g = group.second;  // not a structured binding: clang 14 cannot capture those
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

json results_json(const ExperimentPlan& p, const std::vector<Cell>& cells, const ResultsMeta& meta) {
  json doc;
  doc["experiment"] = p.name;
  doc["file"] = meta.file;
  doc["target"] = meta.target;
  doc["started_ns"] = meta.started_ns;
  doc["version"] = meta.version;
  doc["online_cpus"] = sys::format_cpu_list(sys::online_cpus());
  doc["rounds"] = meta.rounds;
  json arr = json::array();
  for (const auto& c : cells) arr.push_back(cell_json(p, c));
  doc["cells"] = std::move(arr);
  return doc;
}

}  // namespace lab
