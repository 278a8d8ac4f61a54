// nvmetcli's saved configuration (the Linux kernel target's configfs tree as JSON) into a
// profile (profile_import.hpp). The kernel exports a subsystem on the ports that link it and
// knows RDMA, FC, loop, ANA, PI and DH-HMAC-CHAP; nvmetune serves every subsystem on every TCP
// listener and has none of the rest, so those are reported.
#include <algorithm>
#include <set>

#include "data/profile/import_reader.hpp"
#include "data/profile/nvmetcli_mapping.hpp"
#include "data/profile/profile_import.hpp"
#include "engine/config/config_json.hpp"

namespace data {

namespace {

using import::json;
using import::index_path;

constexpr std::string_view port_keys[] = {"addr", "portid", "referrals", "subsystems", "param", "ana_groups"};
constexpr std::string_view port_param_keys[] = {nvmetcli::inline_data_size_key, "pi_enable"};
constexpr std::string_view subsystem_keys[] = {"nqn", "allowed_hosts", "attr", "namespaces"};
constexpr std::string_view attr_keys[] = {"allow_any_host", "serial", "model", "version", "cntlid_min", "cntlid_max",
                                          "pi_enable"};
constexpr std::string_view namespace_keys[] = {"nsid", "enable", "device", "ana_grpid", "buffered_io"};
constexpr std::string_view device_keys[] = {"path", "uuid", "nguid"};
constexpr std::string_view host_keys[] = {"nqn"};
// The kernel's defaults: present in every save, not worth a line when unchanged.
constexpr std::string_view kernel_cntlid_min = "1";
constexpr std::string_view kernel_cntlid_max = "65519";
constexpr std::string_view zero_nguid = "00000000-0000-0000-0000-000000000000";

class NvmetcliImport : import::Importer {
 public:
  explicit NvmetcliImport(ImportResult& out) : Importer(out) {}

  void run(const json& doc) {
    if (!doc.is_object()) return _r.error("$", std::string("expected the object nvmetcli saves, got ") + doc.type_name());
    if (auto extra = import::other_keys(doc, top_keys); !extra.empty()) note("top-level keys " + extra + ": not imported");
    hosts(doc);
    ports(doc);
    subsystems(doc);
    _out.profile.description = "imported from nvmetcli";
  }

 private:
  static constexpr std::string_view top_keys[] = {"hosts", "ports", "subsystems"};

  void hosts(const json& doc) {
    const json& arr = _r.array(doc, "hosts", "$");
    for (size_t i = 0; i < arr.size(); ++i) {
      const auto p = index_path("$.hosts", i);
      auto nqn = _r.string(arr[i], "nqn", p);
      if (auto extra = import::other_keys(arr[i], host_keys); !extra.empty())
        note("hosts[" + std::to_string(i) + "] " + nqn.value_or("?") + ": " + extra +
             ": no equivalent (nvmetune has no host authentication)");
    }
  }

