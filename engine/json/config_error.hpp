#pragma once
// One problem found in a JSON document (a configuration, a profile, JSON-RPC params): where,
// as a JSON path, and what. Every reader in the engine and in data/ reports with this.
#include <string>

namespace control {

struct ConfigError {
  std::string path;     // JSON path, e.g. "$.subsystems[0].namespaces[1].size"
  std::string message;  // what is wrong and what is expected
};

}  // namespace control
