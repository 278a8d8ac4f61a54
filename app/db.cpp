// `nvmetune db SUBCOMMAND`: each subcommand opens the database read-mostly (never creating it)
// and prints plain text, one record per line, for people and for grep/awk.
#include "app/db.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "app/exit_code.hpp"
#include "engine/stats/latency_sources.hpp"
#include "data/store/store.hpp"
#include "engine/config/config.hpp"

namespace app {

namespace {

constexpr int64_t ns_per_s = 1'000'000'000;

struct DbOptions {
  std::string db_path;
  int64_t run = 0, run_b = 0;
  std::string name, labels, source, format = "csv", output, max_age, max_size;
  double from_s = NAN, to_s = NAN;  // seconds from the run's start
  int buckets = 0;
};

std::string local_time(int64_t ns) {
  if (ns == 0) return "-";
  const std::time_t secs = static_cast<std::time_t>(ns / ns_per_s);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::unique_ptr<data::Store> open_db(const DbOptions& o) {
  std::string error;
  auto s = data::Store::open_existing(o.db_path.empty() ? data::default_db_path() : o.db_path, error);
  if (!s) std::fprintf(stderr, "nvmetune db: %s\n", error.c_str());
  return s;
}

std::optional<data::RunRow> find_run(data::Store& s, int64_t id) {
  auto r = s.get_run(id);
  if (!r) std::fprintf(stderr, "nvmetune db: no run %lld in %s (see `nvmetune db runs`)\n", static_cast<long long>(id),
                       s.path().c_str());
  return r;
}

data::TimeRange range_of(const data::RunRow& r, const DbOptions& o) {
  data::TimeRange t;
  if (!std::isnan(o.from_s)) t.from_ns = r.start_ns + static_cast<int64_t>(o.from_s * 1e9);
  if (!std::isnan(o.to_s)) t.to_ns = r.start_ns + static_cast<int64_t>(o.to_s * 1e9);
  return t;
}

std::string with_labels(const std::string& name, const std::string& labels) {
  return labels.empty() ? name : name + "{" + labels + "}";
}

// "30d", "12h", "15m", "90s" or plain seconds.
std::optional<int64_t> parse_age(const std::string& s) {
  if (s.empty()) return 0;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = s.substr(used);
  double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : -1;
  if (mult < 0 || v < 0) return std::nullopt;
  return static_cast<int64_t>(v * mult * 1e9);
}

int cmd_runs(const DbOptions& o) {
  auto s = open_db(o);
  if (!s) return exit_failure;
  std::printf("%-5s %-19s %-19s %9s %7s %-16s %-8s %s\n", "run", "start", "end", "intervals", "dropped", "host",
              "version", "note");
  for (const auto& r : s->list_runs())
    std::printf("%-5lld %-19s %-19s %9llu %7llu %-16s %-8s %s\n", static_cast<long long>(r.id),
                local_time(r.start_ns).c_str(), r.end_ns ? local_time(r.end_ns).c_str() : "(open)",
                static_cast<unsigned long long>(r.intervals), static_cast<unsigned long long>(r.dropped_intervals),
                r.host.c_str(), r.engine_version.c_str(), r.note.c_str());
  return exit_ok;
}

int cmd_show(const DbOptions& o) {
  auto s = open_db(o);
  if (!s) return exit_failure;
  auto r = find_run(*s, o.run);
  if (!r) return exit_failure;
  std::printf("run %lld\n  start     %s\n  end       %s\n", static_cast<long long>(r->id), local_time(r->start_ns).c_str(),
              r->end_ns ? local_time(r->end_ns).c_str() : "(open: still recording, or the process died)");
  if (r->end_ns) std::printf("  duration  %.1f s\n", static_cast<double>(r->end_ns - r->start_ns) / 1e9);
  std::printf("  host      %s\n  version   %s\n  note      %s\n  intervals %llu stored, %llu dropped\n",
              r->host.c_str(), r->engine_version.c_str(), r->note.c_str(), static_cast<unsigned long long>(r->intervals),
              static_cast<unsigned long long>(r->dropped_intervals));
  std::printf("  series    %zu\n  events    %zu\n", s->list_series(r->id).size(), s->events(r->id, {}).size());
  for (const char* name : {"iops", "read_mib_s", "write_mib_s"}) {
    double sum = 0;
    uint64_t n = 0;
    for (const auto& p : s->series(r->id, {name, ""}, {}, 0)) sum += p.avg, ++n;
    if (n) std::printf("  %-9s %.1f average\n", name, sum / static_cast<double>(n));
  }
  auto print_hist = [&](const std::string& title, const data::SeriesKey& key) {
    const auto h = s->merge_histograms(r->id, key, {});
    if (h.count)
      std::printf("  %-15s n=%llu p50=%.1f us p99=%.1f us max=%.1f us\n", title.c_str(),
                  static_cast<unsigned long long>(h.count), h.percentile(50) / 1e3, h.percentile(99) / 1e3,
                  static_cast<double>(h.max_ns) / 1e3);
  };
  // The target latency and its stages (runs recorded before they existed have the engine's own).
  for (const auto& src : stats::latency_sources) print_hist(src.key, {src.key, ""});
  // eBPF probes' totals (per-thread/workqueue/... histograms: db percentiles --source NAME --labels ...).
  for (const auto& k : s->list_probe_histogram_sources(r->id))
    if (k.labels.empty()) print_hist("probe " + k.name, k);
  return exit_ok;
}

int cmd_series(const DbOptions& o) {
  auto s = open_db(o);
  if (!s) return exit_failure;
  auto r = find_run(*s, o.run);
  if (!r) return exit_failure;
  if (o.name.empty()) {
    for (const auto& k : s->list_series(r->id)) std::printf("%s\n", with_labels(k.name, k.labels).c_str());
    return exit_ok;
  }
  const auto pts = s->series(r->id, {o.name, o.labels}, range_of(*r, o), o.buckets);
  if (pts.empty()) {
    std::fprintf(stderr, "nvmetune db: run %lld has no samples of %s in that range (list them: db series %lld)\n",
                 static_cast<long long>(r->id), with_labels(o.name, o.labels).c_str(), static_cast<long long>(r->id));
    return exit_failure;
  }
  std::printf("%-10s %14s %14s %14s %6s\n", "t_s", "min", "max", "avg", "n");
  for (const auto& p : pts)
    std::printf("%-10.3f %14.6g %14.6g %14.6g %6llu\n", static_cast<double>(p.start_ns - r->start_ns) / 1e9, p.min, p.max,
                p.avg, static_cast<unsigned long long>(p.n));
  return exit_ok;
}

int cmd_events(const DbOptions& o) {
  auto s = open_db(o);
  if (!s) return exit_failure;
  auto r = find_run(*s, o.run);
  if (!r) return exit_failure;
  for (const auto& e : s->events(r->id, range_of(*r, o)))
    std::printf("%-10.3f %-12s %s\n", static_cast<double>(e.time_ns - r->start_ns) / 1e9, e.kind.c_str(),
                e.detail_json.c_str());
  return exit_ok;
}

int cmd_percentiles(const DbOptions& o) {
  auto s = open_db(o);
  if (!s) return exit_failure;
  auto r = find_run(*s, o.run);
  if (!r) return exit_failure;
  const auto h = s->merge_histograms(r->id, {o.source, o.labels}, range_of(*r, o));
  if (h.count == 0) {
    std::fprintf(stderr, "nvmetune db: run %lld has no %s histogram in that range (sources:", static_cast<long long>(r->id),
                 with_labels(o.source, o.labels).c_str());
    for (const auto& k : s->list_histogram_sources(r->id))
      if (k.labels.empty()) std::fprintf(stderr, " %s", k.name.c_str());
    std::fprintf(stderr, ")\n");
    return exit_failure;
  }
  std::printf("source %s\ncount %llu\nmean_us %.3f\nmin_us %.3f\n", with_labels(o.source, o.labels).c_str(),
              static_cast<unsigned long long>(h.count), h.mean() / 1e3, static_cast<double>(h.min_ns) / 1e3);
  for (double p : {50.0, 90.0, 99.0, 99.9}) std::printf("p%g_us %.3f\n", p, h.percentile(p) / 1e3);
  std::printf("max_us %.3f\n", static_cast<double>(h.max_ns) / 1e3);
  return exit_ok;
}

int cmd_compare(const DbOptions& o) {
  auto s = open_db(o);
  if (!s) return exit_failure;
  if (!find_run(*s, o.run) || !find_run(*s, o.run_b)) return exit_failure;
  std::printf("%-28s %16s %16s %9s\n", "metric", ("run " + std::to_string(o.run)).c_str(),
              ("run " + std::to_string(o.run_b)).c_str(), "change");
  auto cell = [](std::optional<double> v) { return v ? std::to_string(*v) : std::string("-"); };
  for (const auto& c : s->compare(o.run, o.run_b)) {
    std::string change = "-";
    if (c.a && c.b && *c.a != 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%+.1f%%", (*c.b - *c.a) / std::fabs(*c.a) * 100.0);
      change = buf;
    }
    std::printf("%-28s %16s %16s %9s\n", c.metric.c_str(), cell(c.a).c_str(), cell(c.b).c_str(), change.c_str());
  }
  return exit_ok;
}

int cmd_export(const DbOptions& o) {
  auto s = open_db(o);
  if (!s) return exit_failure;
  if (!find_run(*s, o.run)) return exit_failure;
  std::ofstream file;
  if (!o.output.empty()) {
    file.open(o.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::fprintf(stderr, "nvmetune db: cannot write %s\n", o.output.c_str());
      return exit_failure;
    }
  }
  std::ostream& out = o.output.empty() ? std::cout : file;
  std::string error;
  const bool ok = o.format == "json" ? s->export_json(o.run, out, error) : s->export_csv(o.run, out, error);
  out.flush();
  if (!ok || !out) {
    std::fprintf(stderr, "nvmetune db: export: %s\n", error.empty() ? "write failed" : error.c_str());
    return exit_failure;
  }
  return exit_ok;
}

int cmd_vacuum(const DbOptions& o) {
  const auto age = parse_age(o.max_age);
  if (!age) {
    std::fprintf(stderr, "nvmetune db vacuum: --max-age %s: expected e.g. 30d, 12h, 15m, 90s\n", o.max_age.c_str());
    return exit_usage;
  }
  uint64_t max_size = 0;
  if (!o.max_size.empty() && !control::parse_size(o.max_size, max_size)) {
    std::fprintf(stderr, "nvmetune db vacuum: --max-size %s: expected a size such as 500MiB or 2G\n", o.max_size.c_str());
    return exit_usage;
  }
  auto s = open_db(o);
  if (!s) return exit_failure;
  const auto r = s->apply_retention(*age, static_cast<int64_t>(max_size));
  std::printf("deleted %llu run(s) (%llu rows); %.1f MiB -> %.1f MiB\n", static_cast<unsigned long long>(r.runs_deleted),
              static_cast<unsigned long long>(r.rows_deleted), static_cast<double>(r.bytes_before) / 1048576.0,
              static_cast<double>(r.bytes_after) / 1048576.0);
  return exit_ok;
}

void add_range(CLI::App* c, DbOptions& o) {
  c->add_option("--from", o.from_s, "Start, in seconds from the run's start.")->type_name("S");
  c->add_option("--to", o.to_s, "End, in seconds from the run's start.")->type_name("S");
}

}  // namespace

std::function<int()> attach_db(CLI::App& cmd) {
  auto o = std::make_shared<DbOptions>();
  auto chosen = std::make_shared<std::function<int(const DbOptions&)>>();
  cmd.add_option("--db", o->db_path, "The database (default: " + data::default_db_path() + ").")->type_name("PATH");
  cmd.require_subcommand(1);
  cmd.footer("Exit codes: 0 done; 1 no such database or run, unreadable file, a database written by a\n"
             "newer nvmetune; 2 bad command line. Record a run with `nvmetune serve --db PATH`.");
  auto sub = [&cmd, chosen](const char* name, const char* help, int (*fn)(const DbOptions&)) {
    CLI::App* c = cmd.add_subcommand(name, help);
    c->fallthrough();  // --db may come after the subcommand too
    c->callback([chosen, fn] { *chosen = fn; });
    return c;
  };
  sub("runs", "List the recorded runs.", cmd_runs);
  auto* show = sub("show", "Summary of one run.", cmd_show);
  show->add_option("RUN", o->run, "Run id (db runs).")->required();
  auto* series = sub("series", "Without --name: the run's series; with it: the series over time.", cmd_series);
  series->add_option("RUN", o->run)->required();
  series->add_option("--name", o->name, "Series name, e.g. iops, commands, read_bytes, busy_pct.")->type_name("N");
  series->add_option("--labels", o->labels, "Label set, e.g. queue=3 or worker=0 (default: engine total).")
      ->type_name("K=V[,K=V]");
  series->add_option("--buckets", o->buckets, "Downsample into B buckets (min/max/avg each); 0 = every sample.")
      ->type_name("B")
      ->check(CLI::Range(0, 100000));
  add_range(series, *o);
  auto* events = sub("events", "The run's events (configuration changes, connects, ...).", cmd_events);
  events->add_option("RUN", o->run)->required();
  add_range(events, *o);
  auto* pct = sub("percentiles", "Latency percentiles of one histogram source over a time range.", cmd_percentiles);
  pct->add_option("RUN", o->run)->required();
  pct->add_option("--source", o->source,
                  "A histogram key: target_read_latency, target_write_latency, target_other_latency\n"
                  "(kernel arrival stamp -> response handed to the socket), a stage (stage_scheduling,\n"
                  "stage_queue, stage_receive, stage_data_wait, backend_latency, stage_send), the engine's\n"
                  "own (queue_wait, read_latency, write_latency, other_latency), or a probe's name.")
      ->type_name("S")
      ->required();
  pct->add_option("--labels", o->labels, "e.g. queue=3 (default: engine total).")->type_name("K=V");
  add_range(pct, *o);
  auto* cmp = sub("compare", "Two runs side by side: averages and latency percentiles.", cmd_compare);
  cmp->add_option("RUN_A", o->run)->required();
  cmp->add_option("RUN_B", o->run_b)->required();
  auto* exp = sub("export", "A run as CSV (samples and histogram summaries) or JSON (everything).", cmd_export);
  exp->add_option("RUN", o->run)->required();
  exp->add_option("--format", o->format, "csv or json (csv).")->check(CLI::IsMember({"csv", "json"}));
  exp->add_option("-o,--output", o->output, "Write to FILE instead of stdout.")->type_name("FILE");
  auto* vac = sub("vacuum", "Apply retention, then VACUUM (shrinks the file).", cmd_vacuum);
  vac->add_option("--max-age", o->max_age, "Delete runs that ended longer ago than D (30d, 12h, 15m, 90s).")
      ->type_name("D");
  vac->add_option("--max-size", o->max_size, "Then delete the oldest ended runs until the data fits S (e.g. 1GiB).")
      ->type_name("S");
  return [o, chosen] { return *chosen ? (*chosen)(*o) : exit_usage; };
}

}  // namespace app
