#pragma once
// JSON of steering (engine/system/steering_*): the request the control socket's steering.plan
// and steering.apply take (and the profile's "steering" section maps onto), the discovery view
// of steering.get, plan rows and transaction results.
//
// Request:
//   {"irq": [{"irq": 42, "cpus": "0"}, {"device": "eth0", "queue": 1, "cpus": "0-1"}],
//    "rps": [{"device": "eth0", "queue": 0, "cpus": "1", "flow_cnt": 4096}],
//    "xps": [{"device": "eth0", "cpus": "none"}],
//    "rps_sock_flow_entries": 32768, "busy_poll": 50, "busy_read": 50}
// "cpus": a CPU list, "all" (every online CPU) or "none" (RPS/XPS off); no "queue" = every queue
// of the device. Every error is reported with its path (path + ".irq[0].cpus").
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config/config.hpp"
#include "engine/system/steering_discovery.hpp"
#include "engine/system/steering_plan.hpp"
#include "engine/system/steering_txn.hpp"

namespace control {

std::vector<ConfigError> parse_steering_request(const nlohmann::json& v, const std::string& path,
                                                sys::SteeringRequest& out);
nlohmann::json to_json(const sys::SteeringRequest& r);
nlohmann::json to_json(const sys::SteeringView& v);
// [{path, what, old, new, change}, ...]
nlohmann::json rows_json(const std::vector<sys::PlanRow>& rows);
// [{path, old, new}, ...]
nlohmann::json saved_json(const std::vector<sys::SavedValue>& saved);
// Plan errors as ConfigErrors under path ("params.rps[1].queue").
std::vector<ConfigError> plan_errors(const sys::SteeringPlan& plan, const std::string& path);
// A failed transaction: the error (path = the kernel file) and each file rollback could not restore.
std::vector<ConfigError> txn_errors(const sys::TxnResult& r);

}  // namespace control
