// Steering requests, views and results as JSON (steering_json.hpp).
#include "engine/control/steering_json.hpp"

#include <algorithm>
#include <array>

#include "engine/config/config_json.hpp"
#include "engine/config/settings_schema.hpp"
#include "engine/system/topology.hpp"

namespace control {

namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, 6> request_keys{"irq",           "rps",      "xps",
                                                       "rps_sock_flow_entries", "busy_poll", "busy_read"};
constexpr std::array<std::string_view, 4> irq_keys{"irq", "device", "queue", "cpus"};
constexpr std::array<std::string_view, 4> queue_keys{"device", "queue", "cpus", "flow_cnt"};
// The RFS socket table: the kernel refuses more than 2^29 entries (net/core/sysctl_net_core.c,
// rps_sock_flow_sysctl: "Enforce limit to prevent overflow"). A queue's flow table (rps_flow_cnt)
// takes its share of that table (Documentation/networking/scaling.rst: rps_sock_flow_entries /
// rx queues), so a larger one only costs memory: 8 bytes an entry, vmalloc'd per queue, 4 GiB at
// the bound already. The kernel rounds both up to a power of two, and reads back the rounded size.
constexpr uint64_t flow_table_max = uint64_t{1} << 29;

// busy_poll/busy_read are µs a socket's read or poll spins on the device queue. The kernel takes
// any int, but a spin of seconds is a stalled reader, not a tuning: the bound of tcp.busy_poll_us,
// SO_BUSY_POLL, the per-socket form of the same spin.
uint64_t busy_poll_max_us() {
  static const auto max = static_cast<uint64_t>(*find_setting("tcp.busy_poll_us")->max);
  return max;
}

class Reader {
 public:
  explicit Reader(std::vector<ConfigError>& errors) : _errors(errors) {}

  bool object(const json& v, const std::string& path, std::span<const std::string_view> keys) {
    if (!v.is_object()) return error(path, std::string("expected an object, got ") + v.type_name()), false;
    for (const auto& [k, _] : v.items())
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) error(path + "." + k, unknown_key_message(k, keys));
    return true;
  }

  std::optional<uint64_t> number(const json& v, std::string_view key, const std::string& path, uint64_t hi) {
    auto it = v.find(key);
    if (it == v.end()) return std::nullopt;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > hi)
      return error(path + "." + std::string(key), "expected an integer 0.." + std::to_string(hi) + ", got " + it->dump()),
             std::nullopt;
    return it->get<uint64_t>();
  }

  // A flow table size: 0 (off) or a power of two up to flow_table_max, the sizes the kernel keeps
  // as given (it rounds others up, so what is read back would not be what was asked).
  std::optional<uint64_t> flow_table(const json& v, std::string_view key, const std::string& path) {
    auto it = v.find(key);
    if (it == v.end()) return std::nullopt;
    const bool ok = it->is_number_unsigned() && it->get<uint64_t>() <= flow_table_max &&
                    (it->get<uint64_t>() & (it->get<uint64_t>() - 1)) == 0;
    if (!ok)
      return error(path + "." + std::string(key), "expected 0 (off) or a power of two up to " + std::to_string(flow_table_max) +
                                                      " (the kernel rounds a table up to one), got " + it->dump()),
             std::nullopt;
    return it->get<uint64_t>();
  }

  std::string device(const json& v, const std::string& path) {
    auto it = v.find("device");
    if (it == v.end()) return {};
    if (!it->is_string() || it->get<std::string>().empty())
      return error(path + ".device", "expected an interface name, got " + it->dump()), std::string();
    return it->get<std::string>();
  }

  // "all" → nullopt choice; "none" → {}; a CPU list. ok false when missing or malformed.
  bool cpus(const json& v, const std::string& path, sys::CpuChoice& out) {
    auto it = v.find("cpus");
    if (it == v.end()) return false;
    if (!it->is_string()) return error(path + ".cpus", "expected a CPU list, \"all\" or \"none\", got " + it->dump()), false;
    const auto text = it->get<std::string>();
    if (text == "all") return out = std::nullopt, true;
    if (text == "none") return out = std::vector<unsigned>{}, true;
    auto l = sys::parse_cpu_list(text);
    if (!l.error.empty() || l.cpus.empty())
      return error(path + ".cpus", "expected a CPU list such as \"0-3,6\", \"all\" or \"none\", got " + it->dump()), false;
    out = l.cpus;
    return true;
  }

  void error(std::string path, std::string message) { _errors.push_back({std::move(path), std::move(message)}); }

 private:
  std::vector<ConfigError>& _errors;
};

