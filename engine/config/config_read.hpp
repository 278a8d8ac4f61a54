#pragma once
// Private to engine/config: pass 1 of configuration parsing, the shape and types of each
// section (config_read.cpp). Each value that passes lands in the Config; one that fails keeps
// its default and is reported, so pass 2 (config_check.hpp) can skip what pass 1 reported.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config/config.hpp"
#include "engine/json/json_reader.hpp"

namespace control {

ListenerConfig read_listener(JsonReader& r, const nlohmann::json& v, const std::string& path);
NamespaceConfig read_namespace(JsonReader& r, const nlohmann::json& v, const std::string& path);
SubsystemConfig read_subsystem(JsonReader& r, const nlohmann::json& v, const std::string& path);

// These read the keys present onto their out value (a partial object changes only what it names).
void read_tcp(JsonReader& r, const nlohmann::json& v, const std::string& path, TcpConfig& tcp);
void read_rdma(JsonReader& r, const nlohmann::json& v, const std::string& path, RdmaConfig& rdma);
void read_threading(JsonReader& r, const nlohmann::json& v, const std::string& path, ThreadingConfig& t);
void read_budgets(JsonReader& r, const nlohmann::json& v, const std::string& path, BudgetConfig& b);

Config read_config(JsonReader& r, const nlohmann::json& doc);

}  // namespace control
