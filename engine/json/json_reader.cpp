// Typed reads with errors by path (json_reader.hpp).
#include "engine/json/json_reader.hpp"

#include <algorithm>
#include <limits>

#include "engine/json/json_path.hpp"
#include "engine/config/size_text.hpp"

namespace control {

namespace {

using json = nlohmann::json;

// Levenshtein distance, for "did you mean" on unknown keys.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::nullopt_t JsonErrors::type_error(const std::string& path, std::string_view expected, const json& got) {
  error(path, "wrong type: expected " + std::string(expected) + ", got " + got.type_name() + " " + got.dump());
  return std::nullopt;
}

std::string unknown_key_message(std::string_view key, std::span<const std::string_view> allowed) {
  std::string_view best;
  size_t best_distance = 3;  // suggest only close matches
  for (auto k : allowed) {
    if (size_t d = edit_distance(key, k); d < best_distance) { best = k; best_distance = d; }
  }
  if (!best.empty()) return "unknown key " + json_quote(key) + " (did you mean " + json_quote(best) + "?)";
  std::string list;
  for (auto k : allowed) list += (list.empty() ? "" : ", ") + std::string(k);
  return "unknown key " + json_quote(key) + " (expected one of: " + list + ")";
}

bool JsonReader::object(const json& v, const std::string& path, KeyList allowed, KeyList required) {
  if (!v.is_object()) {
    error(path, std::string("expected an object, got ") + v.type_name());
    return false;
  }
  for (const auto& [key, value] : v.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      error(member_path(path, key), unknown_key_message(key, allowed));
  }
  for (auto key : required) {
    if (!v.contains(key)) error(member_path(path, key), "missing required key");
  }
  return true;
}

const json* JsonReader::array(const json& obj, std::string_view key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return nullptr;
  if (!it->is_array()) {
    error(member_path(path, key), std::string("expected an array, got ") + it->type_name());
    return nullptr;
  }
  return &*it;
}

std::optional<std::string> JsonReader::string(const json& obj, std::string_view key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (!it->is_string()) return type_error(member_path(path, key), "a string", *it);
  return it->get<std::string>();
}

std::optional<bool> JsonReader::boolean(const json& obj, std::string_view key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (!it->is_boolean()) return type_error(member_path(path, key), "true or false", *it);
  return it->get<bool>();
}

std::optional<uint32_t> JsonReader::u32(const json& obj, std::string_view key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  auto p = member_path(path, key);
  auto v = unsigned_value(*it, p);
  if (!v) return std::nullopt;
  if (*v > std::numeric_limits<uint32_t>::max()) {
    error(p, "out of range: " + std::to_string(*v) + " does not fit in 32 bits");
    return std::nullopt;
  }
  return static_cast<uint32_t>(*v);
}

std::optional<uint64_t> JsonReader::size(const json& obj, std::string_view key, const std::string& path,
                                         bool zero_allowed) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  auto p = member_path(path, key);
  std::optional<uint64_t> v;
  if (it->is_string()) {
    uint64_t bytes = 0;
    if (parse_size(it->get<std::string>(), bytes)) v = bytes;
    else error(p, "malformed size " + it->dump() +
                      " (expected bytes as an integer, or a string like \"512MiB\" or \"1G\";"
                      " K/M/G/T and KiB/MiB/GiB/TiB are all 1024-based)");
  } else if (it->is_number()) {
    v = unsigned_value(*it, p);
  } else {
    type_error(p, "a size (integer or string such as \"1GiB\")", *it);
  }
  if (v && *v == 0 && !zero_allowed) { error(p, "must be a positive size"); return std::nullopt; }
  return v;
}

std::optional<int> JsonReader::integer(const json& obj, std::string_view key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  auto p = member_path(path, key);
  if (it->is_number_float()) return error(p, "wrong type: expected an integer, got " + it->dump()), std::nullopt;
  if (!it->is_number()) return type_error(p, "an integer", *it);
  if (it->is_number_unsigned() ? it->get<uint64_t>() > uint64_t{std::numeric_limits<int>::max()}
                               : it->get<int64_t>() < std::numeric_limits<int>::min())
    return error(p, "out of range: " + it->dump() + " does not fit in an int"), std::nullopt;
  return it->get<int>();
}

std::optional<std::vector<std::string>> JsonReader::strings(const json& obj, std::string_view key,
                                                            const std::string& path) {
  const json* arr = array(obj, key, path);
  if (!arr) return std::nullopt;
  std::vector<std::string> out;
  auto p = member_path(path, key);
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& v = (*arr)[i];
    if (v.is_string()) out.push_back(v.get<std::string>());
    else type_error(index_path(p, i), "a string", v);
  }
  return out;
}

std::optional<uint64_t> JsonReader::unsigned_value(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  // Parsed text stores non-negative integers as unsigned; a json built in code may hold them signed.
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_number_integer()) {
    error(path, "out of range: " + v.dump() + " is negative");
  } else if (v.is_number_float()) {
    error(path, "wrong type: expected an integer, got " + v.dump());
  } else {
    type_error(path, "a non-negative integer", v);
  }
  return std::nullopt;
}

}  // namespace control
