// Store::history: stored intervals read back as total-only snapshots, so a client draws a
// recorded run with the same code it draws live intervals with.
#include <map>

#include "data/store/histogram_blob.hpp"
#include "data/store/sqlite_stmt.hpp"
#include "data/store/store.hpp"
#include "engine/stats/latency_sources.hpp"

namespace data {

namespace {

int64_t upper(int64_t to_ns) { return to_ns ? to_ns : INT64_MAX; }

using Counter = uint64_t stats::QueueRow::*;
using HistogramMember = stats::HistogramData stats::QueueRow::*;

constexpr std::pair<const char*, Counter> counters[] = {{"commands", &stats::QueueRow::commands},
                                                        {"read_bytes", &stats::QueueRow::read_bytes},
                                                        {"write_bytes", &stats::QueueRow::write_bytes},
                                                        {"pdus_rx", &stats::QueueRow::pdus_rx},
                                                        {"pdus_tx", &stats::QueueRow::pdus_tx}};


}  // namespace

std::vector<stats::Snapshot> Store::history(int64_t run, TimeRange range, size_t max) {
  std::lock_guard lock(_mu);
  std::vector<stats::Snapshot> out;
  std::map<int64_t, size_t> by_time;
  Stmt iv(_db,
          "SELECT seq, time_ns, interval_ns, mode FROM intervals WHERE run=?1 AND time_ns BETWEEN ?2 AND ?3 "
          "ORDER BY seq LIMIT ?4");
  iv.bind(1, run).bind(2, range.from_ns).bind(3, upper(range.to_ns)).bind(4, static_cast<int64_t>(max));
  while (iv.row()) {
    auto& s = out.emplace_back();
    s.seq = static_cast<uint64_t>(iv.i64(0));
    s.time_ns = iv.i64(1);
    s.interval_ns = static_cast<uint64_t>(iv.i64(2));
    s.mode = iv.text(3);
    by_time[s.time_ns] = out.size() - 1;
  }
  if (out.empty()) return out;
  const TimeRange got{out.front().time_ns, out.back().time_ns};
  for (const auto& [name, member] : counters) {
    const int64_t id = series_id_locked({name, ""}, false);
    if (!id) continue;
    Stmt s(_db, "SELECT time_ns, value FROM samples WHERE run=?1 AND series=?2 AND time_ns BETWEEN ?3 AND ?4");
    s.bind(1, run).bind(2, id).bind(3, got.from_ns).bind(4, got.to_ns);
    while (s.row())
      if (auto it = by_time.find(s.i64(0)); it != by_time.end()) out[it->second].total.*member = static_cast<uint64_t>(s.f64(1));
  }
  for (const auto& src : stats::latency_sources) {
    const HistogramMember member = src.row;
    const int64_t id = series_id_locked({src.key, ""}, false);
    if (!id) continue;
    Stmt s(_db,
           "SELECT time_ns, count, sum_ns, min_ns, max_ns, buckets FROM histograms "
           "WHERE run=?1 AND source=?2 AND time_ns BETWEEN ?3 AND ?4");
    s.bind(1, run).bind(2, id).bind(3, got.from_ns).bind(4, got.to_ns);
    while (s.row()) {
      auto it = by_time.find(s.i64(0));
      if (it == by_time.end()) continue;
      stats::HistogramData h;
      h.count = static_cast<uint64_t>(s.i64(1));
      h.sum_ns = static_cast<uint64_t>(s.i64(2));
      h.min_ns = static_cast<uint64_t>(s.i64(3));
      h.max_ns = static_cast<uint64_t>(s.i64(4));
      if (add_decoded_buckets(s.blob(5), h)) out[it->second].total.*member = std::move(h);
    }
  }
  return out;
}

}  // namespace data
