#pragma once
// Profiles as other NVMe-oF targets' configurations, the reverse of profile_import.hpp:
//  - SPDK's `load_config` (export_spdk.cpp): "bdev" calls for the namespaces' backends and
//    "nvmf" calls for the TCP transport, subsystems, namespaces, listeners and hosts;
//  - nvmetcli's `restore` (export_nvmetcli.cpp): the Linux kernel target's hosts, ports and
//    subsystems with their namespaces.
// What has no counterpart there is listed in not_mapped, one line per item, as an import lists
// what it could not carry over; importing the document back gives the parts that map.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/profile/profile.hpp"

namespace data {

enum class ExportFormat { profile, spdk, nvmetcli };

// "profile" (our own, the default), "spdk" or "nvmetcli"; nullopt for any other name.
inline std::optional<ExportFormat> export_format(std::string_view name) {
  if (name == "profile") return ExportFormat::profile;
  if (name == "spdk") return ExportFormat::spdk;
  if (name == "nvmetcli") return ExportFormat::nvmetcli;
  return std::nullopt;
}

struct ExportResult {
  nlohmann::json doc;
  std::vector<std::string> not_mapped;  // "threading: SPDK has no equivalent (its reactors always poll)"
};

ExportResult export_spdk(const Profile& p);
ExportResult export_nvmetcli(const Profile& p);

}  // namespace data
