// CPU topology from hwloc, pods, pinning and priority (see topology.hpp).
#include "engine/system/topology.hpp"

#include <hwloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace sys {

namespace {

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

// The cache object with the highest level above pu (the last-level cache), or nullptr when
// hwloc knows no data or unified cache for it.
hwloc_obj_t last_level_cache(hwloc_obj_t pu) {
  hwloc_obj_t llc = nullptr;
  for (hwloc_obj_t o = pu->parent; o != nullptr; o = o->parent) {
    if (!hwloc_obj_type_is_dcache(o->type)) continue;
    if (llc == nullptr || o->attr->cache.depth > llc->attr->cache.depth) llc = o;
  }
  return llc;
}

hwloc_obj_t ancestor_of_type(hwloc_obj_t pu, hwloc_obj_type_t type) {
  for (hwloc_obj_t o = pu->parent; o != nullptr; o = o->parent)
    if (o->type == type) return o;
  return nullptr;
}

// Dense ids in order of first appearance.
class DenseIds {
 public:
  unsigned of(const void* key) { return _ids.try_emplace(key, unsigned(_ids.size())).first->second; }

 private:
  std::map<const void*, unsigned> _ids;
};

// Walks the PUs in topology (logical) order. A PU without a core counts as its own core; without
// cache information a core counts as its own cache (siblings share at least L1/L2).
std::vector<CpuPlace> places_from_hwloc(hwloc_topology_t topo) {
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
  const int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  DenseIds cores, caches, packages;
  std::vector<CpuPlace> out;
  for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, nullptr); pu != nullptr;
       pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu)) {
    if (!hwloc_bitmap_isset(allowed, pu->os_index)) continue;
    CpuPlace p;
    p.cpu = pu->os_index;
    hwloc_obj_t core = ancestor_of_type(pu, HWLOC_OBJ_CORE);
    hwloc_obj_t package = ancestor_of_type(pu, HWLOC_OBJ_PACKAGE);
    p.package = packages.of(package != nullptr ? package : nullptr);
    p.core = cores.of(core != nullptr ? core : pu);
    hwloc_obj_t llc = last_level_cache(pu);
    p.cache = caches.of(llc != nullptr ? llc : (core != nullptr ? core : pu));
    if (llc != nullptr) {
      p.cache_level = llc->attr->cache.depth;
      p.cache_bytes = llc->attr->cache.size;
    }
    for (int n = 0; n < nodes; ++n) {
      hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, unsigned(n));
      if (node->cpuset != nullptr && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
        p.numa = unsigned(n);
        break;
      }
    }
    out.push_back(p);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// /sys/devices/system/cpu/online, the kernel's live view (empty on error).
std::vector<unsigned> kernel_online_cpus() {
  std::string text = read_file("/sys/devices/system/cpu/online");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return parse_cpu_list(text).cpus;
}

unsigned group_of(const CpuPlace& p, AffinityScope scope) {
  switch (scope) {
    case AffinityScope::cpu: return p.cpu;
    case AffinityScope::smt: return p.core;
    case AffinityScope::cache: return p.cache;
    case AffinityScope::numa: return p.numa;
    case AffinityScope::system: return 0;
  }
  return 0;
}

}  // namespace

std::optional<AffinityScope> parse_affinity_scope(std::string_view name) {
  for (auto s : {AffinityScope::cpu, AffinityScope::smt, AffinityScope::cache, AffinityScope::numa,
                 AffinityScope::system})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

const char* to_string(AffinityScope scope) {
  switch (scope) {
    case AffinityScope::cpu: return "cpu";
    case AffinityScope::smt: return "smt";
    case AffinityScope::cache: return "cache";
    case AffinityScope::numa: return "numa";
    case AffinityScope::system: return "system";
  }
  return "?";
}

Topology::Topology(std::vector<CpuPlace> cpus) : _cpus(std::move(cpus)) {
  std::sort(_cpus.begin(), _cpus.end(),
            [](const CpuPlace& a, const CpuPlace& b) { return a.cpu < b.cpu; });
}

Topology Topology::detect() {
  Topology t;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    t._load_error = errno_text("hwloc_topology_init", errno);
  } else {
    if (hwloc_topology_load(topo) != 0)
      t._load_error = errno_text("hwloc_topology_load", errno);
    else
      t = Topology(places_from_hwloc(topo));
    hwloc_topology_destroy(topo);
  }
  if (t._cpus.empty()) {
    if (t._load_error.empty()) t._load_error = "hwloc found no usable CPU";
    unsigned id = 0;
    for (unsigned cpu : kernel_online_cpus()) {
      t._cpus.push_back({cpu, id, id, 0});
      ++id;
    }
  }
  return t;
}

const Topology& Topology::host() {
  static const Topology topology = detect();
  return topology;
}

std::vector<unsigned> Topology::online() const {
  std::vector<unsigned> out;
  out.reserve(_cpus.size());
  for (const CpuPlace& p : _cpus) out.push_back(p.cpu);
  return out;
}

bool Topology::online(unsigned cpu) const {
  return std::any_of(_cpus.begin(), _cpus.end(), [cpu](const CpuPlace& p) { return p.cpu == cpu; });
}

