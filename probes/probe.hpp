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
};

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
