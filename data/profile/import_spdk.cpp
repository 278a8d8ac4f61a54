// SPDK's save_config into a profile (profile_import.hpp). A save is a replay log of RPCs per
// SPDK subsystem; the "bdev" calls become backends (malloc → ram, null → null, aio/uring →
// file) and the "nvmf" calls the transport, subsystems, listeners, namespaces and hosts. Calls
// are read in two passes (bdevs first) so the order of sections does not matter.
#include <algorithm>
#include <map>
#include <set>

#include "data/profile/import_reader.hpp"
#include "data/profile/profile_import.hpp"
#include "data/profile/spdk_mapping.hpp"
#include "engine/config/config_json.hpp"

namespace data {

namespace {

using import::json;
using import::index_path;

using spdk::discovery_nqn;
constexpr uint32_t nsid_limit = 1024;

constexpr std::string_view bdev_keys[] = {"name", "num_blocks", "block_size", "uuid", "filename"};
constexpr std::string_view transport_keys[] = {"trtype", "max_queue_depth", "max_io_qpairs_per_ctrlr",
                                               "in_capsule_data_size", "max_io_size", spdk::sock_priority_key};
constexpr std::string_view create_subsystem_keys[] = {"nqn", "serial_number", "model_number", "allow_any_host"};
constexpr std::string_view listener_keys[] = {"nqn", "listen_address"};
constexpr std::string_view address_keys[] = {"trtype", "adrfam", "traddr", "trsvcid"};
constexpr std::string_view add_ns_keys[] = {"nqn", "namespace"};
constexpr std::string_view ns_keys[] = {"nsid", "bdev_name", "uuid"};
constexpr std::string_view add_host_keys[] = {"nqn", "host"};
constexpr std::string_view allow_any_keys[] = {"nqn", "allow_any_host"};
struct Bdev {
  control::NamespaceConfig ns;  // backend and block size; nsid and uuid come from add_ns
};

class SpdkImport : import::Importer {
 public:
  explicit SpdkImport(ImportResult& out) : Importer(out) {}

  void run(const json& doc) {
    if (!doc.is_object()) return _r.error("$", std::string("expected the object save_config writes, got ") + doc.type_name());
    const json& subs = _r.array(doc, "subsystems", "$");
    std::vector<std::string> library;
    for (size_t i = 0; i < subs.size(); ++i) {
      const auto p = index_path("$.subsystems", i);
      const std::string name = _r.string(subs[i], "subsystem", p).value_or("");
      const json& config = _r.array(subs[i], "config", p);
      if (name == "bdev") for_each_call(config, p + ".config", [&](const auto&... a) { bdev_call(a...); });
      else if (name != "nvmf" && !config.empty()) library.push_back(name);
    }
    for (size_t i = 0; i < subs.size(); ++i) {
      const auto p = index_path("$.subsystems", i);
      if (_r.string(subs[i], "subsystem", p).value_or("") == "nvmf")
        for_each_call(_r.array(subs[i], "config", p), p + ".config", [&](const auto&... a) { nvmf_call(a...); });
    }
    if (!library.empty()) {
      std::string names;
      for (const auto& n : library) names += (names.empty() ? "" : ", ") + n;
      note("SPDK subsystems " + names + ": SPDK library settings, no equivalent");
    }
    finish();
  }

 private:
  template <typename Fn>
  void for_each_call(const json& config, const std::string& path, Fn fn) {
    for (size_t j = 0; j < config.size(); ++j) {
      const auto p = index_path(path, j);
      const std::string method = _r.string(config[j], "method", p).value_or("");
      if (!config[j].contains("method")) _r.error(p + ".method", "missing required key");
      const json& params = _r.object(config[j], "params", p);
      fn(method, params, p + ".params");
    }
  }

  template <size_t N>
  void note_extra(const std::string& what, const json& params, const std::string_view (&known)[N]) {
    if (auto extra = import::other_keys(params, known); !extra.empty()) note(what + ": " + extra + ": no equivalent");
  }

