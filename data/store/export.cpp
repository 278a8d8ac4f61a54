// A run as CSV (long format, one value per line) or as one JSON document.
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "data/store/histogram_blob.hpp"
#include "engine/stats/histogram_layout.hpp"
#include "data/store/sqlite_stmt.hpp"
#include "data/store/store.hpp"

namespace data {

namespace {

// RFC 4180: a field holding a comma or a quote is quoted, quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json labels_object(const std::string& labels) {
  nlohmann::json o = nlohmann::json::object();
  size_t start = 0;
  while (start < labels.size()) {
    size_t comma = labels.find(',', start);
    if (comma == std::string::npos) comma = labels.size();
    const std::string kv = labels.substr(start, comma - start);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) o[kv.substr(0, eq)] = kv.substr(eq + 1);
    start = comma + 1;
  }
  return o;
}

nlohmann::json parse_or_string(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(text) : j;
}

struct HistRow {
  std::string name, labels;
  int64_t time_ns;
  stats::HistogramData h;
};

// Every histogram interval of the run, decoded; f is called once per row.
template <typename F>
void each_histogram(sqlite3* db, int64_t run, F&& f) {
  Stmt s(db,
         "SELECT se.name, se.labels, h.time_ns, h.count, h.sum_ns, h.min_ns, h.max_ns, h.buckets "
         "FROM histograms h JOIN series se ON se.id = h.source WHERE h.run = ?1 ORDER BY h.time_ns, se.labels, se.name");
  s.bind(1, run);
  while (s.row()) {
    HistRow r{s.text(0), s.text(1), s.i64(2), {}};
    r.h.count = static_cast<uint64_t>(s.i64(3));
    r.h.sum_ns = static_cast<uint64_t>(s.i64(4));
    r.h.min_ns = static_cast<uint64_t>(s.i64(5));
    r.h.max_ns = static_cast<uint64_t>(s.i64(6));
    if (add_decoded_buckets(s.blob(7), r.h)) f(r);
  }
}

constexpr std::pair<const char*, double> export_percentiles[] = {{"p50_ns", 50}, {"p90_ns", 90}, {"p99_ns", 99},
                                                                 {"p99_9_ns", 99.9}};

}  // namespace

bool Store::export_csv(int64_t run, std::ostream& out, std::string& error) {
  if (!get_run(run)) {
    error = "no run " + std::to_string(run);
    return false;
  }
  std::lock_guard lock(_mu);
  out << "time_ns,name,labels,value\n";
  Stmt s(_db,
         "SELECT sa.time_ns, se.name, se.labels, sa.value FROM samples sa JOIN series se ON se.id = sa.series "
         "WHERE sa.run = ?1 ORDER BY sa.time_ns, se.labels, se.name");
  s.bind(1, run);
  while (s.row()) out << s.i64(0) << ',' << csv_field(s.text(1)) << ',' << csv_field(s.text(2)) << ',' << s.f64(3) << '\n';
  // Histograms as their summaries: a CSV line per statistic keeps the one-value-per-line shape.
  each_histogram(_db, run, [&out](const HistRow& r) {
    auto line = [&](const char* stat, double v) {
      out << r.time_ns << ',' << csv_field(r.name + "." + stat) << ',' << csv_field(r.labels) << ',' << v << '\n';
    };
    line("count", static_cast<double>(r.h.count));
    line("mean_ns", r.h.mean());
    line("min_ns", static_cast<double>(r.h.min_ns));
    line("max_ns", static_cast<double>(r.h.max_ns));
    for (const auto& [name, p] : export_percentiles) line(name, r.h.percentile(p));
  });
  return static_cast<bool>(out);
}

bool Store::export_json(int64_t run, std::ostream& out, std::string& error) {
  const auto info = get_run(run);
  if (!info) {
    error = "no run " + std::to_string(run);
    return false;
  }
  using nlohmann::json;
  json doc;
  doc["run"] = {{"id", info->id},
                {"start_ns", info->start_ns},
                {"end_ns", info->end_ns ? json(info->end_ns) : json(nullptr)},
                {"engine_version", info->engine_version},
                {"host", info->host},
                {"note", info->note},
                {"intervals", info->intervals},
                {"dropped_intervals", info->dropped_intervals},
                {"profile", parse_or_string(info->profile_json)}};
  std::lock_guard lock(_mu);
  json series = json::array();
  {
    Stmt s(_db,
           "SELECT se.name, se.labels, sa.time_ns, sa.value FROM samples sa JOIN series se ON se.id = sa.series "
           "WHERE sa.run = ?1 ORDER BY se.labels, se.name, sa.time_ns");
    s.bind(1, run);
    std::string name, labels;
    while (s.row()) {
      if (series.empty() || s.text(0) != name || s.text(1) != labels) {
        name = s.text(0);
        labels = s.text(1);
        series.push_back({{"name", name}, {"labels", labels_object(labels)}, {"points", json::array()}});
      }
      series.back()["points"].push_back({s.i64(2), s.f64(3)});
    }
  }
  doc["series"] = std::move(series);
  json hists = json::array();
  each_histogram(_db, run, [&hists](const HistRow& r) {
    json buckets = json::array();
    for (size_t i = 0; i < r.h.counts.size(); ++i)
      if (r.h.counts[i]) buckets.push_back({stats::histogram_layout::lower_bound(i), stats::histogram_layout::upper_bound(i), r.h.counts[i]});
    json row = {{"time_ns", r.time_ns}, {"source", r.name}, {"labels", labels_object(r.labels)}, {"count", r.h.count},
                {"sum_ns", r.h.sum_ns}, {"min_ns", r.h.min_ns}, {"max_ns", r.h.max_ns}};
    for (const auto& [name, p] : export_percentiles) row[name] = r.h.percentile(p);
    row["buckets"] = std::move(buckets);
    hists.push_back(std::move(row));
  });
  doc["histograms"] = std::move(hists);
  json events = json::array();
  {
    Stmt s(_db, "SELECT time_ns, kind, detail FROM events WHERE run = ?1 ORDER BY time_ns, id");
    s.bind(1, run);
    while (s.row()) events.push_back({{"time_ns", s.i64(0)}, {"kind", s.text(1)}, {"detail", parse_or_string(s.text(2))}});
  }
  doc["events"] = std::move(events);
  json results = json::array();
  {
    Stmt s(_db, "SELECT time_ns, cell FROM experiment_results WHERE run = ?1 ORDER BY id");
    s.bind(1, run);
    while (s.row()) results.push_back({{"time_ns", s.i64(0)}, {"cell", parse_or_string(s.text(1))}});
  }
  doc["experiment_results"] = std::move(results);
  out << doc.dump(1) << '\n';
  return static_cast<bool>(out);
}

}  // namespace data
