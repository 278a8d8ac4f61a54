#pragma once
// Versions of the SQLite store: the schema this build writes, and the SQLite library in use.
#include <string_view>

namespace data {

// Bumped on every incompatible change of the store's tables; kept in PRAGMA user_version.
inline constexpr int store_schema_version = 2;

// The SQLite library version actually loaded (sqlite3_libversion()), e.g. "3.40.1".
std::string_view sqlite_version();

}  // namespace data
