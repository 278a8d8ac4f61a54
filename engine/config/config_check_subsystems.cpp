// Pass 2 for what is served: listeners, subsystems, namespaces and their backends (config_check.hpp).
#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <optional>
#include <set>
#include <tuple>

#include "engine/config/config_check.hpp"
#include "engine/control/transport_factory.hpp"
#include "engine/core/wire_text.hpp"
#include "engine/nvme/spec.hpp"

namespace control {

namespace {

constexpr std::string_view discovery_nqn = "nqn.2014-08.org.nvmexpress.discovery";
constexpr size_t serial_max_bytes = 20;     // Identify Controller SN
constexpr size_t model_max_bytes = 40;      // Identify Controller MN
constexpr uint32_t nsid_max = 1024;
// A backend delay models a slow medium; beyond a second it only hides a typo (ms for µs).
constexpr uint32_t max_backend_delay_us = 1'000'000;
constexpr uint32_t port_max = 65535;

std::optional<std::string> nqn_problem(std::string_view nqn) {
  if (nqn.substr(0, 4) != "nqn.")
    return "invalid NQN " + json_quote(nqn) + ": must start with \"nqn.\" (e.g. \"nqn.2026-12.io.example:name\")";
  if (nqn.size() > nvme::nqn_max_bytes)
    return "invalid NQN: " + std::to_string(nqn.size()) + " bytes, at most " +
           std::to_string(nvme::nqn_max_bytes) + " allowed";
  // Hosts connecting with control characters in an NQN are refused (fabrics.cpp): one rule.
  if (!core::is_display_safe(nqn)) return "invalid NQN " + json_quote(nqn) + ": holds control characters";
  return std::nullopt;
}

bool is_printable_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

bool is_uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::optional<uint32_t> port_number(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || v > port_max) return std::nullopt;
  return v;
}

void check_backend(Checker& c, const NamespaceConfig& ns, const std::string& p) {
  const auto& b = ns.backend;
  const bool is_file = b.kind == "file";
  if (b.kind != "ram" && b.kind != "null" && !is_file) {
    c.error(p + ".backend", "unknown backend " + json_quote(b.kind) + " (expected \"ram\", \"null\" or \"file\")");
    return;
  }
  if (!is_file && b.size_bytes == 0) c.error(p + ".size", "required for backend " + json_quote(b.kind));
  if (!is_file && !b.path.empty()) c.error(p + ".path", "only backend \"file\" takes a path");
  if (is_file && b.path.empty()) c.error(p + ".path", "required for backend \"file\"");
  if (is_file && b.create && b.size_bytes == 0)
    c.error(p + ".size", "required when \"create\" is true (the size of the new file)");
  if (is_file && b.delay_us != 0) c.error(p + ".delay_us", "only backends \"null\" and \"ram\" take a delay");
  c.range(p + ".delay_us", b.delay_us, 0, max_backend_delay_us);
  if (b.populate && b.kind != "ram") c.error(p + ".populate", "only backend \"ram\" can be populated");
  if (b.size_bytes != 0 && (ns.block_size == 512 || ns.block_size == 4096) &&
      b.size_bytes % ns.block_size != 0)
    c.error(p + ".size", "must be a multiple of block_size " + std::to_string(ns.block_size) +
                             " (got " + std::to_string(b.size_bytes) + " bytes)");
}

void check_namespaces(Checker& c, const std::vector<NamespaceConfig>& namespaces, const std::string& sp) {
  std::set<uint32_t> nsids;
  for (size_t j = 0; j < namespaces.size(); ++j) {
    const auto& ns = namespaces[j];
    const auto p = index_path(sp + ".namespaces", j);
    check_namespace(c, ns, p);
    if (!c.broken(p + ".nsid") && ns.nsid >= 1 && ns.nsid <= nsid_max && !nsids.insert(ns.nsid).second)
      c.error(p + ".nsid", "duplicate nsid " + std::to_string(ns.nsid) + " in this subsystem");
  }
}

// The registry's names as the error lists them: "tcp", "rdma".
std::string supported_transports() {
  std::string out;
  for (const auto name : transport_names()) out += (out.empty() ? "" : ", ") + json_quote(name);
  return out;
}

}  // namespace

void check_listeners(Checker& c, const std::vector<ListenerConfig>& listeners) {
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (size_t i = 0; i < listeners.size(); ++i) {
    const auto& l = listeners[i];
    const auto p = index_path("$.listeners", i);
    if (!known_transport(l.trtype))
      c.error(p + ".trtype", "unsupported transport " + json_quote(l.trtype) + " (this build supports: " + supported_transports() + ")");
    in_addr addr{};
    if (inet_pton(AF_INET, l.traddr.c_str(), &addr) != 1)
      c.error(p + ".traddr", "invalid IPv4 address " + json_quote(l.traddr) + " (e.g. \"127.0.0.1\" or \"0.0.0.0\")");
    auto port = port_number(l.trsvcid);
    if (!port)
      c.error(p + ".trsvcid", "invalid port " + json_quote(l.trsvcid) + " (expected 0..65535; 0 = any free port)");
    else if (*port != 0 && !c.broken(p) && !seen.emplace(l.trtype, l.traddr, std::to_string(*port)).second)
      c.error(p, "duplicate listener " + l.traddr + ":" + std::to_string(*port));
  }
}

void check_namespace(Checker& c, const NamespaceConfig& ns, const std::string& p) {
  c.range(p + ".nsid", ns.nsid, 1, nsid_max);
  if (ns.block_size != 512 && ns.block_size != 4096)
    c.error(p + ".block_size", "must be 512 or 4096 (got " + std::to_string(ns.block_size) + ")");
  if (!ns.uuid.empty() && !is_uuid(ns.uuid))
    c.error(p + ".uuid", "invalid UUID " + json_quote(ns.uuid) + " (expected 8-4-4-4-12 hex digits)");
  check_backend(c, ns, p);
}

void check_subsystem(Checker& c, const SubsystemConfig& s, const std::string& p) {
  if (auto problem = nqn_problem(s.nqn)) c.error(p + ".nqn", *problem);
  else if (s.nqn == discovery_nqn)
    c.error(p + ".nqn", "the discovery subsystem NQN is reserved (the engine serves it itself)");
  if (s.serial.size() > serial_max_bytes || !is_printable_ascii(s.serial))
    c.error(p + ".serial", "must be at most 20 printable ASCII characters");
  if (s.model.size() > model_max_bytes || !is_printable_ascii(s.model))
    c.error(p + ".model", "must be at most 40 printable ASCII characters");
  std::set<std::string> hosts;
  for (size_t i = 0; i < s.hosts.size(); ++i) {
    auto hp = index_path(p + ".hosts", i);
    if (auto problem = nqn_problem(s.hosts[i])) c.error(hp, *problem);
    else if (!hosts.insert(s.hosts[i]).second) c.error(hp, "duplicate host " + json_quote(s.hosts[i]));
  }
  // allow_any_host=false with no hosts is valid: the subsystem is closed until hosts are added.
  check_namespaces(c, s.namespaces, p);
}

void check_subsystems(Checker& c, const std::vector<SubsystemConfig>& subsystems) {
  std::set<std::string> nqns;
  for (size_t i = 0; i < subsystems.size(); ++i) {
    const auto p = index_path("$.subsystems", i);
    check_subsystem(c, subsystems[i], p);
    if (!c.broken(p + ".nqn") && !subsystems[i].nqn.empty() && !nqns.insert(subsystems[i].nqn).second)
      c.error(p + ".nqn", "duplicate subsystem NQN " + json_quote(subsystems[i].nqn));
  }
}

}  // namespace control
