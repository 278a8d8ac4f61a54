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
  // Imported as asked, but worth a look before applying: namespaces serving a block device or a
  // system file ("subsystem NQN nsid 1: /dev/sda is a block device: ...").
  std::vector<std::string> warnings;
  std::vector<control::ConfigError> errors;  // the input is unusable: not JSON, or the wrong shape
};

enum class ProfileSource { profile, nvmetcli, spdk, unknown };

// Recognizes a document by its shape: "schema" (a profile), "ports"/"hosts" with "subsystems"
// (nvmetcli), "subsystems": [{"subsystem": ..., "config": [...]}] (SPDK).
ProfileSource detect_source(const nlohmann::json& doc);
const char* source_name(ProfileSource s);

ImportResult import_nvmetcli(const nlohmann::json& doc);
ImportResult import_spdk(const nlohmann::json& doc);

// Why a file namespace on path deserves a warning ("" when it does not): applying the profile
// serves what is there to every host the subsystem allows, read and write. Judged on the path
// as written (lexically: "/srv/../etc/x" is /etc/x), since the profile may be applied on
// another machine; a link elsewhere to such a file is not seen.
std::string served_path_warning(std::string_view path);

// Any document `profile import` takes, whichever tool wrote it: JSON syntax checked, the source
// detected, and another tool's document converted (profile: its canonical JSON, to be judged by
// parse_profile). A nvmetune profile is left to parse_profile on its own text (profile stays null).
// errors: not JSON, no known shape, or a shape the importer cannot use.
struct DocumentImport {
  ProfileSource source = ProfileSource::unknown;
  nlohmann::json profile;
  std::vector<std::string> no_equivalent;
  std::vector<std::string> warnings;
  std::vector<control::ConfigError> errors;
};
DocumentImport import_document(std::string_view text);

}  // namespace data
