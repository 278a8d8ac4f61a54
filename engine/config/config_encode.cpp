// Configuration → JSON (config_json.hpp's encoders): the shape parse_config reads back.
#include "engine/system/topology.hpp"
#include "engine/config/config_json.hpp"

namespace control {

using json = nlohmann::json;

json to_json(const ThreadingConfig& t) {
  return {{"mode", t.mode},
          {"cpumask", t.cpus.empty() ? std::string(all_cpus) : sys::format_cpu_list(t.cpus)},
          {"threads", t.threads},
          {"queue_cpu", t.queue_cpu},
          {"affinity_scope", t.affinity_scope},
          {"strict", t.strict},
          {"first_core", t.first_core},
          {"idle_poll_us", t.idle_poll_us},
          {"idle_poll_period_us", t.idle_poll_period_us},
          {"idle_poll_adaptive", t.idle_poll_adaptive},
          {"priority", t.priority},
          {"inline_budget", t.inline_budget},
          {"io_mechanism", t.io_mechanism}};
}

json to_json(const BudgetConfig& b) {
  return {{"recv_pdus", b.recv_pdus},     {"send_pdus", b.send_pdus},     {"ops_per_pass", b.ops_per_pass},
          {"bytes_per_pass", b.bytes_per_pass}, {"deadline_us", b.deadline_us}, {"reap_batch", b.reap_batch}};
}

json to_json(const NamespaceConfig& ns) {
  json j = {{"nsid", ns.nsid}, {"backend", ns.backend.kind}, {"block_size", ns.block_size}};
  if (ns.backend.size_bytes) j["size"] = ns.backend.size_bytes;
  if (!ns.uuid.empty()) j["uuid"] = ns.uuid;
  if (ns.backend.delay_us) j["delay_us"] = ns.backend.delay_us;
  if (ns.backend.populate) j["populate"] = true;
  if (ns.backend.kind == "file")
    j.update({{"path", ns.backend.path}, {"create", ns.backend.create}, {"direct", ns.backend.direct}});
  return j;
}

json to_json(const SubsystemConfig& s) {
  json namespaces = json::array();
  for (const auto& ns : s.namespaces) namespaces.push_back(to_json(ns));
  return {{"nqn", s.nqn},     {"serial", s.serial}, {"model", s.model}, {"allow_any_host", s.allow_any_host},
          {"hosts", s.hosts}, {"namespaces", std::move(namespaces)}};
}

json to_json(const TcpConfig& t) {
  return {{"in_capsule_data_size", t.in_capsule_data_size}, {"maxh2cdata", t.maxh2cdata},
          {"queue_depth", t.queue_depth}, {"max_io_queues", t.max_io_queues}, {"mdts_bytes", t.mdts_bytes},
          {"so_priority", t.so_priority}, {"busy_poll_us", t.busy_poll_us}, {"prefer_busy_poll", t.prefer_busy_poll},
          {"socket_buffer_bytes", t.socket_buffer_bytes}, {"max_connections", t.max_connections}, {"connect_timeout_ms", t.connect_timeout_ms},
          {"discovery_kato_ms", t.discovery_kato_ms}, {"arrival_stamps", t.arrival_stamps}};
}

json to_json(const RdmaConfig& r) {
  return {{"data_pool_bytes", r.data_pool_bytes}, {"use_srq", r.use_srq}, {"srq_size", r.srq_size},
          {"comp_vector", r.comp_vector}};
}

json to_json(const ListenerConfig& l) { return {{"trtype", l.trtype}, {"traddr", l.traddr}, {"trsvcid", l.trsvcid}}; }

json to_json(const Config& c) {
  json listeners = json::array();
  for (const auto& l : c.listeners) listeners.push_back(to_json(l));
  json subsystems = json::array();
  for (const auto& s : c.subsystems) subsystems.push_back(to_json(s));
  return {{"listeners", std::move(listeners)},
          {"subsystems", std::move(subsystems)},
          {"tcp", to_json(c.tcp)},
          {"rdma", to_json(c.rdma)},
          {"threading", to_json(c.threading)},
          {"budgets", to_json(c.budgets)}};
}

}  // namespace control
