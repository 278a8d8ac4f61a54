// Configuration parsing and validation (config.hpp).
//
// parse_config works in two passes over one document and reports everything it finds:
//  1. shape: JSON syntax, duplicate and unknown keys, missing required keys, value types
//     (read_* below); each value that passes lands in the Config;
//  2. meaning: validate() on the resulting Config (ranges, formats, duplicates, backends).
// A value that failed pass 1 keeps its default in the Config, so pass-2 errors at or below
// a path pass 1 already reported are dropped: one mistake, one message.
#include "engine/control/config.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <span>

#include "engine/control/config_json.hpp"
#include "engine/system/topology.hpp"

namespace control {

namespace {

using json = nlohmann::json;

constexpr std::string_view discovery_nqn = "nqn.2014-08.org.nvmexpress.discovery";
constexpr size_t nqn_max_bytes = 223;       // NVMe base spec, NQN field is 256 bytes incl. NUL
constexpr size_t serial_max_bytes = 20;     // Identify Controller SN
constexpr size_t model_max_bytes = 40;      // Identify Controller MN
constexpr uint32_t nsid_max = 1024;
// A backend delay models a slow medium; beyond a second it only hides a typo (ms for µs).
constexpr uint32_t max_backend_delay_us = 1'000'000;
constexpr uint32_t icd_max = 128 * 1024;    // in-capsule data
constexpr uint32_t icd_align = 16;
constexpr uint32_t queue_depth_min = 2;
constexpr uint32_t queue_depth_max = 1024;
constexpr uint32_t max_io_queues_max = 65535;
constexpr uint32_t max_connections_max = 1u << 20;
constexpr uint32_t connect_timeout_min_ms = 100, connect_timeout_max_ms = 600000;
constexpr uint32_t maxh2cdata_min = 4096;   // NVMe/TCP: MAXH2CDATA ≥ 4 KiB, dword aligned
constexpr uint32_t mdts_min = 8192;  // MDTS is log2(bytes / 4 KiB), and 0 means "no limit"
constexpr uint32_t mdts_max = 16u << 20;
constexpr unsigned threads_max = 1024;
constexpr uint32_t port_max = 65535;
constexpr unsigned idle_poll_us_max = 10'000'000; // 10 s
constexpr unsigned inline_budget_max = 1024;
constexpr unsigned pdu_budget_max = 1024;          // recv_pdus, send_pdus
constexpr unsigned ops_per_pass_max = 65536;
constexpr uint64_t bytes_per_pass_max = uint64_t{1} << 30;
constexpr unsigned deadline_us_max = 1'000'000;
constexpr unsigned reap_batch_max = 1024;
constexpr std::string_view all_cpus = "all";       // "cpumask": every online CPU

constexpr std::array<std::string_view, 4> modes{"bound", "unbound", "poll", "inline"};
constexpr std::array<std::string_view, 2> queue_cpus{"incoming", "round_robin"};
constexpr std::array<std::string_view, 5> affinity_scopes{"cpu", "smt", "cache", "numa", "system"};
constexpr std::array<std::string_view, 3> priorities{"normal", "nice", "fifo"};
constexpr std::array<std::string_view, 2> io_mechanisms{"epoll", "io_uring"};

// ---------------------------------------------------------------- paths

bool is_identifier(std::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// $.a.b for identifiers, $["odd key"] otherwise (JSONPath bracket notation).
std::string member_path(std::string_view parent, std::string_view key) {
  if (is_identifier(key)) return std::string(parent) + "." + std::string(key);
  return std::string(parent) + "[" + json(std::string(key)).dump() + "]";
}

std::string index_path(std::string_view parent, size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

// True when path is `prefix` itself or lies inside it.
bool path_within(std::string_view path, std::string_view prefix) {
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}

std::string json_quote(std::string_view s) { return json(std::string(s)).dump(); }

// ---------------------------------------------------------------- pass 0: syntax, duplicate keys

// Tracks the JSON path during nlohmann's SAX-like parser callback so duplicate object keys
// (which nlohmann would silently resolve as "last one wins") are reported with their path.
class DuplicateKeyTracker {
 public:
  explicit DuplicateKeyTracker(std::vector<ConfigError>& errors) : _errors(errors) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: push(false); break;
      case json::parse_event_t::array_start: push(true); break;
      case json::parse_event_t::key: on_key(parsed.get<std::string>()); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end: _frames.pop_back(); element_done(); break;
      case json::parse_event_t::value: element_done(); break;
    }
    return true;
  }

 private:
  struct Frame {
    std::string path;
    bool is_array = false;
    size_t index = 0;          // arrays: elements completed so far
    std::string key;           // objects: the current key
    std::set<std::string> keys;
  };

  void push(bool is_array) {
    std::string path = "$";
    if (!_frames.empty()) {
      const Frame& top = _frames.back();
      path = top.is_array ? index_path(top.path, top.index) : member_path(top.path, top.key);
    }
    _frames.push_back(Frame{std::move(path), is_array, 0, {}, {}});
  }
  void on_key(std::string key) {
    Frame& top = _frames.back();
    if (!top.keys.insert(key).second)
      _errors.push_back({member_path(top.path, key), "duplicate key " + json_quote(key)});
    top.key = std::move(key);
  }
  void element_done() {
    if (!_frames.empty() && _frames.back().is_array) ++_frames.back().index;
  }

  std::vector<ConfigError>& _errors;
  std::vector<Frame> _frames;
};

ConfigError syntax_error(std::string_view text, const json::parse_error& e) {
  // e.byte is 1-based (the offending character; size + 1 at the end of input).
  const size_t before = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < before; ++i) {
    if (text[i] == '\n') { ++line; column = 1; } else { ++column; }
  }
  std::string detail = e.what();
  if (auto colon = detail.find(": "); colon != std::string::npos) detail.erase(0, colon + 2);
  return {"$", "JSON syntax error at byte " + std::to_string(e.byte) + " (line " +
                   std::to_string(line) + ", column " + std::to_string(column) + "): " + detail};
}

// ---------------------------------------------------------------- pass 1: shape and types

// Levenshtein distance, for "did you mean" on unknown keys.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

using KeyList = std::span<const std::string_view>;

}  // namespace

