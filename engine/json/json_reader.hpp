#pragma once
// Reading JSON values into typed fields with every problem reported as a ConfigError with its
// path, so one pass over a document reports everything (DESIGN.md: "Import validates and
// reports every error with its path"). A value of the wrong shape reads as absent.
//
// JsonErrors is the shared part: where errors go. JsonReader is the strict reader of the
// engine's own documents (configuration, JSON-RPC params); data/'s importers build their
// tolerant readers of other tools' JSON on JsonErrors.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/json/config_error.hpp"

namespace control {

class JsonErrors {
 public:
  explicit JsonErrors(std::vector<ConfigError>& errors) : _errors(errors) {}

  void error(std::string path, std::string message) { _errors.push_back({std::move(path), std::move(message)}); }

  // Reports a value of the wrong type; returns nullopt so readers can `return type_error(…)`.
  std::nullopt_t type_error(const std::string& path, std::string_view expected, const nlohmann::json& got);

 private:
  std::vector<ConfigError>& _errors;
};

// `unknown key "x" (did you mean "y"?)`, or the list of allowed keys when none is close.
std::string unknown_key_message(std::string_view key, std::span<const std::string_view> allowed);

class JsonReader : public JsonErrors {
 public:
  using KeyList = std::span<const std::string_view>;
  using JsonErrors::JsonErrors;

  // Reports a non-object; otherwise reports unknown and missing keys. True when v is an object.
  bool object(const nlohmann::json& v, const std::string& path, KeyList allowed, KeyList required);

  // The array at obj[key], or nullptr when absent or not an array (reported).
  const nlohmann::json* array(const nlohmann::json& obj, std::string_view key, const std::string& path);

  std::optional<std::string> string(const nlohmann::json& obj, std::string_view key, const std::string& path);
  std::optional<bool> boolean(const nlohmann::json& obj, std::string_view key, const std::string& path);

  // A non-negative integer that fits in 32 bits; semantic ranges are the checker's job.
  std::optional<uint32_t> u32(const nlohmann::json& obj, std::string_view key, const std::string& path);

  // A byte count: an integer, or a string parse_size() accepts. Zero is refused unless
  // zero_allowed (for a namespace an explicit zero is never meant; validate() sees 0 as
  // "absent"; for a budget 0 means "unlimited").
  std::optional<uint64_t> size(const nlohmann::json& obj, std::string_view key, const std::string& path,
                               bool zero_allowed = false);

  // A signed integer that fits in an int; semantic ranges are the checker's job.
  std::optional<int> integer(const nlohmann::json& obj, std::string_view key, const std::string& path);

  std::optional<std::vector<std::string>> strings(const nlohmann::json& obj, std::string_view key,
                                                  const std::string& path);

  // v itself as a non-negative integer (path names v).
  std::optional<uint64_t> unsigned_value(const nlohmann::json& v, const std::string& path);
};

}  // namespace control
