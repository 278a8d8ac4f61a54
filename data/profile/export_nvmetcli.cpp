// A profile as nvmetcli's restore input (profile_export.hpp), in the shape `nvmetcli save`
// writes: hosts first (subsystems link to them), subsystems with their attributes and
// namespaces, then one port per listener linking every subsystem (nvmetune serves every
// subsystem on every listener). The kernel serves block devices and files: a "file" namespace
// becomes its device path; ram and null namespaces have no equivalent.
#include <set>

#include "data/profile/export_notes.hpp"
#include "data/profile/nvmetcli_mapping.hpp"
#include "data/profile/profile_export.hpp"

namespace data {

namespace {

using json = nlohmann::json;

// nvmetcli writes each attribute to its configfs file as text; a save holds them as strings.
std::string flag(bool b) { return b ? "1" : "0"; }

class NvmetcliExport {
 public:
  explicit NvmetcliExport(ExportResult& out) : _notes(out.not_mapped, "the Linux kernel target"), _out(out) {}

  void run(const Profile& p) {
    _notes.tuning_sections(p);
    if (p.tcp) _notes.tcp_settings(*p.tcp, {"in_capsule_data_size"});
    json hosts = json::array(), subsystems = json::array(), nqns = json::array();
    std::set<std::string> known_hosts;
    for (const auto& s : p.subsystems.value_or(std::vector<control::SubsystemConfig>{})) {
      for (const auto& h : s.hosts)
        if (known_hosts.insert(h).second) hosts.push_back({{"nqn", h}});
      subsystems.push_back(subsystem(s));
      nqns.push_back(s.nqn);
    }
    json ports = json::array();
    for (const auto& l : _notes.listeners(p)) {
      json port = {{"portid", ports.size() + 1},
                   {"addr", {{"trtype", nvmetcli::trtype_tcp}, {"adrfam", nvmetcli::adrfam_ipv4}, {"traddr", l.traddr},
                             {"trsvcid", l.trsvcid}, {"treq", nvmetcli::treq_not_specified}}},
                   {"referrals", json::array()},
                   {"subsystems", nqns}};
      if (p.tcp) port["param"] = {{std::string(nvmetcli::inline_data_size_key), std::to_string(p.tcp->in_capsule_data_size)}};
      ports.push_back(std::move(port));
    }
    _out.doc = {{"hosts", std::move(hosts)}, {"ports", std::move(ports)}, {"subsystems", std::move(subsystems)}};
  }

 private:
  json subsystem(const control::SubsystemConfig& s) {
    json attr = {{"allow_any_host", flag(s.allow_any_host)}, {"model", s.model}};
    if (!s.serial.empty()) attr["serial"] = s.serial;
    json namespaces = json::array();
    for (const auto& ns : s.namespaces)
      if (auto n = namespace_of(s.nqn, ns); !n.is_null()) namespaces.push_back(std::move(n));
    return {{"nqn", s.nqn}, {"attr", std::move(attr)}, {"allowed_hosts", s.hosts}, {"namespaces", std::move(namespaces)}};
  }

  json namespace_of(const std::string& nqn, const control::NamespaceConfig& ns) {
    const std::string label = "subsystem " + nqn + " nsid " + std::to_string(ns.nsid);
    const auto& b = ns.backend;
    if (b.kind != "file") return _notes.no_equivalent(label + ": backend " + b.kind, "it serves block devices and files"), json();
    if (!b.direct) _notes.no_equivalent(label + ": buffered I/O (direct false)", "nvmetcli restore does not set buffered_io");
    if (b.create) _notes.no_equivalent(label + ": create", "the file or device must exist");
    if (b.size_bytes != 0) _notes.no_equivalent(label + ": size " + std::to_string(b.size_bytes), "the kernel takes the file's size");
    if (ns.block_size != control::NamespaceConfig{}.block_size)
      _notes.no_equivalent(label + ": block_size " + std::to_string(ns.block_size), "the kernel takes the device's");
    json device = {{"path", b.path}};
    if (!ns.uuid.empty()) device["uuid"] = ns.uuid;
    return {{"nsid", ns.nsid}, {"enable", 1}, {"device", std::move(device)}};
  }

  exporting::Notes _notes;
  ExportResult& _out;
};

}  // namespace

ExportResult export_nvmetcli(const Profile& p) { return exporting::run_exporter<NvmetcliExport>(p); }

}  // namespace data
