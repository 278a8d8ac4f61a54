// Pass 1 of configuration parsing: shape and types (config_read.hpp).
#include "engine/config/config_read.hpp"

#include <array>
#include <optional>
#include <string_view>

#include "engine/json/json_path.hpp"
#include "engine/config/settings_schema.hpp"

namespace control {

namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, 6> root_keys{"listeners", "subsystems", "tcp", "threading", "budgets", "rdma"};
constexpr std::array<std::string_view, 3> listener_keys{"trtype", "traddr", "trsvcid"};
constexpr std::array<std::string_view, 1> listener_required{"traddr"};
constexpr std::array<std::string_view, 6> subsystem_keys{"nqn", "serial", "model",
                                                         "allow_any_host", "hosts", "namespaces"};
constexpr std::array<std::string_view, 1> subsystem_required{"nqn"};
constexpr std::array<std::string_view, 10> namespace_keys{"nsid", "backend", "size", "block_size", "uuid",
                                                          "path", "create", "direct", "delay_us", "populate"};
constexpr std::array<std::string_view, 2> namespace_required{"nsid", "backend"};

// The tuning sections' keys are the settings schema's.
const std::vector<std::string_view>& section_keys(std::string_view section) {
  static const std::vector<std::string_view> tcp = setting_keys("tcp"), threading = setting_keys("threading"),
                                             budgets = setting_keys("budgets"), rdma = setting_keys("rdma");
  return section == "tcp" ? tcp : section == "threading" ? threading : section == "rdma" ? rdma : budgets;
}

// A CPU list string ("0-3,6"), or "all" (= every online CPU, an empty vector).
std::optional<std::vector<unsigned>> read_cpu_list(JsonReader& r, const json& obj, std::string_view key,
                                                   const std::string& path) {
  auto text = r.string(obj, key, path);
  if (!text) return std::nullopt;
  auto mask = parse_cpu_mask(*text);
  if (mask.problem) {
    r.error(member_path(path, key), *mask.problem);
    return std::nullopt;
  }
  return std::move(mask.cpus);
}

// A port: a decimal string, or an integer (turned into decimal text); range checked in pass 2.
std::optional<std::string> read_port(JsonReader& r, const json& obj, std::string_view key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  auto p = member_path(path, key);
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_number()) return r.type_error(p, "a port number (integer or string)", *it);
  auto v = r.unsigned_value(*it, p);
  if (!v) return std::nullopt;
  return std::to_string(*v);
}

}  // namespace

ListenerConfig read_listener(JsonReader& r, const json& v, const std::string& path) {
  ListenerConfig l;
  if (!r.object(v, path, listener_keys, listener_required)) return l;
  if (auto s = r.string(v, "trtype", path)) l.trtype = *s;
  if (auto s = r.string(v, "traddr", path)) l.traddr = *s;
  if (auto s = read_port(r, v, "trsvcid", path)) l.trsvcid = *s;
  return l;
}

NamespaceConfig read_namespace(JsonReader& r, const json& v, const std::string& path) {
  NamespaceConfig ns;
  if (!r.object(v, path, namespace_keys, namespace_required)) return ns;
  if (auto n = r.u32(v, "nsid", path)) ns.nsid = *n;
  if (auto s = r.string(v, "backend", path)) ns.backend.kind = *s;
  if (auto n = r.size(v, "size", path)) ns.backend.size_bytes = *n;
  if (auto n = r.u32(v, "block_size", path)) ns.block_size = *n;
  if (auto s = r.string(v, "uuid", path)) ns.uuid = *s;
  if (auto s = r.string(v, "path", path)) ns.backend.path = *s;
  if (auto b = r.boolean(v, "create", path)) ns.backend.create = *b;
  if (auto b = r.boolean(v, "direct", path)) ns.backend.direct = *b;
  if (auto n = r.u32(v, "delay_us", path)) ns.backend.delay_us = *n;
  if (auto b = r.boolean(v, "populate", path)) ns.backend.populate = *b;
  return ns;
}

SubsystemConfig read_subsystem(JsonReader& r, const json& v, const std::string& path) {
  SubsystemConfig s;
  if (!r.object(v, path, subsystem_keys, subsystem_required)) return s;
  if (auto t = r.string(v, "nqn", path)) s.nqn = *t;
  if (auto t = r.string(v, "serial", path)) s.serial = *t;
  if (auto t = r.string(v, "model", path)) s.model = *t;
  if (auto b = r.boolean(v, "allow_any_host", path)) s.allow_any_host = *b;
  if (auto h = r.strings(v, "hosts", path)) s.hosts = std::move(*h);
  if (const json* arr = r.array(v, "namespaces", path)) {
    auto p = member_path(path, "namespaces");
    for (size_t i = 0; i < arr->size(); ++i)
      s.namespaces.push_back(read_namespace(r, (*arr)[i], index_path(p, i)));
  }
  return s;
}