std::string unknown_key_message(std::string_view key, std::span<const std::string_view> allowed) {
  std::string_view best;
  size_t best_distance = 3;  // suggest only close matches
  for (auto k : allowed) {
    if (size_t d = edit_distance(key, k); d < best_distance) { best = k; best_distance = d; }
  }
  if (!best.empty()) return "unknown key " + json_quote(key) + " (did you mean " + json_quote(best) + "?)";
  std::string list;
  for (auto k : allowed) list += (list.empty() ? "" : ", ") + std::string(k);
  return "unknown key " + json_quote(key) + " (expected one of: " + list + ")";
}

CpuMask parse_cpu_mask(std::string_view text) {
  if (text == all_cpus) return {};
  std::vector<unsigned> cpus;
  if (!parse_cpu_list(text, cpus))
    return {{}, "malformed CPU list " + json_quote(text) +
                    " (expected CPU numbers and ranges such as \"0-3,6\", or \"all\")"};
  if (cpus.empty()) return {{}, "empty CPU mask: name at least one CPU (e.g. \"0\" or \"0-1\"), or \"all\""};
  return {std::move(cpus), std::nullopt};
}

namespace {

class Reader {
 public:
  explicit Reader(std::vector<ConfigError>& errors) : _errors(errors) {}

  void error(std::string path, std::string message) {
    _errors.push_back({std::move(path), std::move(message)});
  }

  // Reports a non-object; otherwise reports unknown and missing keys. True when v is an object.
  bool object(const json& v, const std::string& path, KeyList allowed, KeyList required) {
    if (!v.is_object()) {
      error(path, std::string("expected an object, got ") + v.type_name());
      return false;
    }
    for (const auto& [key, value] : v.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        error(member_path(path, key), unknown_key_message(key, allowed));
    }
    for (auto key : required) {
      if (!v.contains(key)) error(member_path(path, key), "missing required key");
    }
    return true;
  }

  // The array at obj[key], or nullptr when absent or not an array (reported).
  const json* array(const json& obj, std::string_view key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) return nullptr;
    if (!it->is_array()) {
      error(member_path(path, key), std::string("expected an array, got ") + it->type_name());
      return nullptr;
    }
    return &*it;
  }

  std::optional<std::string> string(const json& obj, std::string_view key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    if (!it->is_string()) return type_error(member_path(path, key), "a string", *it);
    return it->get<std::string>();
  }

  std::optional<bool> boolean(const json& obj, std::string_view key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    if (!it->is_boolean()) return type_error(member_path(path, key), "true or false", *it);
    return it->get<bool>();
  }

