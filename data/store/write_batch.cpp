// Store::write_batch: a batch of sampler snapshots as rows, in one transaction. Which series a
// snapshot becomes is decided here (README.md "Store" lists them).
#include <sqlite3.h>

#include <functional>
#include <string>

#include "data/store/histogram_blob.hpp"
#include "data/store/sqlite_stmt.hpp"
#include "data/store/store.hpp"
#include "engine/stats/latency_sources.hpp"
#include "engine/stats/cpu_split.hpp"

namespace data {

namespace {

struct Statements {
  explicit Statements(sqlite3* db)
      : interval(db, "INSERT OR REPLACE INTO intervals (run, seq, time_ns, interval_ns, mode) VALUES (?1,?2,?3,?4,?5)"),
        sample(db, "INSERT OR REPLACE INTO samples (run, series, time_ns, value) VALUES (?1,?2,?3,?4)"),
        hist(db,
             "INSERT OR REPLACE INTO histograms (run, source, time_ns, count, sum_ns, min_ns, max_ns, buckets) "
             "VALUES (?1,?2,?3,?4,?5,?6,?7,?8)"),
        event(db, "INSERT INTO events (run, time_ns, kind, detail) VALUES (?1,?2,?3,?4)"),
        dropped(db, "UPDATE runs SET dropped_intervals = ?2 WHERE id = ?1") {}
  bool ok() const { return interval.ok() && sample.ok() && hist.ok() && event.ok() && dropped.ok(); }
  Stmt interval, sample, hist, event, dropped;
};


// Counters do not say which probe made them; their names do ("hardirq_ns", "syscall_count").
constexpr std::string_view probe_counter_origin = "probe";

std::vector<std::pair<std::string, std::string>> split_labels(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string kv = text.substr(start, end - start);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

struct RowWriter {
  Statements& st;
  int64_t run;
  int64_t time_ns;
  std::function<int64_t(const SeriesKey&, std::string_view origin)> id_of;
  bool ok = true;

  void sample(const std::string& name, const std::string& labels, double v, std::string_view origin = engine_origin) {
    const int64_t id = id_of({name, labels}, origin);
    ok = ok && id && st.sample.bind(1, run).bind(2, id).bind(3, time_ns).bind(4, v).run();
  }
  void histogram(const std::string& name, const std::string& labels, const stats::HistogramData& h,
                 std::string_view origin = engine_origin) {
    if (h.count == 0 || h.counts.empty()) return;  // an idle interval costs no row
    const int64_t id = id_of({name, labels}, origin);
    const std::string blob = encode_buckets(h);
    ok = ok && id &&
         st.hist.bind(1, run)
             .bind(2, id)
             .bind(3, time_ns)
             .bind(4, static_cast<int64_t>(h.count))
             .bind(5, static_cast<int64_t>(h.sum_ns))
             .bind(6, static_cast<int64_t>(h.min_ns))
             .bind(7, static_cast<int64_t>(h.max_ns))
             .bind_blob(8, blob.data(), blob.size())
             .run();
  }
  void counters(const stats::QueueRow& q, const std::string& labels) {
    sample("commands", labels, static_cast<double>(q.commands));
    sample("read_bytes", labels, static_cast<double>(q.read_bytes));
    sample("write_bytes", labels, static_cast<double>(q.write_bytes));
    sample("pdus_rx", labels, static_cast<double>(q.pdus_rx));
    sample("pdus_tx", labels, static_cast<double>(q.pdus_tx));
  }
  void histograms(const stats::QueueRow& q, const std::string& labels) {
    for (const auto& src : stats::latency_sources) histogram(src.key, labels, q.*src.row);
  }
  void worker(const stats::WorkerRow& w, uint64_t interval_ns) {
    const std::string labels = canonical_labels({{"worker", std::to_string(w.index)}});
    sample("io_work_passes", labels, static_cast<double>(w.io_work_passes));
    sample("busy_passes", labels, static_cast<double>(w.busy_passes));
    sample("idle_passes", labels, static_cast<double>(w.idle_passes));
    sample("wakeups", labels, static_cast<double>(w.wakeups));
    sample("cpu_ns", labels, static_cast<double>(w.cpu_ns));
    // busy_pct stays the CPU time over the interval, as stats.get's; idle_poll_pct is the part
    // of it a poller spent spinning with nothing to do (stats::cpu_split, the dashboard's split),
    // so a recorded poll-mode run does not read as a saturated worker.
    sample("busy_pct", labels, stats::percent_of(w.cpu_ns, interval_ns));
    const stats::CpuSplit split = stats::cpu_split(w, interval_ns);
    sample("idle_poll_ns", labels, static_cast<double>(split.idle_poll_ns));
    sample("idle_poll_pct", labels, stats::percent_of(split.idle_poll_ns, interval_ns));
    sample("queues", labels, static_cast<double>(w.queues));
  }
};

void write_snapshot(RowWriter& w, const stats::Snapshot& s, bool per_queue_histograms) {
  w.ok = w.ok && w.st.interval.bind(1, w.run)
                     .bind(2, static_cast<int64_t>(s.seq))
                     .bind(3, s.time_ns)
                     .bind(4, static_cast<int64_t>(s.interval_ns))
                     .bind(5, s.mode)
                     .run();
  const double secs = s.interval_ns ? static_cast<double>(s.interval_ns) / 1e9 : 0.0;
  w.sample("iops", "", static_cast<double>(s.iops()));
  w.sample("read_mib_s", "", secs ? static_cast<double>(s.total.read_bytes) / secs / 1048576.0 : 0.0);
  w.sample("write_mib_s", "", secs ? static_cast<double>(s.total.write_bytes) / secs / 1048576.0 : 0.0);
  w.counters(s.total, "");
  w.histograms(s.total, "");
  for (const auto& q : s.queues) {
    const std::string labels = canonical_labels({{"queue", std::to_string(q.queue_id)}});
    w.counters(q, labels);
    if (per_queue_histograms) w.histograms(q, labels);
  }
  for (const auto& wk : s.workers) w.worker(wk, s.interval_ns);
  // Probes: a histogram source per probe and label set, a counter per name and label set; the
  // probe's labels are already "k=v,k=v" (probes/), made canonical here like the engine's.
  for (const auto& p : s.probes) w.histogram(p.source, canonical_labels(split_labels(p.labels)), p.hist, p.source);
  for (const auto& c : s.probe_counters)
    w.sample(c.name, canonical_labels(split_labels(c.labels)), static_cast<double>(c.value), probe_counter_origin);
}

}  // namespace

bool Store::write_batch(int64_t run, const std::vector<stats::Snapshot>& snaps, const std::vector<stats::Event>& events,
                        const WriteOptions& opts, std::string& error) {
  std::lock_guard lock(_mu);
  if (!exec_locked("BEGIN IMMEDIATE", error)) return false;
  bool ok = true;
  {
    Statements st(_db);
    ok = st.ok();
    for (const auto& s : snaps) {
      if (!ok) break;
      RowWriter w{st, run, s.time_ns,
                  [this](const SeriesKey& k, std::string_view origin) { return series_id_locked(k, true, origin); }};
      write_snapshot(w, s, opts.per_queue_histograms);
      ok = w.ok;
    }
    for (const auto& e : events) {
      if (!ok) break;
      ok = st.event.bind(1, run).bind(2, e.time_ns).bind(3, e.kind).bind(4, e.detail_json.empty() ? "{}" : e.detail_json).run();
    }
    if (ok && opts.dropped_total) ok = st.dropped.bind(1, run).bind(2, static_cast<int64_t>(*opts.dropped_total)).run();
  }
  if (ok && exec_locked("COMMIT", error)) return true;
  if (error.empty()) error = sqlite3_errmsg(_db);
  std::string ignored;
  exec_locked("ROLLBACK", ignored);
  _series_ids.clear();  // ids inserted by the rolled-back transaction no longer exist
  return false;
}

}  // namespace data
