// Which tool wrote a document (profile_import.hpp).
#include "data/profile/profile_import.hpp"

namespace data {

ProfileSource detect_source(const nlohmann::json& doc) {
  if (!doc.is_object()) return ProfileSource::unknown;
  if (doc.contains("schema")) return ProfileSource::profile;
  auto subs = doc.find("subsystems");
  if (subs != doc.end() && subs->is_array() && !subs->empty() && (*subs)[0].is_object() &&
      (*subs)[0].contains("subsystem"))
    return ProfileSource::spdk;
  if (doc.contains("ports") || doc.contains("hosts")) return ProfileSource::nvmetcli;
  if (subs != doc.end() && subs->is_array() && !subs->empty() && (*subs)[0].is_object() && (*subs)[0].contains("attr"))
    return ProfileSource::nvmetcli;
  return ProfileSource::unknown;
}

const char* source_name(ProfileSource s) {
  switch (s) {
    case ProfileSource::profile: return "nvmetune profile";
    case ProfileSource::nvmetcli: return "nvmetcli";
    case ProfileSource::spdk: return "SPDK save_config";
    case ProfileSource::unknown: break;
  }
  return "unknown";
}

}  // namespace data