  // A non-negative integer that fits in 32 bits; semantic ranges are validate()'s job.
  std::optional<uint32_t> u32(const json& obj, std::string_view key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    auto p = member_path(path, key);
    auto v = unsigned_value(*it, p);
    if (!v) return std::nullopt;
    if (*v > std::numeric_limits<uint32_t>::max()) {
      error(p, "out of range: " + std::to_string(*v) + " does not fit in 32 bits");
      return std::nullopt;
    }
    return static_cast<uint32_t>(*v);
  }

  // A byte count: an integer, or a string parse_size() accepts. Zero is refused unless
  // zero_allowed (for a namespace an explicit zero is never meant; validate() sees 0 as
  // "absent"; for a budget 0 means "unlimited").
  std::optional<uint64_t> size(const json& obj, std::string_view key, const std::string& path,
                               bool zero_allowed = false) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    auto p = member_path(path, key);
    std::optional<uint64_t> v;
    if (it->is_string()) {
      uint64_t bytes = 0;
      if (parse_size(it->get<std::string>(), bytes)) v = bytes;
      else error(p, "malformed size " + it->dump() +
                        " (expected bytes as an integer, or a string like \"512MiB\" or \"1G\";"
                        " K/M/G/T and KiB/MiB/GiB/TiB are all 1024-based)");
    } else if (it->is_number()) {
      v = unsigned_value(*it, p);
    } else {
      type_error(p, "a size (integer or string such as \"1GiB\")", *it);
    }
    if (v && *v == 0 && !zero_allowed) { error(p, "must be a positive size"); return std::nullopt; }
    return v;
  }

  // A signed integer that fits in an int; semantic ranges are validate()'s job.
  std::optional<int> integer(const json& obj, std::string_view key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    auto p = member_path(path, key);
    if (it->is_number_float()) return error(p, "wrong type: expected an integer, got " + it->dump()), std::nullopt;
    if (!it->is_number()) return type_error(p, "an integer", *it);
    if (it->is_number_unsigned() ? it->get<uint64_t>() > uint64_t{std::numeric_limits<int>::max()}
                                 : it->get<int64_t>() < std::numeric_limits<int>::min())
      return error(p, "out of range: " + it->dump() + " does not fit in an int"), std::nullopt;
    return it->get<int>();
  }

  // A CPU list string ("0-3,6"), or "all" (= every online CPU, an empty vector).
  std::optional<std::vector<unsigned>> cpu_list(const json& obj, std::string_view key, const std::string& path) {
    auto text = string(obj, key, path);
    if (!text) return std::nullopt;
    auto mask = parse_cpu_mask(*text);
    if (mask.problem) {
      error(member_path(path, key), *mask.problem);
      return std::nullopt;
    }
    return std::move(mask.cpus);
  }

  // A port: a decimal string, or an integer (turned into decimal text); range checked by validate().
  std::optional<std::string> port(const json& obj, std::string_view key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    auto p = member_path(path, key);
    if (it->is_string()) return it->get<std::string>();
    if (!it->is_number()) return type_error(p, "a port number (integer or string)", *it);
    auto v = unsigned_value(*it, p);
    if (!v) return std::nullopt;
    return std::to_string(*v);
  }

  std::optional<std::vector<std::string>> strings(const json& obj, std::string_view key,
                                                  const std::string& path) {
    const json* arr = array(obj, key, path);
    if (!arr) return std::nullopt;
    std::vector<std::string> out;
    auto p = member_path(path, key);
    for (size_t i = 0; i < arr->size(); ++i) {
      const json& v = (*arr)[i];
      if (v.is_string()) out.push_back(v.get<std::string>());
      else type_error(index_path(p, i), "a string", v);
    }
    return out;
  }

 private:
  // Reports a value of the wrong type; returns nullopt so readers can `return type_error(…)`.
  std::nullopt_t type_error(const std::string& path, std::string_view expected, const json& got) {
    error(path, "wrong type: expected " + std::string(expected) + ", got " + got.type_name() +
                    " " + got.dump());
    return std::nullopt;
  }

  std::optional<uint64_t> unsigned_value(const json& v, const std::string& path) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    // Parsed text stores non-negative integers as unsigned; a json built in code may hold them signed.
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
    if (v.is_number_integer()) {
      error(path, "out of range: " + v.dump() + " is negative");
    } else if (v.is_number_float()) {
      error(path, "wrong type: expected an integer, got " + v.dump());
    } else {
      type_error(path, "a non-negative integer", v);
    }
    return std::nullopt;
  }

  std::vector<ConfigError>& _errors;
};

