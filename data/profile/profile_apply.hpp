#pragma once
// Applying a profile to a live engine, through the control socket's methods (threading.set,
// budgets.set, subsystems.add, namespaces.add, events.add): the same calls whether the engine
// is in this process (engine_caller) or behind a Unix socket (app/socket_caller.hpp), so both take
// exactly the same validation and the same events.
//
// The profile must be valid (parse_profile found nothing). Steps run in this order and stop at
// the first the engine refuses: threading (the step most likely refused, so a refusal leaves the
// engine untouched), budgets, steering (steering.apply: all rules or none), subsystems and
// namespaces. What cannot change live (tcp, listeners, an existing subsystem's settings) is
// reported as not applied. Last, the outcome is recorded as a "profile" event.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/profile/profile.hpp"
#include "engine/control/engine.hpp"
#include "engine/rpc/rpc_server.hpp"

namespace data {

struct RpcResult {
  bool ok = false;
  nlohmann::json result;
  std::string message;                       // the error's message
  std::vector<control::ConfigError> errors;  // the error's data: [{path, message}, ...]
  bool transport_failed = false;             // no response at all (message says why)
};

using RpcCaller = std::function<RpcResult(const std::string& method, const nlohmann::json& params)>;

struct ApplyReport {
  std::vector<std::string> applied;        // "threading: mode poll, cpumask 1, threads 1"
  std::vector<std::string> not_applied;    // "tcp: transport settings take effect when the engine starts ..."
  std::vector<control::ConfigError> errors;  // refusals, with the profile's paths ($.threading.mode)
  bool ok() const { return errors.empty(); }
};

ApplyReport apply_profile(const Profile& p, const RpcCaller& call);

// The control socket's methods on an in-process engine (no socket).
RpcCaller engine_caller(engine::Engine& engine);
// The methods of table (a copy: later additions to table are not seen).
RpcCaller table_caller(control::RpcMethodTable table);

}  // namespace data
