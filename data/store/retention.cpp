// Retention (by age, by size) and VACUUM. Whole runs are the unit: half a run compares badly.
#include <sqlite3.h>

#include "data/store/sqlite_stmt.hpp"
#include "data/store/store.hpp"

namespace data {

namespace {

// Every table that holds rows of a run, keyed by its column naming the run.
constexpr std::pair<const char*, const char*> run_tables[] = {
    {"samples", "run"}, {"histograms", "run"}, {"events", "run"}, {"experiment_results", "run"}, {"intervals", "run"},
    {"runs", "id"}};

}  // namespace

int64_t Store::size_bytes() {
  std::lock_guard lock(_mu);
  Stmt s(_db, "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count()), "
              "(SELECT page_size FROM pragma_page_size())");
  return s.row() ? s.i64(0) * s.i64(1) : 0;
}

std::string Store::integrity_check() {
  std::lock_guard lock(_mu);
  Stmt s(_db, "PRAGMA integrity_check");
  std::string out;
  while (s.row()) {
    if (!out.empty()) out += '\n';
    out += s.text(0);
  }
  if (out.empty()) out.append("no answer: ").append(sqlite3_errmsg(_db));
  return out;
}

bool Store::vacuum(std::string& error) {
  std::lock_guard lock(_mu);
  // VACUUM rewrites the main file; the checkpoint first folds the WAL in so the file shown
  // afterwards is the real size.
  if (exec_locked("PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);", error)) return true;
  error = "vacuum: " + error;
  return false;
}

RetentionResult Store::apply_retention(int64_t max_age_ns, int64_t max_bytes, int64_t now_ns) {
  RetentionResult r;
  r.bytes_before = size_bytes();
  std::lock_guard lock(_mu);
  auto delete_run = [&](int64_t run) {
    std::string error;
    if (!exec_locked("BEGIN IMMEDIATE", error)) return false;
    for (const auto& [table, column] : run_tables) {
      Stmt d(_db, std::string("DELETE FROM ") + table + " WHERE " + column + " = ?1");
      if (!d.bind(1, run).run()) {
        exec_locked("ROLLBACK", error);
        return false;
      }
      r.rows_deleted += static_cast<uint64_t>(sqlite3_changes(_db));
    }
    if (!exec_locked("COMMIT", error)) return false;
    ++r.runs_deleted;
    return true;
  };
  if (max_age_ns > 0) {
    const int64_t cutoff = (now_ns ? now_ns : realtime_ns()) - max_age_ns;
    std::vector<int64_t> old;
    Stmt s(_db, "SELECT id FROM runs WHERE end_ns IS NOT NULL AND end_ns < ?1 ORDER BY id");
    s.bind(1, cutoff);
    while (s.row()) old.push_back(s.i64(0));
    for (int64_t run : old) delete_run(run);
  }
  if (max_bytes > 0) {
    for (;;) {
      if (size_bytes() <= max_bytes) break;
      Stmt s(_db, "SELECT id FROM runs WHERE end_ns IS NOT NULL ORDER BY end_ns, id LIMIT 1");
      if (!s.row() || !delete_run(s.i64(0))) break;
    }
  }
  std::string ignored;
  vacuum(ignored);
  r.bytes_after = size_bytes();
  return r;
}

}  // namespace data
