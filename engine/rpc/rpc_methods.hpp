#pragma once
// The engine's control-socket methods (README.md "Control socket" has the table): a method
// table for RpcServer over one engine::Engine. Params are validated with config_json.hpp's
// parsers, so a field is judged by exactly the rules of the configuration file, and every bad
// field is reported (invalid_params, data [{path, message}, ...], paths under "params").
// A request that fails changes nothing.
#include <chrono>
#include <string>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/rpc/rpc_server.hpp"

namespace control {

struct ControlInfo {
  std::string version;      // engine.info "version"
  std::string socket_path;  // engine.info "control_socket"
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // uptime's origin
};

// The methods run on the RpcServer's connection threads and call engine (which must outlive
// the table).
RpcMethodTable make_engine_methods(engine::Engine& engine, ControlInfo info);

// Those of the engine's methods that only read state the engine guards itself (or append to the
// event log): RpcServerOptions::concurrent, so stats and events keep flowing while a live
// switch or a steering change runs. The others run one at a time.
RpcNames concurrent_engine_methods();

// [{path, message}, ...]
nlohmann::json errors_json(const std::vector<ConfigError>& errors);
// invalid_params whose message quotes the first error and whose data lists all of them.
RpcOutcome invalid_params(const std::vector<ConfigError>& errors);
// engine_refused: "what: first error", data lists every error.
RpcOutcome engine_refused(const std::string& what, const std::vector<ConfigError>& errors);

}  // namespace control
