#pragma once
// A prepared statement with RAII and typed binds/columns: the store's only way to talk SQL.
// Private to data/store/.
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace data {

class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql) : _db(db) {
    if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &_s, nullptr) !=
        SQLITE_OK)
      _s = nullptr;
  }
  ~Stmt() { sqlite3_finalize(_s); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return _s != nullptr; }
  std::string error() const { return sqlite3_errmsg(_db); }

  Stmt& bind(int i, int64_t v) { sqlite3_bind_int64(_s, i, v); return *this; }
  Stmt& bind(int i, double v) { sqlite3_bind_double(_s, i, v); return *this; }
  Stmt& bind(int i, std::string_view v) {
    sqlite3_bind_text(_s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind_blob(int i, const void* p, size_t n) {
    sqlite3_bind_blob(_s, i, p, static_cast<int>(n), SQLITE_STATIC);  // caller keeps p alive until step()
    return *this;
  }
  Stmt& bind_null(int i) { sqlite3_bind_null(_s, i); return *this; }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return _s ? sqlite3_step(_s) : SQLITE_MISUSE; }
  bool row() { return step() == SQLITE_ROW; }
  // One step; true when it ended with SQLITE_DONE (or a row). Resets for reuse but keeps the
  // bindings: the hot insert paths rebind every parameter anyway.
  bool run() {
    int rc = step();
    if (_s) sqlite3_reset(_s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW;
  }
  void reset() {
    if (!_s) return;
    sqlite3_reset(_s);
    sqlite3_clear_bindings(_s);
  }

  int64_t i64(int c) const { return sqlite3_column_int64(_s, c); }
  double f64(int c) const { return sqlite3_column_double(_s, c); }
  bool is_null(int c) const { return sqlite3_column_type(_s, c) == SQLITE_NULL; }
  std::string text(int c) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(_s, c));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(_s, c))) : std::string();
  }
  std::string_view blob(int c) const {
    auto p = static_cast<const char*>(sqlite3_column_blob(_s, c));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(_s, c))) : std::string_view();
  }

 private:
  sqlite3* _db;
  sqlite3_stmt* _s = nullptr;
};

}  // namespace data
