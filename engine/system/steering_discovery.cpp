// Discovery of interrupt lines, queues and steering settings (steering_discovery.hpp).
#include "engine/system/steering_discovery.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <map>

#include "engine/system/cpu_bitmap.hpp"
#include "engine/system/irq_table.hpp"
#include "engine/system/steering_files.hpp"
#include "engine/system/topology.hpp"

namespace sys {

namespace {

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::optional<uint64_t> read_u64(const SysRoot& root, const std::string& path) {
  const auto r = root.read(path);
  uint64_t v = 0;
  const char* end = r.text.data() + r.text.size();
  if (!r.ok() || std::from_chars(r.text.data(), end, v).ec != std::errc()) return std::nullopt;
  return v;
}

std::optional<std::vector<unsigned>> read_list(const SysRoot& root, const std::string& path) {
  const auto r = root.read(path);
  if (!r.ok()) return std::nullopt;
  std::string text = r.text;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  auto l = parse_cpu_list(text);
  if (!l.error.empty()) return std::nullopt;
  return l.cpus;
}

std::optional<std::vector<unsigned>> read_mask(const SysRoot& root, const std::string& path) {
  const auto r = root.read(path);
  return r.ok() ? parse_cpu_mask(r.text) : std::nullopt;
}

// "rx-3" → 3 for prefix "rx-".
std::optional<unsigned> queue_index(const std::string& entry, std::string_view prefix) {
  unsigned v = 0;
  if (entry.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const char* b = entry.data() + prefix.size();
  const char* e = entry.data() + entry.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) return std::nullopt;
  return v;
}

std::vector<NetQueue> read_queues(const SysRoot& root, const std::string& device, bool rx) {
  std::vector<NetQueue> out;
  for (const auto& e : root.list("/sys/class/net/" + device + "/queues")) {
    auto idx = queue_index(e, rx ? "rx-" : "tx-");
    if (!idx) continue;
    NetQueue q;
    q.index = *idx;
    q.cpus = read_mask(root, queue_file(device, *idx, rx ? QueueFile::rps_cpus : QueueFile::xps_cpus));
    if (rx) q.flow_cnt = read_u64(root, queue_file(device, *idx, QueueFile::rps_flow_cnt));
    out.push_back(std::move(q));
  }
  std::sort(out.begin(), out.end(), [](const NetQueue& a, const NetQueue& b) { return a.index < b.index; });
  return out;
}

std::string basename_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }
std::string dirname_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

// The interface's lines: the device's msi_irqs (or its parent's, for virtio, whose lines carry
// the virtio device's name), else lines named after the interface.
std::vector<unsigned> interface_irqs(const SysRoot& root, const NetInterface& nif, const std::vector<IrqLine>& lines) {
  std::vector<unsigned> out;
  std::string msi = nif.device.empty() ? "" : nif.device + "/msi_irqs";
  if (!msi.empty() && !root.exists(msi)) msi = dirname_of(nif.device) + "/msi_irqs";
  const std::string virtio = basename_of(nif.device).rfind("virtio", 0) == 0 ? basename_of(nif.device) + "-" : "";
  if (!nif.device.empty() && root.exists(msi)) {
    for (const auto& e : root.list(msi)) {
      unsigned irq = 0;
      if (std::from_chars(e.data(), e.data() + e.size(), irq).ec != std::errc()) continue;
      auto it = std::find_if(lines.begin(), lines.end(), [&](const IrqLine& l) { return l.irq == irq; });
      if (!virtio.empty() && (it == lines.end() || it->name.rfind(virtio, 0) != 0)) continue;
      out.push_back(irq);
    }
  } else if (!nif.device.empty()) {
    for (const auto& l : lines)
      if (l.name.find(nif.name + "-") != std::string::npos || l.name.find(nif.name + "@") != std::string::npos)
        out.push_back(l.irq);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<IrqLine> read_irq_lines(const SysRoot& root, SteeringView& view) {
  std::vector<IrqLine> out;
  const auto text = root.read("/proc/interrupts");
  if (!text.ok()) {
    view.warnings.push_back("/proc/interrupts: " + errno_name(text.err));
    return out;
  }
  auto table = parse_interrupts(text.text);
  if (!table.error.empty()) view.warnings.push_back("/proc/interrupts: " + table.error);
  if (view.cpus.empty()) view.cpus = table.cpus;
  for (auto& c : table.lines) {
    IrqLine l;
    l.irq = c.irq;
    l.chip = std::move(c.chip);
    l.name = std::move(c.name);
    // Columns follow the header; re-index them by the view's CPU list.
    l.per_cpu.assign(view.cpus.size(), 0);
    for (size_t k = 0; k < table.cpus.size(); ++k) {
      auto it = std::find(view.cpus.begin(), view.cpus.end(), table.cpus[k]);
      if (it != view.cpus.end()) l.per_cpu[size_t(it - view.cpus.begin())] = c.per_cpu[k];
    }
    l.total = c.total;
    const std::string dir = "/proc/irq/" + std::to_string(l.irq);
    l.affinity_path = irq_affinity_file(l.irq);
    l.affinity = read_list(root, l.affinity_path);
    l.effective_affinity = read_list(root, dir + "/effective_affinity_list");
    out.push_back(std::move(l));
  }
  return out;
}

void fill_per_cpu(const SysRoot& root, SteeringView& v) {
  const auto softirqs = root.read("/proc/softirqs");
  const auto rx = parse_softirqs(softirqs.text, "NET_RX");
  const auto tx = parse_softirqs(softirqs.text, "NET_TX");
  for (size_t i = 0; i < v.cpus.size(); ++i) {
    CpuSteering c;
    c.cpu = v.cpus[i];
    for (size_t k = 0; k < rx.cpus.size(); ++k)
      if (rx.cpus[k] == c.cpu) c.net_rx = rx.per_cpu[k], c.net_tx = tx.per_cpu.size() > k ? tx.per_cpu[k] : 0;
    for (const auto& l : v.irqs) {
      c.interrupts += l.per_cpu[i];
      const auto& aff = l.effective_affinity ? l.effective_affinity : l.affinity;
      if (aff && std::find(aff->begin(), aff->end(), c.cpu) != aff->end()) c.irqs.push_back(l.irq);
    }
    for (const auto& nif : v.interfaces) {
      const auto has = [&](const NetQueue& q) { return q.cpus && std::count(q.cpus->begin(), q.cpus->end(), c.cpu); };
      for (const auto& q : nif.rx)
        if (has(q)) c.rps.push_back(nif.name + "/rx-" + std::to_string(q.index));
      for (const auto& q : nif.tx)
        if (has(q)) c.xps.push_back(nif.name + "/tx-" + std::to_string(q.index));
    }
    v.per_cpu.push_back(std::move(c));
  }
}

}  // namespace

SteeringView discover_steering(const SysRoot& root, const std::vector<std::string>& interfaces) {
  SteeringView v;
  v.time_ns = monotonic_ns();
  if (auto online = read_list(root, "/sys/devices/system/cpu/online")) v.cpus = *online;
  v.irqs = read_irq_lines(root, v);
  auto names = interfaces.empty() ? root.list("/sys/class/net") : interfaces;
  for (const auto& name : names) {
    const std::string dir = "/sys/class/net/" + name;
    if (!root.exists(dir)) {
      v.warnings.push_back("no network interface " + name);
      continue;
    }
    NetInterface nif;
    nif.name = name;
    nif.device = root.resolve(dir + "/device");
    nif.irqs = interface_irqs(root, nif, v.irqs);
    nif.rx = read_queues(root, name, true);
    nif.tx = read_queues(root, name, false);
    for (auto& l : v.irqs) {
      if (!std::binary_search(nif.irqs.begin(), nif.irqs.end(), l.irq)) continue;
      l.device = name;
      const auto r = irq_role(l.name);
      l.role = r.role;
      l.queue = r.queue;
    }
    v.interfaces.push_back(std::move(nif));
  }
  v.rps_sock_flow_entries = read_u64(root, net_core_file(NetCoreFile::rps_sock_flow_entries));
  v.busy_poll = read_u64(root, net_core_file(NetCoreFile::busy_poll));
  v.busy_read = read_u64(root, net_core_file(NetCoreFile::busy_read));
  fill_per_cpu(root, v);
  return v;
}

void SteeringMonitor::rate(SteeringView& view) {
  const double dt = _have ? double(view.time_ns - _last.time_ns) / 1e9 : 0;
  if (dt > 0) {
    std::map<unsigned, uint64_t> before;
    for (const auto& l : _last.irqs) before[l.irq] = l.total;
    for (auto& l : view.irqs)
      if (auto it = before.find(l.irq); it != before.end() && l.total >= it->second) l.rate = double(l.total - it->second) / dt;
    for (auto& c : view.per_cpu)
      for (const auto& p : _last.per_cpu) {
        if (p.cpu != c.cpu) continue;
        const auto per_s = [dt](uint64_t now, uint64_t then) { return now >= then ? double(now - then) / dt : 0.0; };
        c.irq_rate = per_s(c.interrupts, p.interrupts);
        c.net_rx_rate = per_s(c.net_rx, p.net_rx);
        c.net_tx_rate = per_s(c.net_tx, p.net_tx);
      }
  }
  _last = view;
  _have = true;
}

std::vector<std::string> interfaces_with_address(const std::string& ipv4) {
  std::vector<std::string> out;
  in_addr want{};
  if (inet_pton(AF_INET, ipv4.c_str(), &want) != 1) return out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (want.s_addr != INADDR_ANY && sin->sin_addr.s_addr != want.s_addr) continue;
    if (std::find(out.begin(), out.end(), a->ifa_name) == out.end()) out.push_back(a->ifa_name);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace sys
