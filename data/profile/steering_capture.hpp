#pragma once
// What `profile save` keeps of the engine's steering: one rule per interrupt line, RPS queue and
// XPS queue the engine changed (steering.get's "saved" files), with the CPUs they have now.
#include <optional>

#include <nlohmann/json.hpp>

#include "data/profile/profile.hpp"

namespace data {

// state: steering.get's result. nullopt when the engine changed no line or queue. Settings a
// profile cannot hold (RPS/XPS off, rps_flow_cnt, the net.core sysctls) are left out.
std::optional<SteeringConfig> steering_from_engine(const nlohmann::json& state);

}  // namespace data
