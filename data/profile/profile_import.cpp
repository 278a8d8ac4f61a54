// Which tool wrote a document, and importing it (profile_import.hpp).
#include "data/profile/profile_import.hpp"

#include "engine/control/json_document.hpp"

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

DocumentImport import_document(std::string_view text) {
  DocumentImport out;
  auto parsed = control::parse_json_document(text);
  if (!parsed.syntax_ok) return out.errors = std::move(parsed.errors), out;
  out.source = detect_source(parsed.doc);
  if (out.source == ProfileSource::profile) return out;
  if (out.source == ProfileSource::unknown) {
    out.errors = {{"$", "not a profile (\"schema\"), an nvmetcli save (\"ports\", \"hosts\", \"subsystems\")"
                        " nor an SPDK save_config (\"subsystems\": [{\"subsystem\", \"config\"}])"}};
    return out;
  }
  auto imported = out.source == ProfileSource::nvmetcli ? import_nvmetcli(parsed.doc) : import_spdk(parsed.doc);
  out.errors = std::move(imported.errors);
  out.no_equivalent = std::move(imported.no_equivalent);
  if (out.errors.empty()) out.profile = to_json(imported.profile);
  return out;
}

}  // namespace data
