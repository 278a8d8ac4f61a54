#include "data/store_version.hpp"

#include <sqlite3.h>

namespace data {

std::string_view sqlite_version() { return sqlite3_libversion(); }

}  // namespace data