  void bdev_call(const std::string& method, const json& params, const std::string& p) {
    const std::string name = _r.string(params, "name", p).value_or("");
    Bdev b;
    const auto* kind = std::find_if(std::begin(spdk::bdev_kinds), std::end(spdk::bdev_kinds), [&](const auto& k) { return k.method == method; });
    const std::string_view backend = kind != std::end(spdk::bdev_kinds) ? kind->backend : method == "bdev_uring_create" ? "file" : "";
    if (backend == "ram" || backend == "null") {
      b.ns.backend.kind = backend;
      const uint64_t blocks = _r.number(params, "num_blocks", p).value_or(0);
      b.ns.block_size = static_cast<uint32_t>(_r.number(params, "block_size", p).value_or(512));
      b.ns.backend.size_bytes = blocks * b.ns.block_size;
    } else if (backend == "file") {
      b.ns.backend.kind = "file";
      b.ns.backend.path = _r.string(params, "filename", p).value_or("");
      b.ns.backend.direct = true;
      if (auto bs = _r.number(params, "block_size", p); bs && *bs != 0) b.ns.block_size = static_cast<uint32_t>(*bs);
    } else {
      if (spdk::creates_bdev(method))
        note("bdev " + method + (name.empty() ? "" : " " + name) + ": no equivalent (nvmetune backends: ram, null, file)");
      else
        _library_bdev_calls.insert(method);
      return;
    }
    if (auto uuid = _r.string(params, "uuid", p)) b.ns.uuid = *uuid;
    note_extra("bdev " + method + " " + name, params, bdev_keys);
    _bdevs[name] = std::move(b);
  }

  void nvmf_call(const std::string& method, const json& params, const std::string& p) {
    if (method == "nvmf_create_transport") return transport(params, p);
    if (method == "nvmf_create_subsystem") return create_subsystem(params, p);
    if (method == "nvmf_subsystem_add_listener") return add_listener(params, p);
    if (method == "nvmf_subsystem_add_ns") return add_ns(params, p);
    if (method == "nvmf_subsystem_add_host") return add_host(params, p);
    if (method == "nvmf_subsystem_allow_any_host") {
      if (auto* s = subsystem(params, p)) s->allow_any_host = _r.flag(params, "allow_any_host", p).value_or(s->allow_any_host);
      note_extra(method, params, allow_any_keys);
      return;
    }
    std::string what = "nvmf " + method;
    if (method == "nvmf_set_config" && params.contains("poll_groups_mask"))
      what += " (poll_groups_mask " + params["poll_groups_mask"].dump() +
              ": SPDK's reactors always poll; nvmetune's nearest is threading.mode \"poll\")";
    note(what + ": no equivalent");
  }

  void transport(const json& params, const std::string& p) {
    std::string trtype = _r.string(params, "trtype", p).value_or("");
    std::transform(trtype.begin(), trtype.end(), trtype.begin(), [](unsigned char c) { return std::tolower(c); });
    if (trtype != "tcp") return note("nvmf_create_transport " + trtype + ": no equivalent (nvmetune serves tcp)");
    control::TcpConfig tcp;
    for (const auto& f : spdk::transport_fields)
      if (auto n = _r.number(params, f.key.data(), p)) tcp.*f.field = static_cast<uint32_t>(*n);
    if (auto n = _r.number(params, spdk::sock_priority_key.data(), p); n && *n != 0) tcp.so_priority = static_cast<int>(*n);
    note_extra("nvmf_create_transport TCP", params, transport_keys);
    _out.profile.tcp = tcp;
  }

  void create_subsystem(const json& params, const std::string& p) {
    control::SubsystemConfig s;
    s.nqn = _r.string(params, "nqn", p).value_or("");
    if (!params.contains("nqn")) _r.error(p + ".nqn", "missing required key");
    if (s.nqn == discovery_nqn) return;  // the engine serves discovery itself
    s.serial = _r.string(params, "serial_number", p).value_or("");
    if (auto m = _r.string(params, "model_number", p)) s.model = *m;
    s.allow_any_host = _r.flag(params, "allow_any_host", p).value_or(false);
    note_extra("nvmf_create_subsystem " + s.nqn, params, create_subsystem_keys);
    _subsystems.push_back(std::move(s));
  }

  control::SubsystemConfig* subsystem(const json& params, const std::string& p) {
    const std::string nqn = _r.string(params, "nqn", p).value_or("");
    for (auto& s : _subsystems)
      if (s.nqn == nqn) return &s;
    if (nqn != discovery_nqn) _r.error(p + ".nqn", "no nvmf_create_subsystem before for " + json(nqn).dump());
    return nullptr;
  }

