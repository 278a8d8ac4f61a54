// JSON paths (json_path.hpp).
#include "engine/json/json_path.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace control {

namespace {

bool is_identifier(std::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Orders paths as a reader scans a document: by key, array indices numerically
// ("[2]" before "[10]"), a parent before its children.
bool path_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      uint64_t x = 0, y = 0;
      auto ea = std::from_chars(a.data() + i, a.data() + a.size(), x).ptr;
      auto eb = std::from_chars(b.data() + j, b.data() + b.size(), y).ptr;
      if (x != y) return x < y;
      i = static_cast<size_t>(ea - a.data());
      j = static_cast<size_t>(eb - b.data());
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::string member_path(std::string_view parent, std::string_view key) {
  if (is_identifier(key)) return std::string(parent) + "." + std::string(key);
  return std::string(parent) + "[" + json_quote(key) + "]";
}

std::string index_path(std::string_view parent, size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

bool path_within(std::string_view path, std::string_view prefix) {
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}

std::string json_quote(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

void sort_by_path(std::vector<ConfigError>& errors) {
  std::stable_sort(errors.begin(), errors.end(),
                   [](const ConfigError& a, const ConfigError& b) { return path_less(a.path, b.path); });
}

}  // namespace control