constexpr std::array<std::string_view, 5> root_keys{"listeners", "subsystems", "tcp", "threading", "budgets"};
constexpr std::array<std::string_view, 3> listener_keys{"trtype", "traddr", "trsvcid"};
constexpr std::array<std::string_view, 1> listener_required{"traddr"};
constexpr std::array<std::string_view, 6> subsystem_keys{"nqn", "serial", "model",
                                                         "allow_any_host", "hosts", "namespaces"};
constexpr std::array<std::string_view, 1> subsystem_required{"nqn"};
constexpr std::array<std::string_view, 9> namespace_keys{"nsid", "backend", "size", "block_size",
                                                         "uuid", "path", "create", "direct", "delay_us"};
constexpr std::array<std::string_view, 2> namespace_required{"nsid", "backend"};
constexpr std::array<std::string_view, 7> tcp_keys{"in_capsule_data_size", "maxh2cdata",
                                                   "queue_depth", "max_io_queues", "mdts_bytes",
                                                   "max_connections", "connect_timeout_ms"};
constexpr std::array<std::string_view, 11> threading_keys{
    "mode", "cpumask", "threads", "queue_cpu", "affinity_scope", "strict",
    "first_core", "idle_poll_us", "priority", "inline_budget", "io_mechanism"};
constexpr std::array<std::string_view, 6> budget_keys{"recv_pdus", "send_pdus", "ops_per_pass",
                                                      "bytes_per_pass", "deadline_us", "reap_batch"};

ListenerConfig read_listener(Reader& r, const json& v, const std::string& path) {
  ListenerConfig l;
  if (!r.object(v, path, listener_keys, listener_required)) return l;
  if (auto s = r.string(v, "trtype", path)) l.trtype = *s;
  if (auto s = r.string(v, "traddr", path)) l.traddr = *s;
  if (auto s = r.port(v, "trsvcid", path)) l.trsvcid = *s;
  return l;
}

NamespaceConfig read_namespace(Reader& r, const json& v, const std::string& path) {
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
  return ns;
}

