#pragma once
// data::Store: nvmetune's SQLite database (one file, WAL mode, schema versioned with forward
// migrations). Runs, time series, per-interval histograms, events, profiles and experiment
// results. No Qt (DESIGN.md). The write path for sampler snapshots is data::Writer (writer.hpp),
// a thread that batches them into transactions; everything here is synchronous.
//
// Thread safety: one Store may be used from several threads; calls are serialized by a mutex
// around the single SQLite connection. Another process (or another Store on the same file) may
// read while one writes (WAL).
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/stats/histogram_data.hpp"
#include "engine/stats/snapshot.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace data {

// $XDG_DATA_HOME/nvmetune/nvmetune.db, else ~/.local/share/nvmetune/nvmetune.db (HOME from the
// environment, else the password database). The directory is not created here (Store::open does).
std::string default_db_path();

// A saved tuning profile; json is the profile document, stored verbatim (validation is the
// profile model's job, not the store's).
struct ProfileRow {
  std::string name;
  int64_t created_ns = 0;  // CLOCK_REALTIME of the first save under this name
  std::string json;
};

struct RunRow {
  int64_t id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;            // 0 while the run is open (or its process died)
  std::string engine_version;
  std::string host;
  std::string profile_json;      // the configuration/profile snapshot at start
  std::string note;
  uint64_t dropped_intervals = 0;  // snapshots the writer dropped because the disk fell behind
  uint64_t intervals = 0;          // snapshots stored
};

struct RunInfo {  // begin_run()'s input
  int64_t start_ns = 0;          // 0 = now
  std::string engine_version;
  std::string host;              // empty = gethostname()
  std::string profile_json;      // e.g. control::to_json(engine.config()).dump()
  std::string note;
};

// series.origin of what the engine measures itself; probes' series carry the probe's name.
inline constexpr std::string_view engine_origin = "engine";

struct SeriesKey {
  std::string name;    // "iops", "commands", "read_bytes", "cpu_ns", "read_latency", ...
  std::string labels;  // canonical "k=v,k=v" sorted by key ("" = engine total), e.g. "queue=3"
  bool operator==(const SeriesKey&) const = default;
};

// One downsampling bucket of a series: [start_ns, start_ns + width) of the requested range.
struct SeriesPoint {
  int64_t start_ns = 0;
  double min = 0, max = 0, avg = 0;
  uint64_t n = 0;  // samples in the bucket (buckets without samples are not returned)
};

struct EventRow {
  int64_t run = 0;
  int64_t time_ns = 0;
  std::string kind;
  std::string detail_json;
};

struct ExperimentResultRow {
  int64_t run = 0;
  int64_t time_ns = 0;
  std::string cell_json;
};

// One line of compare(): a series' average over each run, or a histogram source's percentile.
struct CompareRow {
  std::string metric;   // "iops", "read_latency.p99", ...
  std::string labels;
  std::optional<double> a, b;  // absent: the run has no such data
};

// Time ranges are CLOCK_REALTIME nanoseconds, inclusive at both ends; a bound of 0 is open
// (from = 0: the run's start, to = 0: its end).
struct TimeRange {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

struct RetentionResult {
  uint64_t runs_deleted = 0;
  uint64_t rows_deleted = 0;
  int64_t bytes_before = 0, bytes_after = 0;
};

class Store {
 public:
  // Opens (creating the file and its directory when missing) and migrates the schema forward.
  // nullptr with `error` set when the file cannot be opened, is not a database, or holds a
  // newer schema than this build knows ("created by a newer nvmetune": never touched then).
  static std::unique_ptr<Store> open(const std::string& path, std::string& error);
  // Like open() but never creates nor migrates: for commands that only read (db runs, ...).
  static std::unique_ptr<Store> open_existing(const std::string& path, std::string& error);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return _path; }
  int schema_version();  // PRAGMA user_version

  // ---- profiles (name is the key). save_profile upserts: a new name gets created_ns = now;
  // saving over an existing name replaces its json and KEEPS its created_ns (the profile's
  // birth, not its last edit). False with `error` on an empty name or a database error.
  bool save_profile(const std::string& name, const std::string& json, std::string& error);
  std::optional<ProfileRow> load_profile(const std::string& name);
  std::vector<ProfileRow> list_profiles();  // by name
  // False with error "no profile NAME" when absent.
  bool delete_profile(const std::string& name, std::string& error);

