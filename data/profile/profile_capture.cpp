// A profile from a running engine (profile_capture.hpp).
#include "data/profile/profile_capture.hpp"

#include <utility>

#include "data/profile/steering_capture.hpp"

namespace data {

using json = nlohmann::json;

ProfileCapture capture_profile(const std::string& name, const std::string& description, bool tuning_only,
                               const RpcCaller& call) {
  ProfileCapture out;
  json& doc = out.doc;
  doc = {{"schema", profile_schema}, {"name", name}};
  if (!description.empty()) doc["description"] = description;
  for (const auto& [method, key] : {std::pair{"threading.get", "threading"}, std::pair{"budgets.get", "budgets"}}) {
    auto r = call(method, nullptr);
    if (!r.ok) return out.error = std::string(method) + ": " + r.message, out;
    doc[key] = r.result;
  }
  if (!tuning_only) {
    auto r = call("subsystems.list", nullptr);
    if (!r.ok) return out.error = "subsystems.list: " + r.message, out;
    doc["subsystems"] = r.result.value("subsystems", json::array());
    doc["listeners"] = r.result.value("listeners", json::array());
    // Steering names this machine's lines and devices: kept with the topology, not the tuning.
    if (auto st = call("steering.get", nullptr); st.ok)
      if (auto s = steering_from_engine(st.result)) doc["steering"] = to_json(*s);
  }
  return out;
}

}  // namespace data