SubsystemConfig read_subsystem(Reader& r, const json& v, const std::string& path) {
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

void read_tcp(Reader& r, const json& v, const std::string& path, TcpConfig& tcp) {
  if (!r.object(v, path, tcp_keys, {})) return;
  if (auto n = r.u32(v, "in_capsule_data_size", path)) tcp.in_capsule_data_size = *n;
  if (auto n = r.u32(v, "maxh2cdata", path)) tcp.maxh2cdata = *n;
  if (auto n = r.u32(v, "queue_depth", path)) tcp.queue_depth = *n;
  if (auto n = r.u32(v, "max_io_queues", path)) tcp.max_io_queues = *n;
  if (auto n = r.u32(v, "mdts_bytes", path)) tcp.mdts_bytes = *n;
  if (auto n = r.u32(v, "max_connections", path)) tcp.max_connections = *n;
  if (auto n = r.u32(v, "connect_timeout_ms", path)) tcp.connect_timeout_ms = *n;
}

// Reads the keys present onto t (a partial object changes only what it names).
void read_threading(Reader& r, const json& v, const std::string& path, ThreadingConfig& t) {
  if (!r.object(v, path, threading_keys, {})) return;
  if (auto s = r.string(v, "mode", path)) t.mode = *s;
  if (auto c = r.cpu_list(v, "cpumask", path)) t.cpus = std::move(*c);
  if (auto n = r.u32(v, "threads", path)) t.threads = *n;
  if (auto s = r.string(v, "queue_cpu", path)) t.queue_cpu = *s;
  if (auto s = r.string(v, "affinity_scope", path)) t.affinity_scope = *s;
  if (auto b = r.boolean(v, "strict", path)) t.strict = *b;
  if (auto n = r.integer(v, "first_core", path)) t.first_core = *n;
  if (auto n = r.u32(v, "idle_poll_us", path)) t.idle_poll_us = *n;
  if (auto s = r.string(v, "priority", path)) t.priority = *s;
  if (auto n = r.u32(v, "inline_budget", path)) t.inline_budget = *n;
  if (auto s = r.string(v, "io_mechanism", path)) t.io_mechanism = *s;
}

void read_budgets(Reader& r, const json& v, const std::string& path, BudgetConfig& b) {
  if (!r.object(v, path, budget_keys, {})) return;
  if (auto n = r.u32(v, "recv_pdus", path)) b.recv_pdus = *n;
  if (auto n = r.u32(v, "send_pdus", path)) b.send_pdus = *n;
  if (auto n = r.u32(v, "ops_per_pass", path)) b.ops_per_pass = *n;
  if (auto n = r.size(v, "bytes_per_pass", path, true)) {
    if (*n <= bytes_per_pass_max) b.bytes_per_pass = static_cast<uint32_t>(*n);
    else r.error(member_path(path, "bytes_per_pass"), "out of range: " + std::to_string(*n) + " (expected 0.." +
                                                          std::to_string(bytes_per_pass_max) + ", i.e. at most 1GiB)");
  }
  if (auto n = r.u32(v, "deadline_us", path)) b.deadline_us = *n;
  if (auto n = r.u32(v, "reap_batch", path)) b.reap_batch = *n;
}

Config read_config(Reader& r, const json& doc) {
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
  return c;
}

// Orders paths as a reader scans a document: by key, array indices numerically
// ("[2]" before "[10]"), a parent before its children.
bool path_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      uint64_t x = 0, y = 0;
      auto ea = std::from_chars(a.data() + i, a.data() + a.size(), x).ptr;
      auto eb = std::from_chars(b.data() + j, b.data() + b.size(), y).ptr;
      if (x != y) return x < y;
      i = static_cast<size_t>(ea - a.data());
      j = static_cast<size_t>(eb - b.data());
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

void sort_by_path(std::vector<ConfigError>& errors) {
  std::stable_sort(errors.begin(), errors.end(),
                   [](const ConfigError& a, const ConfigError& b) { return path_less(a.path, b.path); });
}

namespace {

// ---------------------------------------------------------------- pass 2: meaning

// Collects semantic errors, skipping any path at or below one already reported (`broken`).
class Checker {
 public:
  Checker(std::vector<ConfigError>& out, const std::vector<ConfigError>& broken)
      : _out(out), _broken(broken) {}

  bool broken(std::string_view path) const {
    return std::any_of(_broken.begin(), _broken.end(),
                       [&](const ConfigError& e) { return path_within(path, e.path); });
  }
  void error(std::string path, std::string message) {
    if (!broken(path)) _out.push_back({std::move(path), std::move(message)});
  }
  void range(const std::string& path, uint64_t v, uint64_t lo, uint64_t hi) {
    if (v < lo || v > hi)
      error(path, "out of range: " + std::to_string(v) + " (expected " + std::to_string(lo) +
                      ".." + std::to_string(hi) + ")");
  }

 private:
  std::vector<ConfigError>& _out;
  const std::vector<ConfigError>& _broken;
};

std::optional<std::string> nqn_problem(std::string_view nqn) {
  if (nqn.substr(0, 4) != "nqn.")
    return "invalid NQN " + json_quote(nqn) + ": must start with \"nqn.\" (e.g. \"nqn.2026-12.io.example:name\")";
  if (nqn.size() > nqn_max_bytes)
    return "invalid NQN: " + std::to_string(nqn.size()) + " bytes, at most " +
           std::to_string(nqn_max_bytes) + " allowed";
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

void check_listeners(Checker& c, const std::vector<ListenerConfig>& listeners) {
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < listeners.size(); ++i) {
    const auto& l = listeners[i];
    const auto p = index_path("$.listeners", i);
    if (l.trtype != "tcp")
      c.error(p + ".trtype", "unsupported transport " + json_quote(l.trtype) + " (this build supports: \"tcp\")");
    in_addr addr{};
    if (inet_pton(AF_INET, l.traddr.c_str(), &addr) != 1)
      c.error(p + ".traddr", "invalid IPv4 address " + json_quote(l.traddr) + " (e.g. \"127.0.0.1\" or \"0.0.0.0\")");
    auto port = port_number(l.trsvcid);
    if (!port)
      c.error(p + ".trsvcid", "invalid port " + json_quote(l.trsvcid) + " (expected 0..65535; 0 = any free port)");
    else if (*port != 0 && !c.broken(p) && !seen.emplace(l.traddr, std::to_string(*port)).second)
      c.error(p, "duplicate listener " + l.traddr + ":" + std::to_string(*port));
  }
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
  if (b.size_bytes != 0 && (ns.block_size == 512 || ns.block_size == 4096) &&
      b.size_bytes % ns.block_size != 0)
    c.error(p + ".size", "must be a multiple of block_size " + std::to_string(ns.block_size) +
                             " (got " + std::to_string(b.size_bytes) + " bytes)");
}

void check_namespace(Checker& c, const NamespaceConfig& ns, const std::string& p) {
  c.range(p + ".nsid", ns.nsid, 1, nsid_max);
  if (ns.block_size != 512 && ns.block_size != 4096)
    c.error(p + ".block_size", "must be 512 or 4096 (got " + std::to_string(ns.block_size) + ")");
  if (!ns.uuid.empty() && !is_uuid(ns.uuid))
    c.error(p + ".uuid", "invalid UUID " + json_quote(ns.uuid) + " (expected 8-4-4-4-12 hex digits)");
  check_backend(c, ns, p);
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

void check_tcp(Checker& c, const TcpConfig& t, const std::string& path) {
  c.range(path + ".in_capsule_data_size", t.in_capsule_data_size, 0, icd_max);
  if (t.in_capsule_data_size % icd_align != 0)
    c.error(path + ".in_capsule_data_size", "must be a multiple of 16");
  c.range(path + ".queue_depth", t.queue_depth, queue_depth_min, queue_depth_max);
  c.range(path + ".max_io_queues", t.max_io_queues, 1, max_io_queues_max);
  c.range(path + ".max_connections", t.max_connections, 1, max_connections_max);
  c.range(path + ".connect_timeout_ms", t.connect_timeout_ms, connect_timeout_min_ms, connect_timeout_max_ms);
  if (t.maxh2cdata < maxh2cdata_min || t.maxh2cdata % 4 != 0)
    c.error(path + ".maxh2cdata", "must be at least 4096 and a multiple of 4 (got " +
                                    std::to_string(t.maxh2cdata) + ")");
  const bool pow2 = t.mdts_bytes != 0 && (t.mdts_bytes & (t.mdts_bytes - 1)) == 0;
  if (!pow2 || t.mdts_bytes < mdts_min || t.mdts_bytes > mdts_max)
    c.error(path + ".mdts_bytes", "must be a power of two from 8192 to 16777216 (got " +
                                    std::to_string(t.mdts_bytes) + ")");
}

template <size_t N>
std::string one_of(const std::array<std::string_view, N>& names) {
  std::string list;
  for (auto n : names) list += (list.empty() ? "" : ", ") + json_quote(n);
  return list;
}

template <size_t N>
void check_choice(Checker& c, const std::string& path, std::string_view what, const std::string& value,
                  const std::array<std::string_view, N>& names) {
  if (std::find(names.begin(), names.end(), value) == names.end())
    c.error(path, "unknown " + std::string(what) + " " + json_quote(value) + " (expected one of: " + one_of(names) + ")");
}

}  // namespace

std::optional<std::string> offline_problem(const std::vector<unsigned>& cpus, const std::vector<unsigned>& online) {
  std::vector<unsigned> offline;
  for (unsigned cpu : cpus)
    if (!std::binary_search(online.begin(), online.end(), cpu)) offline.push_back(cpu);
  if (offline.empty()) return std::nullopt;
  const bool one = offline.size() == 1;
  return std::string(one ? "CPU " : "CPUs ") + format_cpu_list(offline) + (one ? " is" : " are") +
         " not online (online: " + format_cpu_list(online) + ")";
}

namespace {

// Poll threads pinned from first_core: thread i on first_core + i, so all of those must be online.
void check_first_core(Checker& c, const ThreadingConfig& t, const std::string& path,
                      const std::vector<unsigned>& online) {
  const std::string p = path + ".first_core";
  const int max_online = online.empty() ? 0 : static_cast<int>(online.back());
  if (t.first_core < -1 || t.first_core > max_online) {
    c.error(p, "out of range: " + std::to_string(t.first_core) + " (expected -1.." + std::to_string(max_online) +
                   "; -1 = threads float over the cpumask, else the highest online CPU is " +
                   std::to_string(max_online) + ")");
    return;
  }
  if (t.first_core < 0 || t.threads > threads_max) return;
  const size_t n = t.threads ? t.threads : (t.cpus.empty() ? online.size() : t.cpus.size());
  std::vector<unsigned> pinned;
  for (size_t i = 0; i < n; ++i) pinned.push_back(static_cast<unsigned>(t.first_core) + static_cast<unsigned>(i));
  if (auto problem = offline_problem(pinned, online))
    c.error(p, "first_core " + std::to_string(t.first_core) + " with " + std::to_string(n) +
                   " thread(s) pins threads to CPUs " + format_cpu_list(pinned) + ", but " + *problem);
}

void check_threading(Checker& c, const ThreadingConfig& t, const std::string& path, const std::vector<unsigned>& online) {
  check_choice(c, path + ".mode", "execution mode", t.mode, modes);
  if (auto problem = offline_problem(t.cpus, online)) c.error(path + ".cpumask", *problem);
  c.range(path + ".threads", t.threads, 0, threads_max);
  check_choice(c, path + ".queue_cpu", "queue_cpu", t.queue_cpu, queue_cpus);
  check_choice(c, path + ".affinity_scope", "affinity_scope", t.affinity_scope, affinity_scopes);
  check_first_core(c, t, path, online);
  c.range(path + ".idle_poll_us", t.idle_poll_us, 0, idle_poll_us_max);
  check_choice(c, path + ".priority", "priority", t.priority, priorities);
  c.range(path + ".inline_budget", t.inline_budget, 1, inline_budget_max);
  check_choice(c, path + ".io_mechanism", "io_mechanism", t.io_mechanism, io_mechanisms);
}

void check_budgets(Checker& c, const BudgetConfig& b, const std::string& path) {
  c.range(path + ".recv_pdus", b.recv_pdus, 1, pdu_budget_max);
  c.range(path + ".send_pdus", b.send_pdus, 1, pdu_budget_max);
  c.range(path + ".ops_per_pass", b.ops_per_pass, 1, ops_per_pass_max);
  c.range(path + ".bytes_per_pass", b.bytes_per_pass, 0, bytes_per_pass_max);
  c.range(path + ".deadline_us", b.deadline_us, 0, deadline_us_max);
  c.range(path + ".reap_batch", b.reap_batch, 1, reap_batch_max);
}

std::vector<ConfigError> validate_except(const Config& cfg, const std::vector<ConfigError>& broken) {
  std::vector<ConfigError> out;
  Checker c(out, broken);
  check_listeners(c, cfg.listeners);
  std::set<std::string> nqns;
  for (size_t i = 0; i < cfg.subsystems.size(); ++i) {
    const auto p = index_path("$.subsystems", i);
    check_subsystem(c, cfg.subsystems[i], p);
    if (!c.broken(p + ".nqn") && !cfg.subsystems[i].nqn.empty() &&
        !nqns.insert(cfg.subsystems[i].nqn).second)
      c.error(p + ".nqn", "duplicate subsystem NQN " + json_quote(cfg.subsystems[i].nqn));
  }
  check_tcp(c, cfg.tcp, "$.tcp");
  check_threading(c, cfg.threading, "$.threading", online_cpus());
  check_budgets(c, cfg.budgets, "$.budgets");
  return out;
}

// Reads a fragment (pass 1), checks what it read (pass 2) and assigns it to out only when both
// passes found nothing: the shared skeleton of the parse_* functions of config_json.hpp.
template <typename T, typename ReadFn, typename CheckFn>
std::vector<ConfigError> parse_fragment(T& out, ReadFn read, CheckFn check) {
  std::vector<ConfigError> errors;
  Reader r(errors);
  T value = out;
  read(r, value);
  std::vector<ConfigError> semantic;
  Checker c(semantic, errors);
  check(c, value);
  errors.insert(errors.end(), semantic.begin(), semantic.end());
  sort_by_path(errors);
  if (errors.empty()) out = std::move(value);
  return errors;
}

}  // namespace

// ---------------------------------------------------------------- config_json.hpp

std::vector<ConfigError> parse_threading(const json& v, const std::string& path, ThreadingConfig& out) {
  const auto online = online_cpus();
  return parse_fragment(
      out, [&](Reader& r, ThreadingConfig& t) { read_threading(r, v, path, t); },
      [&](Checker& c, const ThreadingConfig& t) { check_threading(c, t, path, online); });
}

std::vector<ConfigError> parse_budgets(const json& v, const std::string& path, BudgetConfig& out) {
  return parse_fragment(
      out, [&](Reader& r, BudgetConfig& b) { read_budgets(r, v, path, b); },
      [&](Checker& c, const BudgetConfig& b) { check_budgets(c, b, path); });
}

std::vector<ConfigError> parse_tcp(const json& v, const std::string& path, TcpConfig& out) {
  return parse_fragment(
      out, [&](Reader& r, TcpConfig& t) { read_tcp(r, v, path, t); },
      [&](Checker& c, const TcpConfig& t) { check_tcp(c, t, path); });
}

std::vector<ConfigError> parse_subsystem(const json& v, const std::string& path, SubsystemConfig& out) {
  return parse_fragment(
      out, [&](Reader& r, SubsystemConfig& s) { s = read_subsystem(r, v, path); },
      [&](Checker& c, const SubsystemConfig& s) { check_subsystem(c, s, path); });
}

std::vector<ConfigError> parse_namespace(const json& v, const std::string& path, NamespaceConfig& out) {
  return parse_fragment(
      out, [&](Reader& r, NamespaceConfig& ns) { ns = read_namespace(r, v, path); },
      [&](Checker& c, const NamespaceConfig& ns) { check_namespace(c, ns, path); });
}

std::vector<ConfigError> validate_threading(const ThreadingConfig& t, const std::string& path) {
  std::vector<ConfigError> out;
  const std::vector<ConfigError> none;
  Checker c(out, none);
  check_threading(c, t, path, online_cpus());
  return out;
}

std::vector<ConfigError> validate_budgets(const BudgetConfig& b, const std::string& path) {
  std::vector<ConfigError> out;
  const std::vector<ConfigError> none;
  Checker c(out, none);
  check_budgets(c, b, path);
  return out;
}

json to_json(const ThreadingConfig& t) {
  return {{"mode", t.mode},
          {"cpumask", t.cpus.empty() ? std::string(all_cpus) : format_cpu_list(t.cpus)},
          {"threads", t.threads},
          {"queue_cpu", t.queue_cpu},
          {"affinity_scope", t.affinity_scope},
          {"strict", t.strict},
          {"first_core", t.first_core},
          {"idle_poll_us", t.idle_poll_us},
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
          {"max_connections", t.max_connections}, {"connect_timeout_ms", t.connect_timeout_ms}};
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
          {"threading", to_json(c.threading)},
          {"budgets", to_json(c.budgets)}};
}

std::vector<unsigned> online_cpus() { return sys::online_cpus(); }

// ---------------------------------------------------------------- config.hpp

bool parse_cpu_list(std::string_view text, std::vector<unsigned>& out) {
  auto r = sys::parse_cpu_list(text);
  if (!r.error.empty()) return false;
  out = std::move(r.cpus);
  return true;
}

std::string format_cpu_list(const std::vector<unsigned>& cpus) {
  std::vector<unsigned> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string text;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(sorted[i]);
    if (j > i) text += '-' + std::to_string(sorted[j]);
    i = j + 1;
  }
  return text;
}

