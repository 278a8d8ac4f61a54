#pragma once
// One loaded and attached eBPF probe, and what every probe's loader takes and gives.
#include <memory>
#include <string>
#include <vector>

#include "engine/stats/snapshot.hpp"

namespace probes {

struct ProbeOptions {
  int tgid = 0;            // only this process's threads (runqlat, socklat, usdtlat); 0 = all
  std::string filter;      // the probe's own filter (wqlat: workqueue name; biolat: device)
  bool per_key = true;     // one histogram per thread/workqueue/device/syscall beside the total
  std::string binary;      // usdtlat: the executable carrying the USDT points ("" = this one)
  // biolat without a filter: the files and block devices behind the engine's namespaces; it
  // watches the disks they live on. Empty: every disk.
  std::vector<std::string> backing_paths;
  // Probes on events that come once per I/O or more (irqload's softirqs, socklat's syscalls)
  // count every event but time 1 in time_every of them: two clock reads per event cost more
  // than the rest of the program in a VM (kvm-clock). A power of two; 0 = the probe's default
  // (default_time_every), 1 = time every event.
  uint32_t time_every = 0;
};

// 1 in 8: under the probes-overhead bench's load, irqload and socklat timing every event cost
// 6-9 % of the engine's IOPS; their histograms are then samples, their counts stay exact.
inline constexpr uint32_t default_time_every = 8;

// The BPF side's mask for ProbeOptions::time_every (rounded down to a power of two).
inline uint32_t time_mask(const ProbeOptions& o) {
  uint32_t n = o.time_every ? o.time_every : default_time_every, p = 1;
  while (p * 2 <= n && p < (1u << 16)) p *= 2;
  return p - 1;
}

// What one collection returns: histograms and counters of the interval since the last one.
struct ProbeData {
  std::vector<stats::ProbeHistogram> histograms;
  std::vector<stats::ProbeCounter> counters;
};

class Probe {
 public:
  virtual ~Probe() = default;  // detaches and unloads
  // Reads the probe's maps and clears them (bcc's convention: each call returns one interval).
  // Called from one thread at a time.
  virtual ProbeData collect() = 0;
};

}  // namespace probes
