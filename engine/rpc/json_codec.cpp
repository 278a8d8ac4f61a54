// JSON encodings of statistics, events and threads (json_codec.hpp).
#include "engine/rpc/json_codec.hpp"

#include <cmath>
#include <fstream>
#include <string>

#include "engine/config/config.hpp"
#include "engine/core/wire_text.hpp"
#include "engine/stats/cpu_split.hpp"
#include "engine/stats/histogram_layout.hpp"
#include "engine/stats/latency_sources.hpp"
#include "engine/stats/stage_breakdown.hpp"

namespace control {

namespace {

using json = nlohmann::json;
namespace hl = stats::histogram_layout;

constexpr double ns_per_s = 1e9;
constexpr double bytes_per_mib = 1024.0 * 1024.0;

// Percentiles as integer nanoseconds: sub-nanosecond digits are noise.
uint64_t ns(double v) { return static_cast<uint64_t>(std::llround(std::max(v, 0.0))); }

double per_second(uint64_t value, uint64_t interval_ns) {
  return interval_ns ? static_cast<double>(value) * ns_per_s / static_cast<double>(interval_ns) : 0.0;
}

double round_to(double v, double unit) { return std::round(v / unit) * unit; }

json counters_json(const stats::QueueRow& q, bool buckets) {
  json j = {{"commands", q.commands},
            {"read_bytes", q.read_bytes},
            {"write_bytes", q.write_bytes},
            {"pdus_rx", q.pdus_rx},
            {"pdus_tx", q.pdus_tx}};
  for (const auto& src : stats::latency_sources) j[src.key] = histogram_json(q.*src.row, buckets);
  const auto b = stats::stage_breakdown(q);
  json stages = json::array();
  for (const auto& f : b.stages)
    stages.push_back({{"stage", f.source->key}, {"count", f.count}, {"share_ns", round_to(f.share_ns, 1)},
                      {"mean_ns", round_to(f.mean_ns, 1)}, {"p99_ns", round_to(f.p99_ns, 1)}});
  j["stage_breakdown"] = {{"commands", b.commands}, {"target_mean_ns", round_to(b.target_mean_ns, 1)}, {"stages", stages}};
  return j;
}

json queue_json(const stats::QueueRow& q, bool buckets) {
  json j = {{"queue_id", q.queue_id}, {"qid", q.qid},   {"cntlid", q.cntlid},
            {"subnqn", q.subnqn},     {"peer", q.peer}, {"worker", q.worker}, {"incoming_cpu", q.incoming_cpu},
            {"io_mechanism", q.io_mechanism}, {"arrival_clock", q.arrival_clock}};
  if (q.comp_vector >= 0) j["comp_vector"] = q.comp_vector;  // RDMA queues only
  j.update(counters_json(q, buckets));
  return j;
}

json worker_json(const stats::WorkerRow& w, uint64_t interval_ns) {
  json j = {{"index", w.index},
          {"tid", w.tid},
          {"name", w.name},
          {"cpus_allowed", sys::format_cpu_list(w.cpus_allowed)},
          {"io_work_passes", w.io_work_passes},
          {"busy_passes", w.busy_passes},
          {"idle_passes", w.idle_passes},
          {"wakeups", w.wakeups},
          {"cpu_ns", w.cpu_ns},
          {"busy_pct", round_to(stats::percent_of(w.cpu_ns, interval_ns), 0.1)},
          {"queues", w.queues}};
  const auto split = stats::cpu_split(w, interval_ns);
  // Rounded as busy_pct, which holds the spin: the spin never shows above it.
  j.update({{"busy_ns", split.busy_ns},
            {"idle_poll_ns", split.idle_poll_ns},
            {"idle_poll_pct", round_to(stats::percent_of(split.idle_poll_ns, interval_ns), 0.1)},
            {"sleep_ns", split.sleep_ns}});
  return j;
}

// The kernel's view of a thread's affinity: "Cpus_allowed_list:\t0-1".
json cpus_allowed_of(int tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  static constexpr std::string_view key = "Cpus_allowed_list:";
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const auto start = line.find_first_not_of(" \t", key.size());
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return nullptr;
}

}  // namespace

json histogram_json(const stats::HistogramData& h, bool buckets) {
  json j = {{"count", h.count},
            {"sum_ns", h.sum_ns},
            {"min_ns", h.min_ns},
            {"max_ns", h.max_ns},
            {"mean_ns", ns(h.mean())},
            {"p50_ns", ns(h.percentile(50))},
            {"p90_ns", ns(h.percentile(90))},
            {"p99_ns", ns(h.percentile(99))},
            {"p99_9_ns", ns(h.percentile(99.9))}};
  if (buckets) {
    json list = json::array();
    for (size_t i = 0; i < h.counts.size() && i < hl::buckets; ++i)
      if (h.counts[i]) list.push_back({hl::lower_bound(i), hl::upper_bound(i), h.counts[i]});
    j["buckets"] = std::move(list);
  }
  return j;
}

stats::HistogramData histogram_from_json(const json& j) {
  stats::HistogramData h;
  h.count = j.value("count", uint64_t{0});
  h.sum_ns = j.value("sum_ns", uint64_t{0});
  h.min_ns = j.value("min_ns", uint64_t{0});
  h.max_ns = j.value("max_ns", uint64_t{0});
  auto it = j.find("buckets");
  if (it == j.end() || !it->is_array()) return h;
  h.counts.assign(hl::buckets, 0);
  for (const auto& b : *it) {
    if (!b.is_array() || b.size() != 3 || !b[0].is_number_unsigned() || !b[2].is_number_unsigned()) continue;
    h.counts[hl::bucket_of(b[0].get<uint64_t>())] += b[2].get<uint64_t>();
  }
  return h;
}

json snapshot_json(const stats::Snapshot& s, bool buckets) {
  json queues = json::array();
  for (const auto& q : s.queues) queues.push_back(queue_json(q, buckets));
  json workers = json::array();
  for (const auto& w : s.workers) workers.push_back(worker_json(w, s.interval_ns));
  json probes = json::array();
  for (const auto& p : s.probes)
    probes.push_back({{"source", p.source}, {"labels", p.labels}, {"hist", histogram_json(p.hist, buckets)}});
  json probe_counters = json::array();
  for (const auto& c : s.probe_counters)
    probe_counters.push_back({{"name", c.name}, {"labels", c.labels}, {"value", c.value}});
  return {{"seq", s.seq},
          {"time_ns", s.time_ns},
          {"interval_ns", s.interval_ns},
          {"mode", s.mode},
          {"iops", s.iops()},
          {"read_mib_s", round_to(per_second(s.total.read_bytes, s.interval_ns) / bytes_per_mib, 0.01)},
          {"write_mib_s", round_to(per_second(s.total.write_bytes, s.interval_ns) / bytes_per_mib, 0.01)},
          {"total", counters_json(s.total, buckets)},
          {"queues", std::move(queues)},
          {"workers", std::move(workers)},
          {"probes", std::move(probes)},
          {"probe_counters", std::move(probe_counters)}};
}

json event_json(const stats::Event& e) {
  json detail = json::parse(e.detail_json, nullptr, false);
  // Not JSON: shown as text, escaped, since a JSON string must be UTF-8 (dump() would throw).
  if (detail.is_discarded()) detail = core::display_text(e.detail_json);
  return {{"seq", e.seq}, {"time_ns", e.time_ns}, {"kind", core::display_text(e.kind)}, {"detail", std::move(detail)}};
}

json thread_json(const engine::ThreadInfo& t) {
  return {{"tid", t.tid},
          {"name", t.name},
          {"role", t.role},
          {"cpus", t.cpus.empty() ? std::string("all") : sys::format_cpu_list(t.cpus)},
          {"cpus_allowed", cpus_allowed_of(t.tid)}};
}

namespace {

void queue_from_json(const json& j, stats::QueueRow& q) {
  q.queue_id = j.value("queue_id", uint64_t{0});
  q.qid = j.value("qid", uint16_t{0});
  q.cntlid = j.value("cntlid", uint16_t{0});
  q.subnqn = j.value("subnqn", std::string());
  q.peer = j.value("peer", std::string());
  q.io_mechanism = j.value("io_mechanism", std::string());
  q.comp_vector = j.value("comp_vector", -1);
  q.worker = j.value("worker", -1);
  q.incoming_cpu = j.value("incoming_cpu", -1);
  q.commands = j.value("commands", uint64_t{0});
  q.read_bytes = j.value("read_bytes", uint64_t{0});
  q.write_bytes = j.value("write_bytes", uint64_t{0});
  q.pdus_rx = j.value("pdus_rx", uint64_t{0});
  q.pdus_tx = j.value("pdus_tx", uint64_t{0});
  q.arrival_clock = j.value("arrival_clock", std::string());
  for (const auto& src : stats::latency_sources)
    if (auto it = j.find(src.key); it != j.end() && it->is_object()) q.*src.row = histogram_from_json(*it);
}

std::vector<unsigned> cpus_of(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || *it == "all") return {};
  return sys::parse_cpu_list(it->get<std::string>()).cpus;
}

}  // namespace

