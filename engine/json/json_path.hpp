#pragma once
// JSON paths as errors name them ($.a.b[2], $["odd key"]) and the order a reader scans them in.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json/config_error.hpp"

namespace control {

// $.a.b for identifiers, $["odd key"] otherwise (JSONPath bracket notation).
std::string member_path(std::string_view parent, std::string_view key);
std::string index_path(std::string_view parent, size_t i);

// True when path is `prefix` itself or lies inside it.
bool path_within(std::string_view path, std::string_view prefix);

// s as a JSON string literal, quotes and escapes included: how messages quote values.
std::string json_quote(std::string_view s);

// Orders errors as a reader scans the document (array indices numerically, parents first).
void sort_by_path(std::vector<ConfigError>& errors);

}  // namespace control