  void ports(const json& doc) {
    const json& arr = _r.array(doc, "ports", "$");
    std::vector<control::ListenerConfig> listeners;
    for (size_t i = 0; i < arr.size(); ++i) {
      const auto p = index_path("$.ports", i);
      const std::string label = "ports[" + std::to_string(i) + "]";
      const json& port = arr[i];
      const json& addr = _r.object(port, "addr", p);
      const auto trtype = _r.string(addr, "trtype", p + ".addr").value_or("");
      const auto adrfam = _r.string(addr, "adrfam", p + ".addr").value_or(std::string(nvmetcli::adrfam_ipv4));
      const auto traddr = _r.string(addr, "traddr", p + ".addr").value_or("");
      const auto trsvcid = _r.string(addr, "trsvcid", p + ".addr").value_or(std::string(nvmetcli::default_trsvcid));
      const std::string where = " (" + trtype + " " + traddr + ":" + trsvcid + ")";
      if (trtype != nvmetcli::trtype_tcp) {
        note(label + where + ": transport " + (trtype.empty() ? "(none)" : trtype) + " has no equivalent (nvmetune serves tcp)");
        continue;
      }
      if (adrfam != nvmetcli::adrfam_ipv4) {
        note(label + where + ": address family " + adrfam + " has no equivalent (nvmetune listens on IPv4)");
        continue;
      }
      if (auto treq = _r.string(addr, "treq", p + ".addr"); treq && *treq != nvmetcli::treq_not_specified && *treq != nvmetcli::treq_not_required)
        note(label + where + ": treq \"" + *treq + "\" (secure channel) has no equivalent");
      port_params(port, p, label + where);
      if (!_r.array(port, "referrals", p).empty()) note(label + where + ": referrals have no equivalent");
      if (!_r.array(port, "ana_groups", p).empty())
        note(label + where + ": ana_groups have no equivalent (no ANA: every path is reported optimized)");
      if (auto extra = import::other_keys(port, port_keys); !extra.empty()) note(label + where + ": " + extra + ": not imported");
      control::ListenerConfig l{"tcp", traddr, trsvcid};
      const bool dup = std::any_of(listeners.begin(), listeners.end(),
                                   [&](const auto& x) { return x.traddr == l.traddr && x.trsvcid == l.trsvcid; });
      if (!dup) listeners.push_back(std::move(l));
      _port_subsystems.push_back(subsystem_set(port, p));
    }
    _out.profile.listeners = std::move(listeners);
  }

  void port_params(const json& port, const std::string& p, const std::string& label) {
    const json& param = _r.object(port, "param", p);
    if (auto icd = _r.number(param, nvmetcli::inline_data_size_key.data(), p + ".param")) {
      if (!_out.profile.tcp) _out.profile.tcp = control::TcpConfig{};
      else if (_out.profile.tcp->in_capsule_data_size != *icd)
        note(label + ": inline_data_size " + std::to_string(*icd) + " differs from an earlier port's; nvmetune has one for all");
      _out.profile.tcp->in_capsule_data_size = static_cast<uint32_t>(*icd);
    }
    if (_r.flag(param, "pi_enable", p + ".param").value_or(false)) note(label + ": pi_enable: no equivalent (no protection information)");
    if (auto extra = import::other_keys(param, port_param_keys); !extra.empty()) note(label + ": param " + extra + ": no equivalent");
  }

  std::set<std::string> subsystem_set(const json& port, const std::string& p) {
    std::set<std::string> out;
    const json& arr = _r.array(port, "subsystems", p);
    for (size_t j = 0; j < arr.size(); ++j) {
      if (arr[j].is_string()) out.insert(arr[j].get<std::string>());
      else _r.error(index_path(p + ".subsystems", j), "expected a subsystem NQN, got " + arr[j].dump());
    }
    return out;
  }

  void subsystems(const json& doc) {
    const json& arr = _r.array(doc, "subsystems", "$");
    std::vector<control::SubsystemConfig> out;
    for (size_t i = 0; i < arr.size(); ++i) out.push_back(subsystem(arr[i], index_path("$.subsystems", i)));
    // The kernel exports a subsystem only on the ports that link it; nvmetune on every listener.
    for (const auto& s : out) {
      const bool on_all = std::all_of(_port_subsystems.begin(), _port_subsystems.end(),
                                      [&](const auto& set) { return set.contains(s.nqn); });
      if (!on_all)
        note("subsystem " + s.nqn + ": not linked to every port; nvmetune serves every subsystem on every listener");
    }
    _out.profile.subsystems = std::move(out);
  }