stats::Snapshot snapshot_from_json(const json& j) {
  stats::Snapshot s;
  s.seq = j.value("seq", uint64_t{0});
  s.time_ns = j.value("time_ns", int64_t{0});
  s.interval_ns = j.value("interval_ns", uint64_t{0});
  s.mode = j.value("mode", std::string());
  if (auto it = j.find("total"); it != j.end() && it->is_object()) queue_from_json(*it, s.total);
  for (const auto& q : j.value("queues", json::array())) queue_from_json(q, s.queues.emplace_back());
  for (const auto& w : j.value("workers", json::array())) {
    auto& row = s.workers.emplace_back();
    row.index = w.value("index", 0u);
    row.tid = w.value("tid", 0);
    row.name = w.value("name", std::string());
    row.cpus_allowed = cpus_of(w, "cpus_allowed");
    row.io_work_passes = w.value("io_work_passes", uint64_t{0});
    row.busy_passes = w.value("busy_passes", uint64_t{0});
    row.idle_passes = w.value("idle_passes", uint64_t{0});
    row.wakeups = w.value("wakeups", uint64_t{0});
    row.cpu_ns = w.value("cpu_ns", uint64_t{0});
    row.queues = w.value("queues", 0u);
  }
  // The eBPF probes' intervals (serve's snapshot provider): a remote GUI plots them too.
  for (const auto& p : j.value("probes", json::array())) {
    auto& h = s.probes.emplace_back();
    h.source = p.value("source", std::string());
    h.labels = p.value("labels", std::string());
    if (auto it = p.find("hist"); it != p.end() && it->is_object()) h.hist = histogram_from_json(*it);
  }
  for (const auto& c : j.value("probe_counters", json::array()))
    s.probe_counters.push_back({c.value("name", std::string()), c.value("labels", std::string()), c.value("value", uint64_t{0})});
  return s;
}

