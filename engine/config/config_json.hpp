#pragma once
// The JSON side of config.hpp for callers that hold a parsed document: the control socket's
// methods (threading.set, budgets.set, subsystems.add, namespaces.add) validate their params
// with exactly the code parse_config uses, and encode with the same shape.
//
// Every parse_* function reads the keys present in v onto a copy of out (so a partial object
// changes only what it names), validates the merged whole, and assigns out only when there is
// no error. Each error names its field as `path` + ".key" (path is "$.threading" in a document,
// "params" for a JSON-RPC request). Errors come sorted by path.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config/config.hpp"
#include "engine/json/json_document.hpp"
#include "engine/json/json_path.hpp"
#include "engine/json/json_reader.hpp"

namespace control {

std::vector<ConfigError> parse_threading(const nlohmann::json& v, const std::string& path, ThreadingConfig& out);
std::vector<ConfigError> parse_budgets(const nlohmann::json& v, const std::string& path, BudgetConfig& out);
std::vector<ConfigError> parse_tcp(const nlohmann::json& v, const std::string& path, TcpConfig& out);
std::vector<ConfigError> parse_rdma(const nlohmann::json& v, const std::string& path, RdmaConfig& out);
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
nlohmann::json to_json(const RdmaConfig& r);
nlohmann::json to_json(const ListenerConfig& l);
nlohmann::json to_json(const NamespaceConfig& ns);
nlohmann::json to_json(const SubsystemConfig& s);
nlohmann::json to_json(const Config& c);

// parse_config on a document already through parse_json_document (json_document.hpp);
// `errors` (its duplicate-key errors) are kept and suppress the checks beneath their paths.
// doc's root keys must be configuration keys.
ParseResult parse_config_document(const nlohmann::json& doc, std::vector<ConfigError> errors = {});

}  // namespace control
