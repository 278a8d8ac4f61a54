#pragma once
// The JSON side of config.hpp for callers that hold a parsed document: the control socket's
// methods (threading.set, budgets.set, subsystems.add, namespaces.add) validate their params
// with exactly the code parse_config uses, and encode with the same shape.
//
// Every parse_* function reads the keys present in v onto a copy of out (so a partial object
// changes only what it names), validates the merged whole, and assigns out only when there is
// no error. Each error names its field as `path` + ".key" (path is "$.threading" in a document,
// "params" for a JSON-RPC request). Errors come sorted by path.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/control/config.hpp"

namespace control {

std::vector<ConfigError> parse_threading(const nlohmann::json& v, const std::string& path, ThreadingConfig& out);
std::vector<ConfigError> parse_budgets(const nlohmann::json& v, const std::string& path, BudgetConfig& out);
std::vector<ConfigError> parse_tcp(const nlohmann::json& v, const std::string& path, TcpConfig& out);
// A whole subsystem / namespace object (as in "subsystems[]" / "namespaces[]"); required keys
// are required. out's previous value does not matter beyond defaults.
std::vector<ConfigError> parse_subsystem(const nlohmann::json& v, const std::string& path, SubsystemConfig& out);
std::vector<ConfigError> parse_namespace(const nlohmann::json& v, const std::string& path, NamespaceConfig& out);

// The semantic checks alone, for values built in code (Engine::set_threading can use these).
std::vector<ConfigError> validate_threading(const ThreadingConfig& t, const std::string& path = "$.threading");
std::vector<ConfigError> validate_budgets(const BudgetConfig& b, const std::string& path = "$.budgets");

// Encoders: parse_config(to_json(c).dump()) gives back c. An empty cpumask (every online CPU)
// is written "all".
nlohmann::json to_json(const ThreadingConfig& t);
nlohmann::json to_json(const BudgetConfig& b);
nlohmann::json to_json(const TcpConfig& t);
nlohmann::json to_json(const ListenerConfig& l);
nlohmann::json to_json(const NamespaceConfig& ns);
nlohmann::json to_json(const SubsystemConfig& s);
nlohmann::json to_json(const Config& c);

// Documents that embed configuration sections (tuning profiles, data/profile/) judge them by
// the same rules, with the same messages:

// Pass 0 alone: JSON syntax (one error, syntax_ok false) and duplicate keys (errors, doc kept).
struct JsonDocument {
  nlohmann::json doc;
  std::vector<ConfigError> errors;
  bool syntax_ok = false;
};
JsonDocument parse_json_document(std::string_view json_text);

// parse_config on a document already through parse_json_document; `errors` (its duplicate-key
// errors) are kept and suppress the checks beneath their paths. doc's root keys must be
// configuration keys.
ParseResult parse_config_document(const nlohmann::json& doc, std::vector<ConfigError> errors = {});

// Orders errors as a reader scans the document (array indices numerically, parents first).
void sort_by_path(std::vector<ConfigError>& errors);

// `unknown key "x" (did you mean "y"?)`, or the list of allowed keys when none is close.
std::string unknown_key_message(std::string_view key, std::span<const std::string_view> allowed);

// A CPU mask as "threading.cpumask" takes it: "all" (every online CPU: an empty list) or a CPU
// list such as "0-3,6"; problem set when malformed or empty.
struct CpuMask {
  std::vector<unsigned> cpus;
  std::optional<std::string> problem;
};
CpuMask parse_cpu_mask(std::string_view text);

// "CPU 7 is not online (online: 0-1)" / "CPUs 4-7 are not online (...)"; nullopt when every CPU
// of cpus is in online.
std::optional<std::string> offline_problem(const std::vector<unsigned>& cpus, const std::vector<unsigned>& online);

// The CPUs online now, from /sys/devices/system/cpu/online (sorted).
std::vector<unsigned> online_cpus();

}  // namespace control
