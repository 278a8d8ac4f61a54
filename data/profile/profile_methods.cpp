// profiles.save over a running engine (profile_methods.hpp).
#include "data/profile/profile_methods.hpp"

#include "data/profile/profile.hpp"
#include "data/profile/profile_apply.hpp"
#include "data/profile/profile_capture.hpp"
#include "data/store/store.hpp"
#include "engine/rpc/rpc_methods.hpp"

namespace data {

namespace {

using json = nlohmann::json;
using control::RpcOutcome;

struct SaveRequest {
  std::string name, description;
  bool tuning_only = false, replace = false;
};

// Every bad field of params, as the engine's methods report them (paths under "params").
std::vector<control::ConfigError> read_request(const json& params, SaveRequest& r) {
  std::vector<control::ConfigError> errors;
  if (!params.is_object()) return {{"params", "an object {name, description?, tuning_only?, replace?}"}};
  for (const auto& [key, value] : params.items()) {
    const std::string path = "params." + key;
    if (key == "name" || key == "description") {
      if (!value.is_string()) errors.push_back({path, "a string"});
      else (key == "name" ? r.name : r.description) = value.get<std::string>();
    } else if (key == "tuning_only" || key == "replace") {
      if (!value.is_boolean()) errors.push_back({path, "true or false"});
      else (key == "replace" ? r.replace : r.tuning_only) = value.get<bool>();
    } else {
      errors.push_back({path, "unknown key (name, description, tuning_only, replace)"});
    }
  }
  if (!params.contains("name")) errors.push_back({"params.name", "missing: the profile's name"});
  else if (auto problem = profile_name_problem(r.name); !problem.empty() && params["name"].is_string())
    errors.push_back({"params.name", problem});
  return errors;
}

RpcOutcome save(const RpcCaller& engine, const std::string& db_path, const SaveRequest& r) {
  const auto cap = capture_profile(r.name, r.description, r.tuning_only, engine);
  if (!cap.error.empty()) return RpcOutcome::fail(control::rpc_code::engine_refused, "cannot capture the engine's state: " + cap.error);
  const auto parsed = parse_profile(cap.doc.dump());
  if (!parsed.errors.empty()) return control::engine_refused("the engine's state is not a valid profile", parsed.errors);
  std::string error;
  auto store = Store::open(db_path, error);
  if (!store) return RpcOutcome::fail(control::rpc_code::engine_refused, "cannot open " + db_path + ": " + error);
  if (!r.replace && store->load_profile(r.name))
    return control::invalid_params({{"params.name", "a profile named " + r.name + " exists in " + db_path + " (pass replace: true to overwrite it)"}});
  const json doc = to_json(parsed.profile);
  if (!store->save_profile(r.name, doc.dump(), error))
    return RpcOutcome::fail(control::rpc_code::engine_refused, "cannot save " + r.name + " in " + db_path + ": " + error);
  json sections = json::array();
  for (const auto& [key, value] : doc.items())
    if (value.is_object() || value.is_array()) sections.push_back(key);
  return RpcOutcome::ok({{"name", r.name}, {"db", db_path}, {"sections", std::move(sections)}});
}

}  // namespace

void add_profile_methods(control::RpcMethodTable& table, RpcCaller engine, const std::string& db_path) {
  table["profiles.save"] = [engine, db_path](const json& params) {
    SaveRequest r;
    if (auto errors = read_request(params, r); !errors.empty()) return control::invalid_params(errors);
    return save(engine, db_path, r);
  };
}

}  // namespace data