const json* array_of(Reader& r, const json& v, const char* key, const std::string& path) {
  auto it = v.find(key);
  if (it == v.end()) return nullptr;
  if (!it->is_array()) return r.error(path + "." + key, "expected an array, got " + it->dump()), nullptr;
  return &*it;
}

std::string cpus_text(const sys::CpuChoice& c) {
  if (!c) return "all";
  return c->empty() ? "none" : sys::format_cpu_list(*c);
}

json optional_list(const std::optional<std::vector<unsigned>>& l) {
  return l ? json(sys::format_cpu_list(*l)) : json(nullptr);
}

}  // namespace

std::vector<ConfigError> parse_steering_request(const json& v, const std::string& path, sys::SteeringRequest& out) {
  std::vector<ConfigError> errors;
  Reader r(errors);
  sys::SteeringRequest req;
  if (!r.object(v, path, request_keys)) return errors;
  if (const json* a = array_of(r, v, "irq", path))
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string p = path + ".irq[" + std::to_string(i) + "]";
      const json& e = (*a)[i];
      if (!r.object(e, p, irq_keys)) continue;
      sys::IrqRule rule;
      if (auto n = r.number(e, "irq", p, UINT32_MAX)) rule.irq = unsigned(*n);
      rule.device = r.device(e, p);
      if (auto n = r.number(e, "queue", p, UINT16_MAX)) rule.queue = unsigned(*n);
      if (rule.irq && !rule.device.empty()) r.error(p, "give either irq or device (+ queue), not both");
      if (!rule.irq && rule.device.empty() && !e.contains("irq") && !e.contains("device")) r.error(p, "neither irq nor device given");
      if (!r.cpus(e, p, rule.cpus) && !e.contains("cpus")) r.error(p + ".cpus", "missing (a CPU list or \"all\")");
      req.irq.push_back(std::move(rule));
    }
  for (const char* kind : {"rps", "xps"})
    if (const json* a = array_of(r, v, kind, path))
      for (size_t i = 0; i < a->size(); ++i) {
        const std::string p = path + "." + kind + "[" + std::to_string(i) + "]";
        const json& e = (*a)[i];
        if (!r.object(e, p, queue_keys)) continue;
        sys::QueueRule rule;
        rule.device = r.device(e, p);
        if (rule.device.empty() && !e.contains("device")) r.error(p + ".device", "missing (the interface name)");
        if (auto n = r.number(e, "queue", p, UINT16_MAX)) rule.queue = unsigned(*n);
        if (auto n = r.flow_table(e, "flow_cnt", p)) rule.flow_cnt = *n;
        rule.set_cpus = r.cpus(e, p, rule.cpus);
        // A rule may set only flow_cnt; one whose flow_cnt is refused has that error, not this one too.
        if (!e.contains("cpus") && !e.contains("flow_cnt")) r.error(p + ".cpus", "missing (a CPU list, \"all\" or \"none\")");
        (std::string(kind) == "rps" ? req.rps : req.xps).push_back(std::move(rule));
      }
  req.rps_sock_flow_entries = r.flow_table(v, "rps_sock_flow_entries", path);
  req.busy_poll = r.number(v, "busy_poll", path, busy_poll_max_us());
  req.busy_read = r.number(v, "busy_read", path, busy_poll_max_us());
  sort_by_path(errors);
  if (errors.empty()) out = std::move(req);
  return errors;
}

