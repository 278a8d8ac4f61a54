// Store: opening the database, and the small row APIs (profiles, runs, events, experiment
// results). Snapshots: writer.cpp/snapshot_rows.cpp; queries: queries.cpp.
#include "data/store/store.hpp"

#include <pwd.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>

#include "data/store/schema.hpp"
#include "data/store/sqlite_stmt.hpp"

namespace data {

namespace {

// The writer commits every batch; the busy timeout covers a reader checkpointing or another
// process (`nvmetune db vacuum`) holding the write lock briefly.
constexpr int busy_timeout_ms = 5000;

std::string home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/tmp";
}

std::string hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string default_db_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::string base = xdg && *xdg ? std::string(xdg) : home_dir() + "/.local/share";
  return base + "/nvmetune/nvmetune.db";
}

std::string canonical_labels(std::vector<std::pair<std::string, std::string>> labels) {
  std::sort(labels.begin(), labels.end());
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ',';
    out += k + '=' + v;
  }
  return out;
}

size_t Store::KeyHash::operator()(const SeriesKey& k) const {
  return std::hash<std::string>{}(k.name) * 31 ^ std::hash<std::string>{}(k.labels);
}

std::unique_ptr<Store> Store::open(const std::string& path, std::string& error) {
  return open_impl(path, true, error);
}

std::unique_ptr<Store> Store::open_existing(const std::string& path, std::string& error) {
  return open_impl(path, false, error);
}

std::unique_ptr<Store> Store::open_impl(const std::string& path, bool create, std::string& error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!create && !fs::exists(path, ec)) {
    error = path + ": no such database (create one with `nvmetune serve --db " + path + "`)";
    return nullptr;
  }
  if (create) {
    const fs::path dir = fs::path(path).parent_path();
    if (!dir.empty() && !fs::exists(dir, ec) && !fs::create_directories(dir, ec)) {
      error = path + ": cannot create " + dir.string() + ": " + ec.message();
      return nullptr;
    }
  }
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    error = path + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return nullptr;
  }
  std::unique_ptr<Store> store(new Store(path, db));
  sqlite3_busy_timeout(db, busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);
  // WAL: readers (GUI, `nvmetune db`) never block the writer. synchronous=NORMAL: a commit
  // survives a crash of the process (kill -9); only a power loss may lose the last commits,
  // which for statistics is the right trade for a sync per checkpoint instead of per commit.
  // A 32 MiB page cache: a batch appends to every series' own b-tree leaf (the samples are
  // keyed by series first), and with 64 queues those are ~350 leaves that should stay cached.
  std::string why;
  if (!store->exec_locked("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-32768;", why) ||
      !schema::migrate(db, create, why)) {
    if (why == "file is not a database") why = "not an SQLite database (file is not a database)";
    error = path + ": " + why;
    return nullptr;
  }
  return store;
}

Store::~Store() {
  _series_ids.clear();
  sqlite3_close_v2(_db);
}

bool Store::exec_locked(const char* sql, std::string& error) {
  char* msg = nullptr;
  if (sqlite3_exec(_db, sql, nullptr, nullptr, &msg) == SQLITE_OK) return true;
  error = msg ? msg : sqlite3_errmsg(_db);
  sqlite3_free(msg);
  return false;
}

int Store::schema_version() {
  std::lock_guard lock(_mu);
  Stmt s(_db, "PRAGMA user_version");
  return s.row() ? static_cast<int>(s.i64(0)) : -1;
}

// ---------------------------------------------------------------- profiles

bool Store::save_profile(const std::string& name, const std::string& json, std::string& error) {
  if (name.empty()) {
    error = "a profile needs a name";
    return false;
  }
  std::lock_guard lock(_mu);
  const int64_t now = realtime_ns();
  Stmt s(_db,
         "INSERT INTO profiles (name, created_ns, updated_ns, json) VALUES (?1, ?2, ?2, ?3) "
         "ON CONFLICT (name) DO UPDATE SET json = excluded.json, updated_ns = excluded.updated_ns");
  if (!s.ok() || !s.bind(1, name).bind(2, now).bind(3, json).run()) {
    error = "saving profile " + name + ": " + sqlite3_errmsg(_db);
    return false;
  }
  return true;
}

std::optional<ProfileRow> Store::load_profile(const std::string& name) {
  std::lock_guard lock(_mu);
  Stmt s(_db, "SELECT name, created_ns, json FROM profiles WHERE name = ?1");
  s.bind(1, name);
  if (!s.row()) return std::nullopt;
  return ProfileRow{s.text(0), s.i64(1), s.text(2)};
}