JsonDocument parse_json_document(std::string_view json_text) {
  JsonDocument out;
  try {
    out.doc = json::parse(json_text.begin(), json_text.end(), DuplicateKeyTracker(out.errors));
    out.syntax_ok = true;
  } catch (const json::parse_error& e) {
    out.errors = {syntax_error(json_text, e)};  // duplicates seen so far matter no more
    out.doc = nullptr;
  }
  return out;
}

ParseResult parse_config(std::string_view json_text) {
  auto parsed = parse_json_document(json_text);
  if (!parsed.syntax_ok) return ParseResult{Config{}, std::move(parsed.errors)};
  return parse_config_document(parsed.doc, std::move(parsed.errors));
}

ParseResult parse_config_document(const json& doc, std::vector<ConfigError> errors) {
  ParseResult result;
  result.errors = std::move(errors);
  Reader reader(result.errors);
  result.config = read_config(reader, doc);
  if (!doc.is_object()) return result;
  auto semantic = validate_except(result.config, result.errors);
  result.errors.insert(result.errors.end(), semantic.begin(), semantic.end());
  sort_by_path(result.errors);
  return result;
}

std::vector<ConfigError> validate(const Config& c) {
  auto errors = validate_except(c, {});
  sort_by_path(errors);
  return errors;
}

Config default_config() {
  Config c;
  c.listeners.push_back(ListenerConfig{"tcp", "127.0.0.1", "4420"});
  SubsystemConfig s;
  s.nqn = default_nqn;
  s.allow_any_host = true;
  NamespaceConfig ns;
  ns.nsid = 1;
  ns.backend.kind = "ram";
  ns.backend.size_bytes = uint64_t{1} << 30;
  ns.block_size = 512;
  s.namespaces.push_back(std::move(ns));
  c.subsystems.push_back(std::move(s));
  return c;
}

bool parse_size(std::string_view s, uint64_t& out) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end == s.data()) return false;  // no digits, or overflow
  std::string_view suffix(end, static_cast<size_t>(s.data() + s.size() - end));
  static constexpr std::array<std::pair<std::string_view, unsigned>, 9> suffixes{{
      {"", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40},
      {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}}};
  for (const auto& [name, shift] : suffixes) {
    if (suffix != name) continue;
    if (shift != 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) return false;
    out = value << shift;
    return true;
  }
  return false;
}

}  // namespace control