stats::Event event_from_json(const json& j) {
  stats::Event e;
  e.seq = j.value("seq", uint64_t{0});
  e.time_ns = j.value("time_ns", int64_t{0});
  e.kind = j.value("kind", std::string());
  auto it = j.find("detail");
  e.detail_json = it == j.end() ? "{}" : it->is_string() ? it->get<std::string>() : it->dump();
  return e;
}

engine::ThreadInfo thread_from_json(const json& j) {
  engine::ThreadInfo t;
  t.tid = j.value("tid", 0);
  t.name = j.value("name", std::string());
  t.role = j.value("role", std::string());
  t.cpus = cpus_of(j, "cpus");
  return t;
}

json topology_json(const sys::Topology& t) {
  json cpus = json::array();
  for (const auto& p : t.cpus())
    cpus.push_back({{"cpu", p.cpu}, {"core", p.core}, {"cache", p.cache}, {"numa", p.numa},
                    {"package", p.package}, {"cache_level", p.cache_level}, {"cache_bytes", p.cache_bytes}});
  return {{"cpus", std::move(cpus)}, {"load_error", t.load_error()}};
}

sys::Topology topology_from_json(const json& j) {
  std::vector<sys::CpuPlace> places;
  for (const auto& c : j.value("cpus", json::array())) {
    sys::CpuPlace p;
    p.cpu = c.value("cpu", 0u);
    p.core = c.value("core", 0u);
    p.cache = c.value("cache", 0u);
    p.numa = c.value("numa", 0u);
    p.package = c.value("package", 0u);
    p.cache_level = c.value("cache_level", 0u);
    p.cache_bytes = c.value("cache_bytes", uint64_t{0});
    places.push_back(p);
  }
  return sys::Topology(std::move(places));
}

}  // namespace control