std::vector<ProfileRow> Store::list_profiles() {
  std::lock_guard lock(_mu);
  std::vector<ProfileRow> out;
  Stmt s(_db, "SELECT name, created_ns, json FROM profiles ORDER BY name");
  while (s.row()) out.push_back({s.text(0), s.i64(1), s.text(2)});
  return out;
}

bool Store::delete_profile(const std::string& name, std::string& error) {
  std::lock_guard lock(_mu);
  Stmt s(_db, "DELETE FROM profiles WHERE name = ?1");
  if (!s.ok() || !s.bind(1, name).run()) {
    error = "deleting profile " + name + ": " + sqlite3_errmsg(_db);
    return false;
  }
  if (sqlite3_changes(_db) == 0) {
    error = "no profile " + name;
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- runs, events, results

int64_t Store::begin_run(const RunInfo& info, std::string& error) {
  std::lock_guard lock(_mu);
  Stmt s(_db, "INSERT INTO runs (start_ns, engine_version, host, profile_json, note) VALUES (?1, ?2, ?3, ?4, ?5)");
  s.bind(1, info.start_ns ? info.start_ns : realtime_ns())
      .bind(2, info.engine_version)
      .bind(3, info.host.empty() ? hostname() : info.host)
      .bind(4, info.profile_json.empty() ? std::string("{}") : info.profile_json)
      .bind(5, info.note);
  if (!s.ok() || !s.run()) {
    error = "creating a run: " + std::string(sqlite3_errmsg(_db));
    return 0;
  }
  return sqlite3_last_insert_rowid(_db);
}

void Store::end_run(int64_t run, int64_t end_ns, std::optional<uint64_t> dropped) {
  std::lock_guard lock(_mu);
  Stmt s(_db, "UPDATE runs SET end_ns = ?2, dropped_intervals = coalesce(?3, dropped_intervals) WHERE id = ?1");
  s.bind(1, run).bind(2, end_ns ? end_ns : realtime_ns());
  if (dropped) s.bind(3, static_cast<int64_t>(*dropped));
  s.run();
}

bool Store::add_event(int64_t run, int64_t time_ns, const std::string& kind, const std::string& detail_json) {
  std::lock_guard lock(_mu);
  Stmt s(_db, "INSERT INTO events (run, time_ns, kind, detail) VALUES (?1, ?2, ?3, ?4)");
  return s.bind(1, run)
      .bind(2, time_ns ? time_ns : realtime_ns())
      .bind(3, kind)
      .bind(4, detail_json.empty() ? std::string("{}") : detail_json)
      .run();
}

bool Store::save_experiment_result(int64_t run, const std::string& cell_json, int64_t time_ns) {
  std::lock_guard lock(_mu);
  Stmt s(_db, "INSERT INTO experiment_results (run, time_ns, cell) VALUES (?1, ?2, ?3)");
  return s.bind(1, run).bind(2, time_ns ? time_ns : realtime_ns()).bind(3, cell_json).run();
}

std::vector<ExperimentResultRow> Store::experiment_results(int64_t run) {
  std::lock_guard lock(_mu);
  std::vector<ExperimentResultRow> out;
  Stmt s(_db, "SELECT run, time_ns, cell FROM experiment_results WHERE run = ?1 ORDER BY id");
  s.bind(1, run);
  while (s.row()) out.push_back({s.i64(0), s.i64(1), s.text(2)});
  return out;
}

int64_t Store::series_id_locked(const SeriesKey& key, bool create, std::string_view origin) {
  if (auto it = _series_ids.find(key); it != _series_ids.end()) return it->second;
  Stmt find(_db, "SELECT id FROM series WHERE name = ?1 AND labels = ?2");
  find.bind(1, key.name).bind(2, key.labels);
  int64_t id = 0;
  if (find.row()) {
    id = find.i64(0);
  } else if (create) {
    Stmt ins(_db, "INSERT INTO series (name, labels, origin) VALUES (?1, ?2, ?3)");
    if (ins.bind(1, key.name).bind(2, key.labels).bind(3, std::string(origin)).run()) id = sqlite3_last_insert_rowid(_db);
  }
  // Only cache ids that exist: a rolled-back insert must not leave a stale id behind, so the
  // writer clears the cache when a batch fails.
  if (id) _series_ids.emplace(key, id);
  return id;
}

}  // namespace data
