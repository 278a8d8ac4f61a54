// Workload options → LoadSpec (perf_options.hpp).
#include "lab/load/perf_options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "engine/config/config.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/initiator/target.hpp"
#include "engine/system/topology.hpp"

namespace lab {

namespace {

using initiator::Pattern;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// fio/spdk sizes: 4096, 4k, 4K, 128KiB, 1m, 1G (all 1024-based).
bool parse_perf_size(std::string_view text, uint64_t& out) {
  std::string s(text);
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  std::string suffix = lower(s.substr(i));
  if (suffix == "b") suffix.clear();
  if (suffix.size() == 2 && suffix[1] == 'b') suffix.resize(1);  // "kb" as fio reads it: 1024
  if (!suffix.empty()) {
    suffix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    if (suffix.size() == 3 && suffix.substr(1) == "ib") suffix = suffix.substr(0, 1) + "iB";
  }
  return control::parse_size(s.substr(0, i) + suffix, out);
}

// -r 'trtype:tcp|rdma adrfam:ipv4 traddr:127.0.0.1 trsvcid:4420 subnqn:NQN hostnqn:NQN'.
std::optional<std::string> parse_remote(const std::string& text, initiator::Target& t) {
  bool have_addr = false, have_nqn = false;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == text.size()) break;
    size_t end = pos;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    const std::string tok = text.substr(pos, end - pos);
    pos = end;
    const auto colon = tok.find_first_of(":=");
    if (colon == std::string::npos || colon == 0 || colon + 1 == tok.size())
      return "expected KEY:VALUE, got \"" + tok + "\"";
    const std::string key = lower(tok.substr(0, colon));
    const std::string value = tok.substr(colon + 1);
    if (key == "trtype") {
      const std::string v = lower(value);
      if (v != "tcp" && v != "rdma") return "trtype \"" + value + "\" is not supported (tcp or rdma)";
      t.trtype = v == "rdma" ? initiator::Transport::rdma : initiator::Transport::tcp;
    } else if (key == "adrfam") {
      const std::string v = lower(value);
      if (v != "ipv4" && v != "ipv6") return "adrfam \"" + value + "\" (expected ipv4 or ipv6)";
    } else if (key == "traddr") {
      t.traddr = value;
      have_addr = true;
    } else if (key == "trsvcid") {
      char* e = nullptr;
      errno = 0;
      const unsigned long port = std::strtoul(value.c_str(), &e, 10);
      if (errno || *e || port == 0 || port > 65535) return "trsvcid \"" + value + "\" is not a port (1..65535)";
      t.port = static_cast<uint16_t>(port);
    } else if (key == "subnqn") {
      if (value.rfind("nqn.", 0) != 0) return "subnqn \"" + value + "\" does not start with \"nqn.\"";
      t.subnqn = value;
      have_nqn = true;
    } else if (key == "hostnqn") {
      if (value.rfind("nqn.", 0) != 0) return "hostnqn \"" + value + "\" does not start with \"nqn.\"";
      t.hostnqn = value;
    } else {
      return "unknown key \"" + key + "\" (keys: trtype, adrfam, traddr, trsvcid, subnqn, hostnqn)";
    }
  }
  if (!have_addr) return "traddr missing";
  if (!have_nqn) return "subnqn missing";
  return std::nullopt;
}

// The host NQN and host ID: one given on the command line (a uuid-form NQN also gives the host
// ID, as nvme-cli derives it), else this machine's.
std::optional<std::string> resolve_host(const PerfOptions& o, initiator::Target& t, std::string& source) {
  if (!o.hostnqn.empty()) {
    if (o.hostnqn.rfind("nqn.", 0) != 0) return "--hostnqn \"" + o.hostnqn + "\" does not start with \"nqn.\"";
    t.hostnqn = o.hostnqn;
    source = "--hostnqn";
  }
  if (!t.hostnqn.empty()) {
    if (source.empty()) source = "-r hostnqn:";
    const std::string_view nqn = t.hostnqn, prefix = initiator::hostnqn_uuid_prefix;
    if (nqn.starts_with(prefix))
      if (auto uuid = initiator::parse_uuid(nqn.substr(prefix.size()))) t.hostid = *uuid;
    return std::nullopt;
  }
  auto id = initiator::default_host_identity(o.identity);
  t.hostnqn = std::move(id.hostnqn);
  t.hostid = id.hostid;
  source = std::move(id.source);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> resolve_perf_options(const PerfOptions& o, initiator::LoadSpec& spec, std::string* host_source) {
  spec.target.hostnqn.clear();  // set by -r's hostnqn: or resolve_host
  if (auto err = parse_remote(o.remote, spec.target)) return "-r: " + *err;
  std::string source;
  if (auto err = resolve_host(o, spec.target, source)) return err;
  if (host_source) *host_source = source;
  if (o.rw == "read") spec.pattern = Pattern::read;
  else if (o.rw == "write") spec.pattern = Pattern::write;
  else if (o.rw == "randread") spec.pattern = Pattern::randread;
  else if (o.rw == "randwrite") spec.pattern = Pattern::randwrite;
  else if (o.rw == "randrw") spec.pattern = Pattern::randrw;
  else return "--rw: \"" + o.rw + "\" (expected read, write, randread, randwrite or randrw)";
  if (o.rwmixread > 100) return "--rwmixread: " + std::to_string(o.rwmixread) + " (expected 0..100)";
  spec.mixread = o.rwmixread;
  uint64_t bs = 0;
  if (!parse_perf_size(o.bs, bs) || bs == 0 || bs > (1u << 30))
    return "--bs: malformed size \"" + o.bs + "\" (e.g. 512, 4k, 128k)";
  spec.bs = static_cast<uint32_t>(bs);
  if (!o.size.empty() && (!parse_perf_size(o.size, spec.size_bytes) || spec.size_bytes == 0))
    return "--size: malformed size \"" + o.size + "\" (e.g. 1G, 256m)";
  spec.time_s = o.time_s > 0 ? o.time_s : (spec.size_bytes ? 0 : 10);
  spec.ramp_s = o.ramp_s;
  if (!o.cpus.empty()) {
    auto list = sys::parse_cpu_list(o.cpus);
    if (!list.error.empty() || list.cpus.empty()) return "--cpus: malformed CPU list \"" + o.cpus + "\" (e.g. 1 or 2-3,6)";
    spec.cpus = std::move(list.cpus);
  }
  if (!o.digest.empty() && o.digest != "none") {
    if (spec.target.trtype != initiator::Transport::tcp) return "--digest: digests are NVMe/TCP only (-r has trtype:rdma)";
    size_t pos = 0;
    while (pos <= o.digest.size()) {
      const size_t end = std::min(o.digest.find(',', pos), o.digest.size());
      const std::string d = o.digest.substr(pos, end - pos);
      if (d == "hdr") spec.target.hdgst = true;
      else if (d == "data") spec.target.ddgst = true;
      else return "--digest: \"" + d + "\" (expected hdr, data or hdr,data)";
      pos = end + 1;
    }
  }
  if (o.qd == 0 || o.queues == 0 || o.threads == 0) return "--qd, --queues and --threads must be at least 1";
  if (o.threads > o.queues)
    return "--threads " + std::to_string(o.threads) + " > --queues " + std::to_string(o.queues) +
           " (each thread needs at least one queue)";
  spec.qd = o.qd;
  spec.queues = o.queues;
  spec.threads = o.threads;
  spec.verify = o.verify;
  spec.nsid = o.nsid;
  return std::nullopt;
}

}  // namespace lab
