// The read side: runs, series with downsampling, histogram merges, events, run comparison.
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "data/store/histogram_blob.hpp"
#include "data/store/sqlite_stmt.hpp"
#include "data/store/store.hpp"
#include "engine/stats/latency_sources.hpp"

namespace data {

namespace {

constexpr int64_t open_end = std::numeric_limits<int64_t>::max();

int64_t to_bound(int64_t v) { return v ? v : open_end; }

constexpr const char* run_columns =
    "SELECT r.id, r.start_ns, coalesce(r.end_ns, 0), r.engine_version, r.host, r.profile_json, r.note, "
    "r.dropped_intervals, (SELECT count(*) FROM intervals i WHERE i.run = r.id) FROM runs r ";

// The series that key a table's rows in a run. samples and histograms both lead their primary
// key with (run, series id), so the DISTINCT is an index-only skip scan.
// probes_only: only series an eBPF probe recorded (origin != engine).
std::vector<SeriesKey> series_referenced_by(sqlite3* db, std::string_view table, std::string_view column, int64_t run,
                                            bool probes_only = false) {
  std::vector<SeriesKey> out;
  Stmt s(db, "SELECT name, labels FROM series WHERE id IN (SELECT DISTINCT " + std::string(column) + " FROM " +
                 std::string(table) + " WHERE run = ?1)" + (probes_only ? " AND origin != 'engine'" : "") +
                 " ORDER BY labels != '', labels, name");
  s.bind(1, run);
  while (s.row()) out.push_back({s.text(0), s.text(1)});
  return out;
}

RunRow run_from(const Stmt& s) {
  return {s.i64(0), s.i64(1), s.i64(2), s.text(3), s.text(4), s.text(5), s.text(6),
          static_cast<uint64_t>(s.i64(7)), static_cast<uint64_t>(s.i64(8))};
}

}  // namespace

std::vector<RunRow> Store::list_runs() {
  std::lock_guard lock(_mu);
  std::vector<RunRow> out;
  Stmt s(_db, std::string(run_columns) + "ORDER BY r.id");
  while (s.row()) out.push_back(run_from(s));
  return out;
}

std::optional<RunRow> Store::get_run(int64_t run) {
  std::lock_guard lock(_mu);
  Stmt s(_db, std::string(run_columns) + "WHERE r.id = ?1");
  s.bind(1, run);
  if (!s.row()) return std::nullopt;
  return run_from(s);
}

std::vector<SeriesKey> Store::list_series(int64_t run) {
  std::lock_guard lock(_mu);
  return series_referenced_by(_db, "samples", "series", run);
}

std::vector<SeriesKey> Store::list_histogram_sources(int64_t run) {
  std::lock_guard lock(_mu);
  return series_referenced_by(_db, "histograms", "source", run);
}

std::vector<SeriesKey> Store::list_probe_histogram_sources(int64_t run) {
  std::lock_guard lock(_mu);
  return series_referenced_by(_db, "histograms", "source", run, true);
}

std::vector<SeriesKey> Store::list_probe_series(int64_t run) {
  std::lock_guard lock(_mu);
  return series_referenced_by(_db, "samples", "series", run, true);
}

// Buckets are equal slices of [from, to]; an open range is first closed to the series' own
// first and last sample so the slices cover data, not empty time.
std::vector<SeriesPoint> Store::series(int64_t run, const SeriesKey& key, TimeRange range, int buckets) {
  std::lock_guard lock(_mu);
  std::vector<SeriesPoint> out;
  const int64_t id = series_id_locked(key, false);
  if (!id) return out;
  int64_t from = range.from_ns, to = to_bound(range.to_ns);
  if (buckets <= 0) {
    Stmt s(_db, "SELECT time_ns, value FROM samples WHERE run=?1 AND series=?2 AND time_ns BETWEEN ?3 AND ?4 ORDER BY time_ns");
    s.bind(1, run).bind(2, id).bind(3, from).bind(4, to);
    while (s.row()) out.push_back({s.i64(0), s.f64(1), s.f64(1), s.f64(1), 1});
    return out;
  }
  Stmt span(_db, "SELECT min(time_ns), max(time_ns) FROM samples WHERE run=?1 AND series=?2 AND time_ns BETWEEN ?3 AND ?4");
  span.bind(1, run).bind(2, id).bind(3, from).bind(4, to);
  if (!span.row() || span.is_null(0)) return out;
  if (!range.from_ns) from = span.i64(0);
  if (!range.to_ns) to = span.i64(1);
  const int64_t width = std::max<int64_t>(1, (to - from) / buckets + 1);  // +1: `to` falls in the last bucket
  Stmt s(_db,
         "SELECT (time_ns - ?3) / ?5 AS b, min(value), max(value), avg(value), count(*) FROM samples "
         "WHERE run=?1 AND series=?2 AND time_ns BETWEEN ?3 AND ?4 GROUP BY b ORDER BY b");
  s.bind(1, run).bind(2, id).bind(3, from).bind(4, to).bind(5, width);
  while (s.row()) out.push_back({from + s.i64(0) * width, s.f64(1), s.f64(2), s.f64(3), static_cast<uint64_t>(s.i64(4))});
  return out;
}

stats::HistogramData Store::merge_histograms(int64_t run, const SeriesKey& source, TimeRange range) {
  std::lock_guard lock(_mu);
  stats::HistogramData total;
  const int64_t id = series_id_locked(source, false);
  if (!id) return total;
  Stmt s(_db,
         "SELECT count, sum_ns, min_ns, max_ns, buckets FROM histograms "
         "WHERE run=?1 AND source=?2 AND time_ns BETWEEN ?3 AND ?4");
  s.bind(1, run).bind(2, id).bind(3, range.from_ns).bind(4, to_bound(range.to_ns));
  while (s.row()) {
    stats::HistogramData h;
    h.count = static_cast<uint64_t>(s.i64(0));
    h.sum_ns = static_cast<uint64_t>(s.i64(1));
    h.min_ns = static_cast<uint64_t>(s.i64(2));
    h.max_ns = static_cast<uint64_t>(s.i64(3));
    if (!add_decoded_buckets(s.blob(4), h)) continue;  // a damaged row must not poison the merge
    total.merge(h);
  }
  return total;
}

std::vector<EventRow> Store::events(int64_t run, TimeRange range) {
  std::lock_guard lock(_mu);
  std::vector<EventRow> out;
  Stmt s(_db,
         "SELECT run, time_ns, kind, detail FROM events WHERE run=?1 AND time_ns BETWEEN ?2 AND ?3 ORDER BY time_ns, id");
  s.bind(1, run).bind(2, range.from_ns).bind(3, to_bound(range.to_ns));
  while (s.row()) out.push_back({s.i64(0), s.i64(1), s.text(2), s.text(3)});
  return out;
}

std::vector<uint64_t> Store::interval_seqs(int64_t run) {
  std::lock_guard lock(_mu);
  std::vector<uint64_t> out;
  Stmt s(_db, "SELECT seq FROM intervals WHERE run=?1 ORDER BY seq");
  s.bind(1, run);
  while (s.row()) out.push_back(static_cast<uint64_t>(s.i64(0)));
  return out;
}

std::vector<CompareRow> Store::compare(int64_t run_a, int64_t run_b) {
  std::lock_guard lock(_mu);
  std::vector<CompareRow> out;
  auto find = [&out](const std::string& metric, const std::string& labels) -> CompareRow& {
    for (auto& r : out)
      if (r.metric == metric && r.labels == labels) return r;
    out.push_back({metric, labels, std::nullopt, std::nullopt});
    return out.back();
  };
  // Totals only: queue ids differ between runs, so per-queue series do not pair up.
  Stmt avg(_db,
           "SELECT se.name, avg(sa.value) FROM samples sa JOIN series se ON se.id = sa.series "
           "WHERE sa.run = ?1 AND se.labels = '' GROUP BY se.name ORDER BY se.name");
  for (int side = 0; side < 2; ++side) {
    avg.bind(1, side ? run_b : run_a);
    while (avg.row()) {
      auto& r = find(avg.text(0), "");
      (side ? r.b : r.a) = avg.f64(1);
    }
    avg.reset();
  }
  static constexpr std::pair<const char*, double> pcts[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}};
  for (const auto& source : stats::latency_sources) {
    const char* src = source.key;
    const auto ha = merge_histograms(run_a, {src, ""}, {});
    const auto hb = merge_histograms(run_b, {src, ""}, {});
    if (ha.count == 0 && hb.count == 0) continue;
    for (const auto& [name, p] : pcts) {
      auto& r = find(std::string(src) + "." + name + "_ns", "");
      if (ha.count) r.a = ha.percentile(p);
      if (hb.count) r.b = hb.percentile(p);
    }
  }
  return out;
}

}  // namespace data
