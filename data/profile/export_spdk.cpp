// A profile as SPDK's load_config input (profile_export.hpp): the "bdev" subsystem creates one
// bdev per namespace (ram → malloc, null → null, file → aio), the "nvmf" subsystem replays the
// TCP transport, subsystems, hosts, namespaces and listeners. nvmetune serves every subsystem on
// every listener; SPDK listens per subsystem, so each subsystem gets every listener.
#include <algorithm>

#include "data/profile/export_notes.hpp"
#include "data/profile/profile_export.hpp"
#include "data/profile/spdk_mapping.hpp"

namespace data {

namespace {

using json = nlohmann::json;

json call(std::string_view method, json params) { return {{"method", std::string(method)}, {"params", std::move(params)}}; }

class SpdkExport {
 public:
  explicit SpdkExport(ExportResult& out) : _notes(out.not_mapped, "SPDK"), _out(out) {}

  void run(const Profile& p) {
    _notes.tuning_sections(p);
    const auto listeners = _notes.listeners(p);
    if (p.tcp || p.subsystems) _nvmf.push_back(transport(p.tcp.value_or(control::TcpConfig{})));
    if (!listeners.empty() && (!p.subsystems || p.subsystems->empty()))
      _notes.no_equivalent("listeners without subsystems", "SPDK listens per subsystem");
    const auto& subsystems = p.subsystems.value_or(std::vector<control::SubsystemConfig>{});
    for (size_t i = 0; i < subsystems.size(); ++i) subsystem(subsystems[i], i, listeners);
    _out.doc = {{"subsystems", json::array({{{"subsystem", "bdev"}, {"config", std::move(_bdevs)}},
                                            {{"subsystem", "nvmf"}, {"config", std::move(_nvmf)}}})}};
  }

 private:
  json transport(const control::TcpConfig& t) {
    json params = {{"trtype", "TCP"}};
    std::vector<std::string_view> mapped = {"so_priority"};
    for (const auto& f : spdk::transport_fields) {
      params[std::string(f.key)] = t.*f.field;
      mapped.push_back(f.setting);
    }
    if (t.so_priority > 0) params[std::string(spdk::sock_priority_key)] = t.so_priority;
    if (t.so_priority == 0) _notes.no_equivalent("tcp.so_priority 0", "SPDK's sock_priority 0 leaves SO_PRIORITY unset");
    _notes.tcp_settings(t, mapped);
    return call("nvmf_create_transport", std::move(params));
  }

  void subsystem(const control::SubsystemConfig& s, size_t index, const std::vector<control::ListenerConfig>& listeners) {
    json params = {{"nqn", s.nqn}, {"model_number", s.model}, {"allow_any_host", s.allow_any_host}};
    if (!s.serial.empty()) params["serial_number"] = s.serial;
    _nvmf.push_back(call("nvmf_create_subsystem", std::move(params)));
    for (const auto& h : s.hosts) _nvmf.push_back(call("nvmf_subsystem_add_host", {{"nqn", s.nqn}, {"host", h}}));
    for (const auto& ns : s.namespaces) namespace_of(s.nqn, index, ns);
    for (const auto& l : listeners)
      _nvmf.push_back(call("nvmf_subsystem_add_listener",
                           {{"nqn", s.nqn},
                            {"listen_address", {{"trtype", "TCP"}, {"adrfam", "IPv4"}, {"traddr", l.traddr}, {"trsvcid", l.trsvcid}}}}));
  }

  void namespace_of(const std::string& nqn, size_t index, const control::NamespaceConfig& ns) {
    const std::string label = "subsystem " + nqn + " nsid " + std::to_string(ns.nsid);
    const auto& b = ns.backend;
    const auto* kind = std::find_if(std::begin(spdk::bdev_kinds), std::end(spdk::bdev_kinds),
                                    [&](const auto& k) { return k.backend == b.kind; });
    if (kind == std::end(spdk::bdev_kinds)) return _notes.no_equivalent(label + ": backend " + b.kind);
    const std::string name = std::string(kind->name_prefix) + std::to_string(index) + "n" + std::to_string(ns.nsid);
    json params = {{"name", name}, {"block_size", ns.block_size}};
    if (b.kind == "file") {
      params["filename"] = b.path;
      if (!b.direct) _notes.no_equivalent(label + ": buffered I/O (direct false)", "bdev_aio opens with O_DIRECT");
      if (b.create) _notes.no_equivalent(label + ": create", "bdev_aio_create needs an existing file");
      if (b.size_bytes != 0) _notes.no_equivalent(label + ": size " + std::to_string(b.size_bytes), "the aio bdev takes the file's size");
    } else {
      params["num_blocks"] = b.size_bytes / ns.block_size;
      if (b.size_bytes % ns.block_size != 0)
        _notes.no_equivalent(label + ": size " + std::to_string(b.size_bytes) + " (not whole blocks; rounded down)");
    }
    if (b.delay_us != 0) _notes.no_equivalent(label + ": delay_us " + std::to_string(b.delay_us));
    _bdevs.push_back(call(kind->method, std::move(params)));
    json n = {{"nsid", ns.nsid}, {"bdev_name", name}};
    if (!ns.uuid.empty()) n["uuid"] = ns.uuid;
    _nvmf.push_back(call("nvmf_subsystem_add_ns", {{"nqn", nqn}, {"namespace", std::move(n)}}));
  }

  exporting::Notes _notes;
  ExportResult& _out;
  json _bdevs = json::array(), _nvmf = json::array();
};

}  // namespace

ExportResult export_spdk(const Profile& p) { return exporting::run_exporter<SpdkExport>(p); }

}  // namespace data