  control::SubsystemConfig subsystem(const json& v, const std::string& p) {
    control::SubsystemConfig s;
    s.nqn = _r.string(v, "nqn", p).value_or("");
    if (!v.contains("nqn")) _r.error(p + ".nqn", "missing required key");
    const std::string label = "subsystem " + s.nqn;
    const json& attr = _r.object(v, "attr", p);
    s.allow_any_host = _r.flag(attr, "allow_any_host", p + ".attr").value_or(false);
    s.serial = _r.string(attr, "serial", p + ".attr").value_or("");
    if (auto model = _r.string(attr, "model", p + ".attr")) s.model = *model;
    if (auto version = _r.string(attr, "version", p + ".attr"))
      note(label + ": attr.version " + *version + ": no equivalent (nvmetune reports its own NVMe version)");
    auto cmin = _r.string(attr, "cntlid_min", p + ".attr"), cmax = _r.string(attr, "cntlid_max", p + ".attr");
    if ((cmin && *cmin != kernel_cntlid_min) || (cmax && *cmax != kernel_cntlid_max))
      note(label + ": attr.cntlid_min/cntlid_max " + cmin.value_or("?") + ".." + cmax.value_or("?") + ": no equivalent");
    if (_r.flag(attr, "pi_enable", p + ".attr").value_or(false)) note(label + ": attr.pi_enable: no equivalent");
    if (auto extra = import::other_keys(attr, attr_keys); !extra.empty()) note(label + ": attr " + extra + ": no equivalent");
    const json& hosts = _r.array(v, "allowed_hosts", p);
    for (size_t j = 0; j < hosts.size(); ++j) {
      if (hosts[j].is_string()) s.hosts.push_back(hosts[j].get<std::string>());
      else _r.error(index_path(p + ".allowed_hosts", j), "expected a host NQN, got " + hosts[j].dump());
    }
    const json& namespaces = _r.array(v, "namespaces", p);
    for (size_t j = 0; j < namespaces.size(); ++j)
      if (auto ns = namespace_of(namespaces[j], index_path(p + ".namespaces", j), label)) s.namespaces.push_back(std::move(*ns));
    if (auto extra = import::other_keys(v, subsystem_keys); !extra.empty()) note(label + ": " + extra + ": not imported");
    return s;
  }

  // A namespace becomes a "file" backend on its device path: the kernel's bdev and file
  // backends both take one, and so does nvmetune's file backend (O_DIRECT unless buffered_io).
  std::optional<control::NamespaceConfig> namespace_of(const json& v, const std::string& p, const std::string& sub) {
    control::NamespaceConfig ns;
    ns.nsid = static_cast<uint32_t>(_r.number(v, "nsid", p).value_or(0));
    if (!v.contains("nsid")) _r.error(p + ".nsid", "missing required key");
    const std::string label = sub + " nsid " + std::to_string(ns.nsid);
    if (!_r.flag(v, "enable", p).value_or(true)) {
      note(label + ": disabled (enable 0): not imported (nvmetune has no disabled namespaces)");
      return std::nullopt;
    }
    const json& dev = _r.object(v, "device", p);
    ns.backend.kind = "file";
    ns.backend.path = _r.string(dev, "path", p + ".device").value_or("");
    ns.backend.direct = !_r.flag(v, "buffered_io", p).value_or(false);
    if (auto uuid = _r.string(dev, "uuid", p + ".device"); uuid && *uuid != zero_nguid) ns.uuid = *uuid;
    if (auto nguid = _r.string(dev, "nguid", p + ".device"); nguid && *nguid != zero_nguid)
      note(label + ": device.nguid " + *nguid + ": no equivalent (nvmetune reports the UUID only)");
    if (v.contains("ana_grpid") && v["ana_grpid"] != 1 && v["ana_grpid"] != "1")
      note(label + ": ana_grpid " + v["ana_grpid"].dump() + ": no equivalent (no ANA)");
    if (auto extra = import::other_keys(v, namespace_keys); !extra.empty()) note(label + ": " + extra + ": not imported");
    if (auto extra = import::other_keys(dev, device_keys); !extra.empty()) note(label + ": device " + extra + ": not imported");
    return ns;
  }

  std::vector<std::set<std::string>> _port_subsystems;  // per imported TCP port
};

}  // namespace

ImportResult import_nvmetcli(const nlohmann::json& doc) { return import::run_importer<NvmetcliImport>(doc); }

}  // namespace data