std::vector<std::vector<unsigned>> Topology::pods(AffinityScope scope,
                                                  const std::vector<unsigned>& mask) const {
  // Pods keyed by the first position of their group in topology order.
  std::vector<std::pair<unsigned, std::vector<unsigned>>> groups;
  for (const CpuPlace& p : _cpus) {
    if (std::find(mask.begin(), mask.end(), p.cpu) == mask.end()) continue;
    const unsigned g = group_of(p, scope);
    auto it = std::find_if(groups.begin(), groups.end(), [g](const auto& e) { return e.first == g; });
    if (it == groups.end()) {
      groups.push_back({g, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(p.cpu);
  }
  std::sort(groups.begin(), groups.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<unsigned>> out;
  out.reserve(groups.size());
  for (auto& [g, cpus] : groups) out.push_back(std::move(cpus));
  return out;
}

std::vector<unsigned> allowed_cpus() {
  static const std::vector<unsigned> cpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<unsigned> out;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (unsigned c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    if (out.empty()) out.push_back(0);
    return out;
  }();
  return cpus;
}

std::vector<unsigned> online_cpus() { return Topology::host().online(); }

bool cpu_online(unsigned cpu) {
  if (!Topology::host().online(cpu)) return false;
  // The cached topology may predate a hotplug: confirm with the kernel's live list.
  std::vector<unsigned> live = kernel_online_cpus();
  return live.empty() || std::find(live.begin(), live.end(), cpu) != live.end();
}

std::vector<std::vector<unsigned>> pods(AffinityScope scope, const std::vector<unsigned>& mask) {
  return Topology::host().pods(scope, mask);
}

std::string pin_thread(pthread_t thread, const std::vector<unsigned>& cpus) {
  if (cpus.empty()) return "pin_thread: empty CPU set";
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned cpu : cpus) {
    if (cpu >= CPU_SETSIZE) return "pin_thread: CPU " + std::to_string(cpu) + " beyond CPU_SETSIZE";
    CPU_SET(cpu, &set);
  }
  const int rc = pthread_setaffinity_np(thread, sizeof set, &set);
  return rc == 0 ? std::string() : errno_text("pthread_setaffinity_np", rc);
}

std::string pin_current_thread(const std::vector<unsigned>& cpus) {
  return pin_thread(pthread_self(), cpus);
}

int current_tid() { return static_cast<int>(syscall(SYS_gettid)); }

CpuList parse_cpu_list(std::string_view text) {
  CpuList out;
  auto number = [](std::string_view s, unsigned& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty() && v <= max_cpu_number;
  };
  if (!text.empty() && text.back() == ',') return {{}, "malformed CPU list: trailing comma"};
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t dash = item.find('-');
    unsigned lo = 0, hi = 0;
    const bool ok = dash == std::string_view::npos
                        ? number(item, lo) && number(item, hi)
                        : number(item.substr(0, dash), lo) && number(item.substr(dash + 1), hi);
    if (!ok || hi < lo) {
      out.error = "malformed CPU list item \"" + std::string(item) + "\"";
      out.cpus.clear();
      return out;
    }
    for (unsigned c = lo; c <= hi; ++c) out.cpus.push_back(c);
  }
  std::sort(out.cpus.begin(), out.cpus.end());
  out.cpus.erase(std::unique(out.cpus.begin(), out.cpus.end()), out.cpus.end());
  return out;
}

CpuList thread_cpus_allowed(int tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/status";
  std::ifstream in(path);
  if (!in) return {{}, "cannot open " + path};
  std::string line;
  constexpr std::string_view key = "Cpus_allowed_list:";
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    std::string_view v(line);
    v.remove_prefix(key.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    return parse_cpu_list(v);
  }
  return {{}, "no Cpus_allowed_list in " + path};
}

CpuList thread_affinity(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof set, &set) != 0) return {{}, errno_text("sched_getaffinity", errno)};
  CpuList out;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.cpus.push_back(c);
  return out;
}

std::optional<ThreadPriority> parse_thread_priority(std::string_view name) {
  if (name == "normal") return ThreadPriority::normal;
  if (name == "nice") return ThreadPriority::nice;
  if (name == "fifo") return ThreadPriority::fifo;
  return std::nullopt;
}

std::string set_thread_priority(int tid, ThreadPriority priority) {
  constexpr int kNiceHigh = -20;
  constexpr int kFifoPriority = 1;
  sched_param param{};
  if (priority == ThreadPriority::fifo) {
    param.sched_priority = kFifoPriority;
    if (sched_setscheduler(tid, SCHED_FIFO, &param) != 0)
      return errno_text("sched_setscheduler(SCHED_FIFO)", errno);
    return {};
  }
  // Leave SCHED_FIFO first: nice values only matter under SCHED_OTHER.
  param.sched_priority = 0;
  if (sched_setscheduler(tid, SCHED_OTHER, &param) != 0)
    return errno_text("sched_setscheduler(SCHED_OTHER)", errno);
  const int nice = priority == ThreadPriority::nice ? kNiceHigh : 0;
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) != 0)
    return errno_text("setpriority", errno);
  return {};
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

}  // namespace sys
