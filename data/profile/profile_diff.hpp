#pragma once
// Field-by-field differences between two profiles, for `nvmetune profile diff` and the GUI:
//   threading.mode: bound → poll
//   subsystems[nqn.2026-12.io.nvmetune:a].namespaces[nsid=2]: (absent) → {"backend":"null",...}
// Array elements are matched by what identifies them (a subsystem by NQN, a namespace by nsid,
// a listener by address and port, a steering rule by its target, a host NQN by itself), so a
// reordered array is no difference and an inserted element is one line. The profiles' names are
// not compared (a diff is between two names).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace data {

struct DiffEntry {
  std::string path;                     // "threading.mode"
  std::optional<nlohmann::json> before; // nullopt: absent in the first profile
  std::optional<nlohmann::json> after;  // nullopt: absent in the second
};

// a and b are canonical profile documents (data::to_json(Profile), or a stored profile's json).
std::vector<DiffEntry> diff_profiles(const nlohmann::json& a, const nlohmann::json& b);

// One line per entry, "path: before → after"; strings unquoted, "(absent)" for a missing side.
std::string format_diff(const std::vector<DiffEntry>& entries);

}  // namespace data
