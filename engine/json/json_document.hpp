#pragma once
// Pass 0 of reading any JSON document the engine or data/ judges (configuration, profile):
// syntax (one error with byte, line and column) and duplicate keys, which nlohmann would
// silently resolve as "last one wins" (one error each, with its path; the document is kept).
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/json/config_error.hpp"

namespace control {

struct JsonDocument {
  nlohmann::json doc;
  std::vector<ConfigError> errors;
  bool syntax_ok = false;
};
JsonDocument parse_json_document(std::string_view json_text);

}  // namespace control