  // ---- runs, events, experiment results (the API `serve` and `experiment` use).
  // A new run row; returns its id, or 0 with `error` set.
  int64_t begin_run(const RunInfo& info, std::string& error);
  // Stamps the run's end (end_ns = 0: now) and its dropped-interval count.
  void end_run(int64_t run, int64_t end_ns = 0, std::optional<uint64_t> dropped = std::nullopt);
  // One event (time_ns = 0: now). detail_json should be a JSON object ("{}" when empty).
  bool add_event(int64_t run, int64_t time_ns, const std::string& kind, const std::string& detail_json);
  // One experiment cell's result (a JSON object describing the cell and what it measured).
  bool save_experiment_result(int64_t run, const std::string& cell_json, int64_t time_ns = 0);
  std::vector<ExperimentResultRow> experiment_results(int64_t run);

  // ---- writing snapshots (Writer uses these; tests may call them directly).
  // Writes each snapshot (its counters as samples, its histograms as compressed rows, one
  // interval row) and events in ONE transaction. False (and nothing written) on error, with
  // error set (e.g. "database or disk is full").
  struct WriteOptions {
    bool per_queue_histograms = true;  // else only the engine totals' histograms
    std::optional<uint64_t> dropped_total;  // stamp the run's dropped count in the same txn
  };
  bool write_batch(int64_t run, const std::vector<stats::Snapshot>& snaps, const std::vector<stats::Event>& events,
                   const WriteOptions& opts, std::string& error);

  // ---- queries.
  std::vector<RunRow> list_runs();
  std::optional<RunRow> get_run(int64_t run);
  std::vector<SeriesKey> list_series(int64_t run);          // series with samples in the run
  std::vector<SeriesKey> list_histogram_sources(int64_t run);
  // Histogram sources and sample series of the run that eBPF probes recorded (origin != engine).
  std::vector<SeriesKey> list_probe_histogram_sources(int64_t run);
  std::vector<SeriesKey> list_probe_series(int64_t run);
  // The series over range, in `buckets` equal buckets (min/max/avg each); buckets <= 0: raw.
  std::vector<SeriesPoint> series(int64_t run, const SeriesKey& key, TimeRange range, int buckets);
  // Every stored interval of source merged: percentiles through stats::HistogramData.
  stats::HistogramData merge_histograms(int64_t run, const SeriesKey& source, TimeRange range);
  std::vector<EventRow> events(int64_t run, TimeRange range);
  // Averages of every total series and p50/p90/p99/p99.9 of every total histogram source.
  std::vector<CompareRow> compare(int64_t run_a, int64_t run_b);
  // Interval sequence numbers stored for the run, ascending (crash test, gaps = drops).
  std::vector<uint64_t> interval_seqs(int64_t run);
  // The run's intervals in range rebuilt as snapshots of the engine totals (seq, time, mode,
  // counters and the five latency histograms; no queues or workers), oldest first, at most
  // max: what the GUI scrolls back into (history.cpp).
  std::vector<stats::Snapshot> history(int64_t run, TimeRange range, size_t max);

  // ---- export (export.cpp): the whole run. False with error on no such run.
  bool export_csv(int64_t run, std::ostream& out, std::string& error);
  bool export_json(int64_t run, std::ostream& out, std::string& error);

  // ---- maintenance (retention.cpp).
  // Deletes the data of runs that ended more than max_age_ns ago (0: no age limit), then the
  // oldest ended runs while the database holds more than max_bytes (0: no limit); open runs
  // are never deleted. VACUUMs afterwards so the file shrinks.
  RetentionResult apply_retention(int64_t max_age_ns, int64_t max_bytes, int64_t now_ns = 0);
  bool vacuum(std::string& error);
  int64_t size_bytes();  // page_count * page_size (the main file's live size)
  std::string integrity_check();  // "ok" or SQLite's complaint

  // Implementation helpers shared by the store's .cpp files (not for callers).
  sqlite3* db() const { return _db; }

 private:
  Store(std::string path, sqlite3* db) : _path(std::move(path)), _db(db) {}
  static std::unique_ptr<Store> open_impl(const std::string& path, bool create, std::string& error);
  // origin: recorded in a series created here ("engine" or a probe's name).
  int64_t series_id_locked(const SeriesKey& key, bool create, std::string_view origin = engine_origin);
  bool exec_locked(const char* sql, std::string& error);

  std::string _path;
  sqlite3* _db = nullptr;
  std::recursive_mutex _mu;  // the connection; recursive: queries compose (compare -> merge)
  struct KeyHash {
    size_t operator()(const SeriesKey& k) const;
  };
  std::unordered_map<SeriesKey, int64_t, KeyHash> _series_ids;  // cache, guarded by _mu
};

// "k=v,k=v" from pairs, sorted by key: the one spelling of a label set.
std::string canonical_labels(std::vector<std::pair<std::string, std::string>> labels);
int64_t realtime_ns();

}  // namespace data
