#pragma once
// Profiles from other NVMe-oF targets' saved configurations:
//  - nvmetcli's `save` (/etc/nvmet/config.json: hosts, ports, subsystems, namespaces of the Linux
//    kernel target), import_nvmetcli.cpp;
//  - SPDK's `save_config` (the "nvmf" and "bdev" subsystems), import_spdk.cpp.
// What maps onto nvmetune is converted; everything else is listed in no_equivalent, one line
// per item, so nothing is dropped silently. The profile is not validated here: run it through
// parse_profile(to_json(p).dump()) (a kernel NQN that does not start with "nqn." is then an
// error with its path).
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/profile/profile.hpp"

namespace data {

struct ImportResult {
  Profile profile;
  std::vector<std::string> no_equivalent;    // "ports[1] (rdma 10.0.0.1:4420): nvmetune serves tcp only"
  std::vector<control::ConfigError> errors;  // the input is unusable: not JSON, or the wrong shape
};

enum class ProfileSource { profile, nvmetcli, spdk, unknown };

// Recognizes a document by its shape: "schema" (a profile), "ports"/"hosts" with "subsystems"
// (nvmetcli), "subsystems": [{"subsystem": ..., "config": [...]}] (SPDK).
ProfileSource detect_source(const nlohmann::json& doc);
const char* source_name(ProfileSource s);

ImportResult import_nvmetcli(const nlohmann::json& doc);
ImportResult import_spdk(const nlohmann::json& doc);

// Any document `profile import` takes, whichever tool wrote it: JSON syntax checked, the source
// detected, and another tool's document converted (profile: its canonical JSON, to be judged by
// parse_profile). A nvmetune profile is left to parse_profile on its own text (profile stays null).
// errors: not JSON, no known shape, or a shape the importer cannot use.
struct DocumentImport {
  ProfileSource source = ProfileSource::unknown;
  nlohmann::json profile;
  std::vector<std::string> no_equivalent;
  std::vector<control::ConfigError> errors;
};
DocumentImport import_document(std::string_view text);

}  // namespace data
