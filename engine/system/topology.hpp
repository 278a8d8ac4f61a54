#pragma once
// CPU topology (from hwloc), affinity pods, thread pinning and thread priority.
//
// The executors group their workers the way the kernel's unbound workqueues do
// (affinity_scope): a pod is the set of CPUs sharing one level of the topology (the CPU itself,
// its core's SMT siblings, the last-level cache, the NUMA node or the whole machine), cut down to
// the worker cpumask. Every function reports failure as a value: an error string, empty on
// success, that names what failed and why.
#include <pthread.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sys {

enum class AffinityScope : uint8_t {
  cpu,     // one pod per CPU
  smt,     // the hardware threads (PUs) of one core
  cache,   // the CPUs sharing a last-level cache
  numa,    // the CPUs of a NUMA node
  system,  // every CPU
};

// "cpu" | "smt" | "cache" | "numa" | "system"; nullopt for anything else.
std::optional<AffinityScope> parse_affinity_scope(std::string_view name);
const char* to_string(AffinityScope scope);

// One online CPU and the groups it belongs to. Group ids are dense per kind and follow the
// topology order, so pods come out in the order hwloc lists the machine.
struct CpuPlace {
  unsigned cpu = 0;    // OS index (what /proc and sched_setaffinity use)
  unsigned core = 0;   // SMT siblings share it
  unsigned cache = 0;  // CPUs under one last-level cache share it
  unsigned numa = 0;   // CPUs of one NUMA node share it
  unsigned package = 0;      // CPUs of one socket share it (the GUI's topology picker)
  unsigned cache_level = 0;  // the last-level cache's level (3 = L3); 0 = unknown
  uint64_t cache_bytes = 0;  // its size; 0 = unknown
};

class Topology {
 public:
  // A synthetic machine (tests, or a topology read elsewhere); sorted by CPU number.
  explicit Topology(std::vector<CpuPlace> cpus);

  // The machine this process runs on, read with hwloc once and then cached: the online CPUs
  // this process may use (cgroup cpuset). When hwloc fails, load_error() says why and the
  // topology falls back to the kernel's online CPUs, each in its own core, cache and node 0.
  static const Topology& host();
  // Reads the machine again (after CPU hotplug); not cached.
  static Topology detect();

  const std::vector<CpuPlace>& cpus() const { return _cpus; }
  std::vector<unsigned> online() const;
  bool online(unsigned cpu) const;
  // The CPUs of mask grouped by scope, each pod sorted, in topology order. CPUs of mask that are
  // not online are left out; pods with no CPU of mask are dropped (an empty mask gives none).
  std::vector<std::vector<unsigned>> pods(AffinityScope scope,
                                          const std::vector<unsigned>& mask) const;
  const std::string& load_error() const { return _load_error; }

 private:
  Topology() = default;

  std::vector<CpuPlace> _cpus;
  std::string _load_error;
};

// Shorthands on Topology::host().
std::vector<unsigned> online_cpus();
// The CPUs this process may run on (its affinity when first asked: taskset, cpuset cgroups),
// sorted; the default worker mask. {0} if the kernel will not say.
std::vector<unsigned> allowed_cpus();
bool cpu_online(unsigned cpu);
std::vector<std::vector<unsigned>> pods(AffinityScope scope, const std::vector<unsigned>& mask);

// Restricts a thread to cpus (pthread_setaffinity_np). Empty cpus, a CPU number beyond
// CPU_SETSIZE or a refusal by the kernel (CPU offline, outside the cgroup) return an error.
std::string pin_thread(pthread_t thread, const std::vector<unsigned>& cpus);
std::string pin_current_thread(const std::vector<unsigned>& cpus);

// The kernel thread id of the calling thread.
int current_tid();

struct CpuList {
  std::vector<unsigned> cpus;
  std::string error;  // empty on success
};
// The CPUs a thread of this process may run on, as the kernel reports them in
// /proc/self/task/TID/status ("Cpus_allowed_list").
CpuList thread_cpus_allowed(int tid);
// The same through sched_getaffinity(tid) (no file parsing; for threads() listings).
CpuList thread_affinity(int tid);
// The kernel's largest NR_CPUS: CPU numbers above it are typos, and would make ranges huge.
inline constexpr unsigned max_cpu_number = 8191;
// "0-3,6" → {0,1,2,3,6} (sorted, unique); error on malformed text. The one CPU-list parser.
CpuList parse_cpu_list(std::string_view text);
// {0,1,2,3,6} → "0-3,6" (sorted, duplicates dropped); {} → "".
std::string format_cpu_list(const std::vector<unsigned>& cpus);

enum class ThreadPriority : uint8_t {
  normal,  // SCHED_OTHER, nice 0
  nice,    // SCHED_OTHER, nice -20
  fifo,    // SCHED_FIFO, priority 1
};
// "normal" | "nice" | "fifo"; nullopt for anything else.
std::optional<ThreadPriority> parse_thread_priority(std::string_view name);
// Applies priority to thread tid of this process (setpriority / sched_setscheduler on the tid).
// Needs CAP_SYS_NICE for nice and fifo.
std::string set_thread_priority(int tid, ThreadPriority priority);

}  // namespace sys
