#pragma once
// The store's schema and its forward migrations (private to data/store/).
#include <string>

struct sqlite3;

namespace data::schema {

// Brings the database to data::store_schema_version, one migration per transaction. A version
// above the newest known is refused with a message naming both versions (the file is left as
// it is). With create = false a database without tables (version 0) is refused too.
bool migrate(sqlite3* db, bool create, std::string& error);

}  // namespace data::schema