json to_json(const sys::SteeringRequest& r) {
  json out = json::object();
  json irq = json::array();
  for (const auto& i : r.irq) {
    json e = i.irq ? json{{"irq", *i.irq}} : json{{"device", i.device}};
    if (i.queue) e["queue"] = *i.queue;
    e["cpus"] = cpus_text(i.cpus);
    irq.push_back(std::move(e));
  }
  const auto queues = [](const std::vector<sys::QueueRule>& rules) {
    json a = json::array();
    for (const auto& q : rules) {
      json e{{"device", q.device}};
      if (q.queue) e["queue"] = *q.queue;
      if (q.set_cpus) e["cpus"] = cpus_text(q.cpus);
      if (q.flow_cnt) e["flow_cnt"] = *q.flow_cnt;
      a.push_back(std::move(e));
    }
    return a;
  };
  if (!r.irq.empty()) out["irq"] = std::move(irq);
  if (!r.rps.empty()) out["rps"] = queues(r.rps);
  if (!r.xps.empty()) out["xps"] = queues(r.xps);
  if (r.rps_sock_flow_entries) out["rps_sock_flow_entries"] = *r.rps_sock_flow_entries;
  if (r.busy_poll) out["busy_poll"] = *r.busy_poll;
  if (r.busy_read) out["busy_read"] = *r.busy_read;
  return out;
}

json to_json(const sys::SteeringView& v) {
  json irqs = json::array();
  for (const auto& l : v.irqs)
    irqs.push_back({{"irq", l.irq}, {"name", l.name}, {"chip", l.chip}, {"device", l.device}, {"role", l.role},
                    {"queue", l.queue}, {"total", l.total}, {"per_cpu", l.per_cpu}, {"rate", l.rate},
                    {"affinity", optional_list(l.affinity)}, {"effective_affinity", optional_list(l.effective_affinity)}});
  json ifs = json::array();
  for (const auto& n : v.interfaces) {
    json rx = json::array(), tx = json::array();
    for (const auto& q : n.rx)
      rx.push_back({{"queue", q.index}, {"rps_cpus", optional_list(q.cpus)},
                    {"rps_flow_cnt", q.flow_cnt ? json(*q.flow_cnt) : json(nullptr)}});
    for (const auto& q : n.tx) tx.push_back({{"queue", q.index}, {"xps_cpus", optional_list(q.cpus)}});
    ifs.push_back({{"name", n.name}, {"device", n.device}, {"irqs", n.irqs}, {"rx", rx}, {"tx", tx}});
  }
  json cpus = json::array();
  for (const auto& c : v.per_cpu)
    cpus.push_back({{"cpu", c.cpu}, {"interrupts", c.interrupts}, {"irq_rate", c.irq_rate}, {"net_rx", c.net_rx},
                    {"net_tx", c.net_tx}, {"net_rx_rate", c.net_rx_rate}, {"net_tx_rate", c.net_tx_rate},
                    {"irqs", c.irqs}, {"rps", c.rps}, {"xps", c.xps}});
  const auto opt = [](const std::optional<uint64_t>& n) { return n ? json(*n) : json(nullptr); };
  return {{"cpus", sys::format_cpu_list(v.cpus)},
          {"irqs", std::move(irqs)},
          {"interfaces", std::move(ifs)},
          {"per_cpu", std::move(cpus)},
          {"rps_sock_flow_entries", opt(v.rps_sock_flow_entries)},
          {"busy_poll", opt(v.busy_poll)},
          {"busy_read", opt(v.busy_read)},
          {"warnings", v.warnings}};
}

json rows_json(const std::vector<sys::PlanRow>& rows) {
  json out = json::array();
  for (const auto& r : rows)
    out.push_back({{"path", r.path}, {"what", r.what}, {"old", r.old_value}, {"new", r.new_value}, {"change", r.change}});
  return out;
}

json saved_json(const std::vector<sys::SavedValue>& saved) {
  json out = json::array();
  for (const auto& s : saved) out.push_back({{"path", s.path}, {"old", s.old_value}, {"new", s.new_value}});
  return out;
}

std::vector<ConfigError> plan_errors(const sys::SteeringPlan& plan, const std::string& path) {
  std::vector<ConfigError> out;
  for (const auto& e : plan.errors) out.push_back({path + "." + e.field, e.message});
  return out;
}

std::vector<ConfigError> txn_errors(const sys::TxnResult& r) {
  std::vector<ConfigError> out;
  if (r.error) out.push_back({r.error->path, r.error->message});
  for (const auto& e : r.rollback_errors) out.push_back({e.path, "could not restore: " + e.message});
  return out;
}

}  // namespace control
