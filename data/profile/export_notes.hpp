#pragma once
// Private to data/profile/: what both exporters (profile_export.hpp) share: how they run, and
// what they list as not mapped in the same words (the tuning sections no other target has, the
// TCP settings a format has no key for, listeners on "any free port").
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "data/profile/profile.hpp"
#include "data/profile/profile_export.hpp"
#include "engine/config/config_json.hpp"

namespace data::exporting {

class Notes {
 public:
  Notes(std::vector<std::string>& out, std::string_view tool) : _out(out), _tool(tool) {}

  void add(std::string text) { _out.push_back(std::move(text)); }
  void no_equivalent(const std::string& what, std::string_view why = {}) {
    add(what + ": no equivalent in " + std::string(_tool) + (why.empty() ? "" : " (" + std::string(why) + ")"));
  }

  // Threading, budgets and steering tune nvmetune's own engine and this machine.
  void tuning_sections(const Profile& p) {
    if (p.threading) no_equivalent("threading", "nvmetune's execution models");
    if (p.budgets) no_equivalent("budgets", "nvmetune's io_work budgets");
    if (p.steering) no_equivalent("steering", "IRQ/RPS/XPS steering is set on the machine, not in the target");
  }

  // Every setting of t other than the mapped ones that differs from its default: set on purpose.
  void tcp_settings(const control::TcpConfig& t, const std::vector<std::string_view>& mapped) {
    const auto have = control::to_json(t), defaults = control::to_json(control::TcpConfig{});
    for (const auto& [key, value] : have.items())
      if (std::find(mapped.begin(), mapped.end(), key) == mapped.end() && defaults.value(key, nlohmann::json()) != value)
        no_equivalent("tcp." + key + " " + value.dump());
  }

  // Listeners SPDK and the kernel can open: a fixed port (trsvcid "0" is our "any free port").
  std::vector<control::ListenerConfig> listeners(const Profile& p) {
    std::vector<control::ListenerConfig> out;
    for (const auto& l : p.listeners.value_or(std::vector<control::ListenerConfig>{})) {
      if (l.trsvcid == "0") no_equivalent("listener " + l.traddr + ":0", "any free port: give a port number");
      else out.push_back(l);
    }
    return out;
  }

 private:
  std::vector<std::string>& _out;
  std::string_view _tool;
};

// Runs exporter T (constructed on the result, with run(profile)) over p.
template <typename T>
ExportResult run_exporter(const Profile& p) {
  ExportResult out;
  T(out).run(p);
  return out;
}

}  // namespace data::exporting
