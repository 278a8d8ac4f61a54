#pragma once
// Private to engine/config: pass 2 of configuration parsing, the meaning of values already
// read (ranges, formats, duplicates, backends). The tuning sections' ranges and choices come
// from the settings schema (config_check_settings.cpp); the rest is config_check_subsystems.cpp.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/json/json_path.hpp"

namespace control {

// Collects semantic errors, skipping any path at or below one already reported (`broken`).
class Checker {
 public:
  Checker(std::vector<ConfigError>& out, const std::vector<ConfigError>& broken) : _out(out), _broken(broken) {}

  bool broken(std::string_view path) const {
    return std::any_of(_broken.begin(), _broken.end(),
                       [&](const ConfigError& e) { return path_within(path, e.path); });
  }
  void error(std::string path, std::string message) {
    if (!broken(path)) _out.push_back({std::move(path), std::move(message)});
  }
  void range(const std::string& path, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
      error(path, "out of range: " + std::to_string(v) + " (expected " + std::to_string(lo) + ".." +
                      std::to_string(hi) + ")");
  }

 private:
  std::vector<ConfigError>& _out;
  const std::vector<ConfigError>& _broken;
};

void check_listeners(Checker& c, const std::vector<ListenerConfig>& listeners);
void check_subsystem(Checker& c, const SubsystemConfig& s, const std::string& path);
void check_namespace(Checker& c, const NamespaceConfig& ns, const std::string& path);
// Every subsystem, and NQNs unique across them.
void check_subsystems(Checker& c, const std::vector<SubsystemConfig>& subsystems);

void check_tcp(Checker& c, const TcpConfig& t, const std::string& path);
void check_rdma(Checker& c, const RdmaConfig& r, const std::string& path);
void check_threading(Checker& c, const ThreadingConfig& t, const std::string& path,
                     const std::vector<unsigned>& online);
void check_budgets(Checker& c, const BudgetConfig& b, const std::string& path);

}  // namespace control
