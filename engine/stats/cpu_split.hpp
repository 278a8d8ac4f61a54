#pragma once
// Where a worker's interval went: running io_work with work to do (busy), spinning through
// io_work passes that found nothing (idle polling: poll mode burns its cores here), or off the
// CPU (sleeping). The kernel gives the CPU time; the pass counters split it. One function so
// the control socket, `ctl` and the GUI show the same split.
#include <algorithm>
#include <cstdint>

#include "engine/stats/snapshot.hpp"

namespace stats {

struct CpuSplit {
  uint64_t busy_ns = 0;
  uint64_t idle_poll_ns = 0;
  uint64_t sleep_ns = 0;
};

// CPU time is divided in proportion to busy and idle passes (a pass with work costs more than
// an empty one, so busy is a lower bound); the rest of the interval is sleep.
inline CpuSplit cpu_split(const WorkerRow& w, uint64_t interval_ns) {
  CpuSplit s;
  const uint64_t cpu = std::min(w.cpu_ns, interval_ns ? interval_ns : w.cpu_ns);
  const uint64_t passes = w.busy_passes + w.idle_passes;
  s.idle_poll_ns = passes ? static_cast<uint64_t>(static_cast<double>(cpu) * static_cast<double>(w.idle_passes) /
                                                  static_cast<double>(passes))
                          : 0;
  s.busy_ns = cpu - s.idle_poll_ns;
  s.sleep_ns = interval_ns > cpu ? interval_ns - cpu : 0;
  return s;
}

}  // namespace stats
