// From a steering request to the rows of a plan (steering_plan.hpp).
#include "engine/system/steering_plan.hpp"

#include <algorithm>
#include <map>

#include "engine/system/cpu_bitmap.hpp"
#include "engine/system/steering_files.hpp"
#include "engine/system/steering_txn.hpp"
#include "engine/system/topology.hpp"

namespace sys {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class Planner {
 public:
  Planner(const SysRoot& root, const SteeringView& view) : _root(root), _view(view) {}

  void irq_rule(const IrqRule& r, const std::string& field) {
    auto cpus = resolve_cpus(r.cpus, field + ".cpus");
    if (cpus && cpus->empty()) error(field + ".cpus", "an interrupt line needs at least one CPU");
    std::vector<const IrqLine*> lines;
    if (r.irq) {
      auto it = std::find_if(_view.irqs.begin(), _view.irqs.end(), [&](const IrqLine& l) { return l.irq == *r.irq; });
      if (it == _view.irqs.end()) return error(field + ".irq", "no interrupt line " + std::to_string(*r.irq) + " in /proc/interrupts");
      lines.push_back(&*it);
    } else if (const NetInterface* nif = device(r.device, field + ".device")) {
      for (const auto& l : _view.irqs)
        if (l.device == nif->name && l.queue >= 0 && (!r.queue || unsigned(l.queue) == *r.queue)) lines.push_back(&l);
      if (lines.empty())
        return error(field + (r.queue ? ".queue" : ".device"),
                     nif->irqs.empty() ? r.device + " has no interrupt lines (a virtual device?)"
                                       : "no interrupt line of " + r.device + " serves queue " + std::to_string(r.queue.value_or(0)));
    }
    if (!cpus || cpus->empty()) return;
    for (const IrqLine* l : lines) {
      const auto old = read(l->affinity_path, field);
      if (!old) continue;
      const auto now = parse_cpu_list(trim(*old));
      row({l->affinity_path, "irq " + std::to_string(l->irq) + " (" + l->name + ")", *old, format_cpu_list(*cpus),
           !now.error.empty() || now.cpus != *cpus});
    }
  }

  void queue_rule(const QueueRule& r, const std::string& field, bool rx) {
    auto cpus = r.set_cpus ? resolve_cpus(r.cpus, field + ".cpus") : std::nullopt;
    const NetInterface* nif = device(r.device, field + ".device");
    if (!nif) return;
    const auto& queues = rx ? nif->rx : nif->tx;
    if (r.queue && std::none_of(queues.begin(), queues.end(), [&](const NetQueue& q) { return q.index == *r.queue; }))
      return error(field + ".queue", r.device + " has no " + (rx ? "rx" : "tx") + " queue " + std::to_string(*r.queue) +
                                         " (it has " + std::to_string(queues.size()) + ")");
    if (!rx && r.flow_cnt) error(field + ".flow_cnt", "flow_cnt is an RPS (rx queue) setting");
    for (const auto& q : queues) {
      if (r.queue && q.index != *r.queue) continue;
      const std::string qname = (rx ? "rx-" : "tx-") + std::to_string(q.index);
      const std::string file = rx ? "rps_cpus" : "xps_cpus";
      if (cpus) {
        const std::string path = queue_file(nif->name, q.index, rx ? QueueFile::rps_cpus : QueueFile::xps_cpus);
        if (const auto old = read(path, field)) {
          const auto now = parse_cpu_mask(*old);
          row({path, nif->name + " " + qname + " " + file, *old, format_cpu_mask_like(*cpus, *old), !now || *now != *cpus});
        }
      }
      if (rx && r.flow_cnt)
        number(queue_file(nif->name, q.index, QueueFile::rps_flow_cnt), nif->name + " " + qname + " rps_flow_cnt", *r.flow_cnt, field);
    }
  }

  void number(const std::string& path, const std::string& what, uint64_t value, const std::string& field) {
    if (const auto old = read(path, field)) row({path, what, *old, std::to_string(value), trim(*old) != std::to_string(value)});
  }

  SteeringPlan take() { return std::move(_plan); }

 private:
  std::optional<std::vector<unsigned>> resolve_cpus(const CpuChoice& c, const std::string& field) {
    if (!c) return _view.cpus;
    std::vector<unsigned> offline;
    for (unsigned cpu : *c)
      if (!std::binary_search(_view.cpus.begin(), _view.cpus.end(), cpu)) offline.push_back(cpu);
    if (!offline.empty()) {
      error(field, "CPUs " + format_cpu_list(offline) + " are not online (online: " + format_cpu_list(_view.cpus) + ")");
      return std::nullopt;
    }
    return *c;
  }

  const NetInterface* device(const std::string& name, const std::string& field) {
    for (const auto& nif : _view.interfaces)
      if (nif.name == name) return &nif;
    std::string known;
    for (const auto& nif : _view.interfaces) known += (known.empty() ? "" : ", ") + nif.name;
    error(field, name.empty() ? "missing device (or irq)" : "no network interface " + name + " (known: " + (known.empty() ? "none" : known) + ")");
    return nullptr;
  }

  std::optional<std::string> read(const std::string& path, const std::string& field) {
    auto r = _root.read(path);
    if (r.ok()) return r.text;
    error(field, "cannot read " + explain_write_error(path, r.err));
    return std::nullopt;
  }

  void row(PlanRow r) {
    if (auto it = _index.find(r.path); it != _index.end()) {
      r.old_value = _plan.rows[it->second].old_value;
      _plan.rows[it->second] = std::move(r);
      return;
    }
    _index[r.path] = _plan.rows.size();
    _plan.rows.push_back(std::move(r));
  }

  void error(std::string field, std::string message) { _plan.errors.push_back({std::move(field), std::move(message)}); }

  const SysRoot& _root;
  const SteeringView& _view;
  SteeringPlan _plan;
  std::map<std::string, size_t> _index;
};

}  // namespace

bool SteeringRequest::empty() const {
  return irq.empty() && rps.empty() && xps.empty() && !rps_sock_flow_entries && !busy_poll && !busy_read;
}

size_t SteeringPlan::changes() const {
  return size_t(std::count_if(rows.begin(), rows.end(), [](const PlanRow& r) { return r.change; }));
}

SteeringPlan plan_steering(const SysRoot& root, const SteeringView& view, const SteeringRequest& request) {
  Planner p(root, view);
  for (size_t i = 0; i < request.irq.size(); ++i) p.irq_rule(request.irq[i], "irq[" + std::to_string(i) + "]");
  for (size_t i = 0; i < request.rps.size(); ++i) p.queue_rule(request.rps[i], "rps[" + std::to_string(i) + "]", true);
  for (size_t i = 0; i < request.xps.size(); ++i) p.queue_rule(request.xps[i], "xps[" + std::to_string(i) + "]", false);
  if (request.rps_sock_flow_entries)
    p.number(net_core_file(NetCoreFile::rps_sock_flow_entries), "rps_sock_flow_entries", *request.rps_sock_flow_entries,
             "rps_sock_flow_entries");
  if (request.busy_poll) p.number(net_core_file(NetCoreFile::busy_poll), "busy_poll", *request.busy_poll, "busy_poll");
  if (request.busy_read) p.number(net_core_file(NetCoreFile::busy_read), "busy_read", *request.busy_read, "busy_read");
  return p.take();
}

}  // namespace sys