  void add_listener(const json& params, const std::string& p) {
    const std::string nqn = _r.string(params, "nqn", p).value_or("");
    const json& a = _r.object(params, "listen_address", p);
    const auto ap = p + ".listen_address";
    std::string trtype = _r.string(a, "trtype", ap).value_or(""), adrfam = _r.string(a, "adrfam", ap).value_or("IPv4");
    std::transform(trtype.begin(), trtype.end(), trtype.begin(), [](unsigned char c) { return std::tolower(c); });
    std::transform(adrfam.begin(), adrfam.end(), adrfam.begin(), [](unsigned char c) { return std::tolower(c); });
    control::ListenerConfig l{"tcp", _r.string(a, "traddr", ap).value_or(""), _r.string(a, "trsvcid", ap).value_or("4420")};
    const std::string where = "listener " + trtype + " " + l.traddr + ":" + l.trsvcid + " of " + nqn;
    note_extra("nvmf_subsystem_add_listener " + nqn, params, listener_keys);
    note_extra(where, a, address_keys);
    if (trtype != "tcp") return note(where + ": transport " + trtype + " has no equivalent (nvmetune serves tcp)");
    if (adrfam != "ipv4") return note(where + ": address family " + adrfam + " has no equivalent (IPv4 only)");
    _listeners_of[nqn].insert(l.traddr + ":" + l.trsvcid);
    const bool dup = std::any_of(_listeners.begin(), _listeners.end(),
                                 [&](const auto& x) { return x.traddr == l.traddr && x.trsvcid == l.trsvcid; });
    if (!dup) _listeners.push_back(std::move(l));
  }

  void add_ns(const json& params, const std::string& p) {
    auto* s = subsystem(params, p);
    const json& n = _r.object(params, "namespace", p);
    const auto np = p + ".namespace";
    const std::string bdev = _r.string(n, "bdev_name", np).value_or("");
    if (!n.contains("bdev_name")) _r.error(np + ".bdev_name", "missing required key");
    note_extra("nvmf_subsystem_add_ns bdev " + bdev, n, ns_keys);
    note_extra("nvmf_subsystem_add_ns bdev " + bdev, params, add_ns_keys);
    if (!s) return;
    auto it = _bdevs.find(bdev);
    if (it == _bdevs.end()) return note(s->nqn + ": namespace of bdev " + json(bdev).dump() + ": not imported (its bdev has no equivalent, or is missing)");
    control::NamespaceConfig ns = it->second.ns;
    // SPDK numbers a namespace added without nsid with the lowest free one; so do we.
    uint32_t nsid = static_cast<uint32_t>(_r.number(n, "nsid", np).value_or(0));
    for (uint32_t candidate = 1; nsid == 0 && candidate <= nsid_limit; ++candidate)
      if (std::none_of(s->namespaces.begin(), s->namespaces.end(), [&](const auto& x) { return x.nsid == candidate; })) nsid = candidate;
    ns.nsid = nsid;
    if (auto uuid = _r.string(n, "uuid", np)) ns.uuid = *uuid;
    s->namespaces.push_back(std::move(ns));
  }

  void add_host(const json& params, const std::string& p) {
    auto* s = subsystem(params, p);
    auto host = _r.string(params, "host", p);
    if (!params.contains("host")) _r.error(p + ".host", "missing required key");
    note_extra("nvmf_subsystem_add_host " + host.value_or("?"), params, add_host_keys);
    if (s && host) s->hosts.push_back(*host);
  }

  void finish() {
    if (!_library_bdev_calls.empty()) {
      std::string names;
      for (const auto& n : _library_bdev_calls) names += (names.empty() ? "" : ", ") + n;
      note("bdev " + names + ": SPDK bdev library settings, no equivalent");
    }
    std::set<std::string> all;
    for (const auto& l : _listeners) all.insert(l.traddr + ":" + l.trsvcid);
    for (const auto& s : _subsystems)
      if (_listeners_of[s.nqn] != all)
        note("subsystem " + s.nqn + ": not on every listener; nvmetune serves every subsystem on every listener");
    _out.profile.listeners = std::move(_listeners);
    _out.profile.subsystems = std::move(_subsystems);
    _out.profile.description = "imported from SPDK save_config";
  }

  std::map<std::string, Bdev> _bdevs;
  std::set<std::string> _library_bdev_calls;
  std::vector<control::SubsystemConfig> _subsystems;
  std::vector<control::ListenerConfig> _listeners;
  std::map<std::string, std::set<std::string>> _listeners_of;
};

}  // namespace

ImportResult import_spdk(const nlohmann::json& doc) { return import::run_importer<SpdkImport>(doc); }

}  // namespace data
