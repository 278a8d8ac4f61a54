// Which tool wrote a document, and importing it (profile_import.hpp).
#include "data/profile/profile_import.hpp"

#include <filesystem>

#include "engine/json/json_document.hpp"

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

std::string served_path_warning(std::string_view path) {
  // Trees whose files belong to the system: configuration and credentials, the boot loader's
  // kernels, the kernel's own interfaces, programs and libraries, root's home. Not /var/lib,
  // where disk images are commonly kept (/var/lib/nvmet, /var/lib/libvirt/images).
  static constexpr std::string_view system_trees[] = {"/etc", "/boot", "/proc", "/sys",  "/root",
                                                      "/usr", "/bin",  "/sbin", "/lib",  "/lib32", "/lib64"};
  if (path.empty() || path.front() != '/') return {};
  const std::string p = std::filesystem::path(path).lexically_normal().string();
  const auto under = [&](std::string_view tree) {
    return p == tree || (p.size() > tree.size() && p.compare(0, tree.size(), tree) == 0 && p[tree.size()] == '/');
  };
  // /dev/shm is memory-backed files (test images are put there), not devices.
  if (under("/dev") && !under("/dev/shm"))
    return p + " is a device: applying the profile serves it raw to the subsystem's hosts, to read and overwrite "
               "whatever it holds";
  for (auto tree : system_trees)
    if (under(tree))
      return p + " is a system file (under " + std::string(tree) +
             "): applying the profile lets the subsystem's hosts read and overwrite it";
  return {};
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
  out.warnings = std::move(imported.warnings);
  if (out.errors.empty()) out.profile = to_json(imported.profile);
  return out;
}

}  // namespace data