void read_tcp(JsonReader& r, const json& v, const std::string& path, TcpConfig& tcp) {
  if (!r.object(v, path, section_keys("tcp"), {})) return;
  if (auto n = r.u32(v, "in_capsule_data_size", path)) tcp.in_capsule_data_size = *n;
  if (auto n = r.u32(v, "maxh2cdata", path)) tcp.maxh2cdata = *n;
  if (auto n = r.u32(v, "queue_depth", path)) tcp.queue_depth = *n;
  if (auto n = r.u32(v, "max_io_queues", path)) tcp.max_io_queues = *n;
  if (auto n = r.u32(v, "mdts_bytes", path)) tcp.mdts_bytes = *n;
  if (auto n = r.integer(v, "so_priority", path)) tcp.so_priority = *n;
  if (auto n = r.u32(v, "busy_poll_us", path)) tcp.busy_poll_us = *n;
  if (auto b = r.boolean(v, "prefer_busy_poll", path)) tcp.prefer_busy_poll = *b;
  if (auto n = r.size(v, "socket_buffer_bytes", path, true)) tcp.socket_buffer_bytes = *n;
  if (auto n = r.u32(v, "max_connections", path)) tcp.max_connections = *n;
  if (auto n = r.u32(v, "connect_timeout_ms", path)) tcp.connect_timeout_ms = *n;
  if (auto n = r.u32(v, "discovery_kato_ms", path)) tcp.discovery_kato_ms = *n;
  if (auto b = r.boolean(v, "arrival_stamps", path)) tcp.arrival_stamps = *b;
}

void read_rdma(JsonReader& r, const json& v, const std::string& path, RdmaConfig& rdma) {
  if (!r.object(v, path, section_keys("rdma"), {})) return;
  if (auto n = r.size(v, "data_pool_bytes", path, false)) rdma.data_pool_bytes = *n;
  if (auto b = r.boolean(v, "use_srq", path)) rdma.use_srq = *b;
  if (auto n = r.u32(v, "srq_size", path)) rdma.srq_size = *n;
  if (auto n = r.integer(v, "comp_vector", path)) rdma.comp_vector = *n;
}

void read_threading(JsonReader& r, const json& v, const std::string& path, ThreadingConfig& t) {
  if (!r.object(v, path, section_keys("threading"), {})) return;
  if (auto s = r.string(v, "mode", path)) t.mode = *s;
  if (auto c = read_cpu_list(r, v, "cpumask", path)) t.cpus = std::move(*c);
  if (auto n = r.u32(v, "threads", path)) t.threads = *n;
  if (auto s = r.string(v, "queue_cpu", path)) t.queue_cpu = *s;
  if (auto s = r.string(v, "affinity_scope", path)) t.affinity_scope = *s;
  if (auto b = r.boolean(v, "strict", path)) t.strict = *b;
  if (auto n = r.integer(v, "first_core", path)) t.first_core = *n;
  if (auto n = r.u32(v, "idle_poll_us", path)) t.idle_poll_us = *n;
  if (auto n = r.u32(v, "idle_poll_period_us", path)) t.idle_poll_period_us = *n;
  if (auto b = r.boolean(v, "idle_poll_adaptive", path)) t.idle_poll_adaptive = *b;
  if (auto s = r.string(v, "priority", path)) t.priority = *s;
  if (auto n = r.u32(v, "inline_budget", path)) t.inline_budget = *n;
  if (auto s = r.string(v, "io_mechanism", path)) t.io_mechanism = *s;
}

void read_budgets(JsonReader& r, const json& v, const std::string& path, BudgetConfig& b) {
  if (!r.object(v, path, section_keys("budgets"), {})) return;
  if (auto n = r.u32(v, "recv_pdus", path)) b.recv_pdus = *n;
  if (auto n = r.u32(v, "send_pdus", path)) b.send_pdus = *n;
  if (auto n = r.u32(v, "ops_per_pass", path)) b.ops_per_pass = *n;
  // A size wider than the field is refused here, where its text is still known.
  static const uint64_t bytes_max = static_cast<uint64_t>(*find_setting("budgets.bytes_per_pass")->max);
  if (auto n = r.size(v, "bytes_per_pass", path, true)) {
    if (*n <= bytes_max) b.bytes_per_pass = static_cast<uint32_t>(*n);
    else r.error(member_path(path, "bytes_per_pass"), "out of range: " + std::to_string(*n) + " (expected 0.." +
                                                          std::to_string(bytes_max) + ", i.e. at most 1GiB)");
  }
  if (auto n = r.u32(v, "deadline_us", path)) b.deadline_us = *n;
  if (auto n = r.u32(v, "reap_batch", path)) b.reap_batch = *n;
}

Config read_config(JsonReader& r, const json& doc) {
  Config c;
  if (!r.object(doc, "$", root_keys, {})) return c;
  if (const json* arr = r.array(doc, "listeners", "$")) {
    for (size_t i = 0; i < arr->size(); ++i)
      c.listeners.push_back(read_listener(r, (*arr)[i], index_path("$.listeners", i)));
  }
  if (const json* arr = r.array(doc, "subsystems", "$")) {
    for (size_t i = 0; i < arr->size(); ++i)
      c.subsystems.push_back(read_subsystem(r, (*arr)[i], index_path("$.subsystems", i)));
  }
  if (auto it = doc.find("tcp"); it != doc.end()) read_tcp(r, *it, "$.tcp", c.tcp);
  if (auto it = doc.find("threading"); it != doc.end()) read_threading(r, *it, "$.threading", c.threading);
  if (auto it = doc.find("budgets"); it != doc.end()) read_budgets(r, *it, "$.budgets", c.budgets);
  if (auto it = doc.find("rdma"); it != doc.end()) read_rdma(r, *it, "$.rdma", c.rdma);
  return c;
}

}  // namespace control
