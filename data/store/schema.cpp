// The schema as a list of forward migrations: migrations[i] takes user_version i to i + 1.
// Never edit a shipped migration; append one (and bump store_schema_version).
#include "data/store/schema.hpp"

#include <sqlite3.h>

#include <array>
#include <string>

#include "data/store_version.hpp"
#include "engine/stats/histogram_layout.hpp"

namespace data::schema {

namespace {

// Version 1. Why these shapes:
//  - samples and histograms are WITHOUT ROWID with the primary key they are queried by
//    (run, series, time): a range scan is one b-tree walk and no separate index is paid for;
//  - series are shared across runs (name + canonical labels), so a sample row is four numbers;
//  - histogram buckets are a BLOB of varints (index gap, count) of the non-zero buckets only:
//    a latency histogram touches a few dozen of its 1152 buckets;
//  - meta records the histogram layout the BLOBs were written with (histogram_layout.hpp:
//    data stored with one layout cannot be read with another).
constexpr const char* v1 = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER,
  engine_version TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  profile_json TEXT NOT NULL DEFAULT '{}',
  note TEXT NOT NULL DEFAULT '',
  dropped_intervals INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE series (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  labels TEXT NOT NULL DEFAULT '',
  UNIQUE (name, labels)
);
CREATE TABLE intervals (
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  interval_ns INTEGER NOT NULL,
  mode TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run, seq)
) WITHOUT ROWID;
CREATE TABLE samples (
  run INTEGER NOT NULL,
  series INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run, series, time_ns)
) WITHOUT ROWID;
CREATE TABLE histograms (
  run INTEGER NOT NULL,
  source INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  count INTEGER NOT NULL,
  sum_ns INTEGER NOT NULL,
  min_ns INTEGER NOT NULL,
  max_ns INTEGER NOT NULL,
  buckets BLOB NOT NULL,
  PRIMARY KEY (run, source, time_ns)
) WITHOUT ROWID;
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  run INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_run_time ON events (run, time_ns);
CREATE TABLE profiles (
  name TEXT PRIMARY KEY,
  created_ns INTEGER NOT NULL,
  updated_ns INTEGER NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE experiment_results (
  id INTEGER PRIMARY KEY,
  run INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  cell TEXT NOT NULL
);
CREATE INDEX experiment_results_by_run ON experiment_results (run, id);
)sql";

// Version 2: series measured outside the engine (eBPF probes, probes/) are stored as series
// like the engine's (a probe histogram is a histogram source "runqlat" with labels "tid=..";
// a probe counter a sample series), and `origin` says which probe: "engine" for the engine's
// own, else the probe's name. Old series are the engine's.
constexpr const char* v2 = R"sql(
ALTER TABLE series ADD COLUMN origin TEXT NOT NULL DEFAULT 'engine';
)sql";

constexpr std::array<const char*, 2> migrations = {v1, v2};
static_assert(migrations.size() == store_schema_version, "one migration per schema version");

int user_version(sqlite3* db) {
  sqlite3_stmt* s = nullptr;
  int v = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  return v;
}

bool exec(sqlite3* db, const std::string& sql, std::string& error) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) == SQLITE_OK) return true;
  error = msg ? msg : sqlite3_errmsg(db);
  sqlite3_free(msg);
  return false;
}

std::string layout_rows() {
  namespace hl = stats::histogram_layout;
  return "INSERT OR REPLACE INTO meta VALUES ('histogram_sub_bits', '" + std::to_string(hl::sub_bits) +
         "'), ('histogram_max_bits', '" + std::to_string(hl::max_bits) + "');";
}

bool apply(sqlite3* db, int from, std::string& error) {
  std::string sql = "BEGIN IMMEDIATE;" + std::string(migrations[static_cast<size_t>(from)]);
  if (from == 0) sql += layout_rows();
  sql += "PRAGMA user_version = " + std::to_string(from + 1) + "; COMMIT;";
  if (exec(db, sql, error)) return true;
  error = "migrating the schema from version " + std::to_string(from) + ": " + error;
  std::string ignored;
  exec(db, "ROLLBACK", ignored);
  return false;
}

// The BLOBs are only readable with the layout they were written with.
bool check_layout(sqlite3* db, std::string& error) {
  namespace hl = stats::histogram_layout;
  sqlite3_stmt* s = nullptr;
  std::string sub, max;
  if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &s, nullptr) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::string k = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      std::string v = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
      if (k == "histogram_sub_bits") sub = v;
      if (k == "histogram_max_bits") max = v;
    }
  }
  sqlite3_finalize(s);
  if (sub == std::to_string(hl::sub_bits) && max == std::to_string(hl::max_bits)) return true;
  error = "the database's histograms use layout sub_bits=" + sub + " max_bits=" + max + ", this build uses " +
          std::to_string(hl::sub_bits) + "/" + std::to_string(hl::max_bits);
  return false;
}

}  // namespace

bool migrate(sqlite3* db, bool create, std::string& error) {
  int v = user_version(db);
  if (v < 0) {
    error = sqlite3_errmsg(db);
    return false;
  }
  if (v > store_schema_version) {
    error = "the database has schema version " + std::to_string(v) + ", newer than this nvmetune knows (" +
            std::to_string(store_schema_version) + "): it was written by a newer nvmetune; upgrade nvmetune " +
            "or use another --db";
    return false;
  }
  if (v == 0 && !create) {
    error = "not an nvmetune database (no schema)";
    return false;
  }
  for (; v < store_schema_version; ++v) {
    if (!apply(db, v, error)) return false;
  }
  return check_layout(db, error);
}

}  // namespace data::schema
