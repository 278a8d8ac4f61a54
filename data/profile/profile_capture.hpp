#pragma once
// A running engine's state as a profile document, read through the control methods
// (threading.get, budgets.get, subsystems.list) of any RpcCaller: what `profile save` stores
// and what a front end's "Save as profile" saves, embedded or remote alike.
#include <string>

#include <nlohmann/json.hpp>

#include "data/profile/profile_apply.hpp"

namespace data {

struct ProfileCapture {
  nlohmann::json doc;  // {"schema", "name", ["description"], "threading", "budgets", ["subsystems", "listeners"]}
  std::string error;   // "budgets.get: <the engine's message>"; doc is then incomplete
};

// tuning_only: threading and budgets alone (portable to another machine's engine). The document
// is not validated here: run it through parse_profile.
ProfileCapture capture_profile(const std::string& name, const std::string& description, bool tuning_only,
                               const RpcCaller& call);

}  // namespace data
