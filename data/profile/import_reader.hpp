#pragma once
// Private to data/profile/: tolerant reading of another tool's JSON for the importers. A value of
// the wrong shape is an error with its path and reads as absent, so one pass reports them all.
// Built on the engine's JSON reading (engine/control/json_*.hpp): the same errors, paths and
// order as a configuration's; only the leniency (numbers as strings, 1/0 flags) is the importers'.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/profile/profile_import.hpp"
#include "engine/json/json_path.hpp"
#include "engine/json/json_reader.hpp"
#include "engine/config/size_text.hpp"

namespace data::import {

using json = nlohmann::json;

using control::index_path;
using control::member_path;

class Reader : public control::JsonErrors {
 public:
  using control::JsonErrors::JsonErrors;

  // obj[key] as an array (empty when absent; an error when not an array).
  const json& array(const json& obj, const char* key, const std::string& path) {
    static const json empty = json::array();
    if (!obj.is_object() || !obj.contains(key)) return empty;
    const json& v = obj[key];
    if (!v.is_array()) return error(member_path(path, key), std::string("expected an array, got ") + v.type_name()), empty;
    return v;
  }

  const json& object(const json& obj, const char* key, const std::string& path) {
    static const json empty = json::object();
    if (!obj.is_object() || !obj.contains(key)) return empty;
    const json& v = obj[key];
    if (!v.is_object()) return error(member_path(path, key), std::string("expected an object, got ") + v.type_name()), empty;
    return v;
  }

  // Strings, and numbers written as text (nvmetcli writes most attributes as strings).
  std::optional<std::string> string(const json& obj, const char* key, const std::string& path) {
    if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
    const json& v = obj[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return v.dump();
    return error(member_path(path, key), "expected a string, got " + v.dump()), std::nullopt;
  }

  // Integers, and integers written as strings ("16384").
  std::optional<uint64_t> number(const json& obj, const char* key, const std::string& path) {
    if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
    const json& v = obj[key];
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) return v.get<uint64_t>();
    if (v.is_string()) {
      uint64_t n = 0;
      if (control::parse_size(v.get<std::string>(), n)) return n;
    }
    return error(member_path(path, key), "expected a non-negative integer, got " + v.dump()), std::nullopt;
  }

  // true/false, 1/0 and "1"/"0" (nvmetcli's attributes).
  std::optional<bool> flag(const json& obj, const char* key, const std::string& path) {
    if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
    const json& v = obj[key];
    if (v.is_boolean()) return v.get<bool>();
    if (v == 1 || v == "1") return true;
    if (v == 0 || v == "0") return false;
    return error(member_path(path, key), "expected true or false (or 1/0), got " + v.dump()), std::nullopt;
  }
};

// What every importer shares: the result it fills, a Reader reporting into its errors, and
// note() for what has no equivalent in nvmetune.
class Importer {
 protected:
  explicit Importer(ImportResult& out) : _out(out), _r(out.errors) {}

  void note(std::string text) { _out.no_equivalent.push_back(std::move(text)); }

  ImportResult& _out;
  Reader _r;
};

// A warning for each imported file namespace that would serve a device or a system file
// (served_path_warning), whichever tool's configuration it came from.
inline void warn_served_paths(ImportResult& out) {
  if (!out.profile.subsystems) return;
  for (const auto& s : *out.profile.subsystems)
    for (const auto& ns : s.namespaces)
      if (auto why = ns.backend.kind == "file" ? served_path_warning(ns.backend.path) : std::string(); !why.empty())
        out.warnings.push_back("subsystem " + s.nqn + " nsid " + std::to_string(ns.nsid) + ": " + why);
}

// Runs importer T (an Importer with run(doc)) over doc. Its errors come in the order it reads
// sections, not the document's; sorted by path, they read like parse_profile's.
template <typename T>
ImportResult run_importer(const json& doc) {
  ImportResult out;
  T(out).run(doc);
  control::sort_by_path(out.errors);
  warn_served_paths(out);
  return out;
}

// The keys of obj not in known, comma-separated ("" when none): what a report lists.
template <size_t N>
std::string other_keys(const json& obj, const std::string_view (&known)[N]) {
  std::string out;
  if (!obj.is_object()) return out;
  for (const auto& [k, v] : obj.items())
    if (std::find(std::begin(known), std::end(known), k) == std::end(known)) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace data::import
