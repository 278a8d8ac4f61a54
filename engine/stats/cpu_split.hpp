#pragma once
// Where a worker's interval went: running io_work with work to do (busy), spinning through
// io_work passes that found nothing (idle polling: poll mode burns its cores here), or off the
// CPU (sleeping). The kernel gives the CPU time; the poller's own measure of its spin splits
// it. One function so the control socket, `ctl` and the GUI show the same split.
#include <algorithm>
#include <cstdint>

#include "engine/stats/snapshot.hpp"

namespace stats {

struct CpuSplit {
  uint64_t busy_ns = 0;
  uint64_t idle_poll_ns = 0;
  uint64_t sleep_ns = 0;
};

// The spin is what the poller measured (WorkerRow::idle_poll_ns: from one pass to the next
// with nothing done and no wait that could sleep between), capped by the CPU time; the rest of
// the CPU time is busy, the rest of the interval sleep. Dividing the CPU by pass counts, as
// before, called a worker 93 % idle-polling at 4k randread qd32 (294,000 empty passes a second
// against 22,000 busy ones) where an empty pass costs a fraction of a busy one.
// part_ns as a percentage of the interval (0 for an empty interval): how the control socket,
// the store and the GUI all show a worker's CPU and its split.
inline double percent_of(uint64_t part_ns, uint64_t interval_ns) {
  return interval_ns ? 100.0 * static_cast<double>(part_ns) / static_cast<double>(interval_ns) : 0.0;
}

inline CpuSplit cpu_split(const WorkerRow& w, uint64_t interval_ns) {
  CpuSplit s;
  const uint64_t cpu = std::min(w.cpu_ns, interval_ns ? interval_ns : w.cpu_ns);
  s.idle_poll_ns = std::min(w.idle_poll_ns, cpu);
  s.busy_ns = cpu - s.idle_poll_ns;
  s.sleep_ns = interval_ns > cpu ? interval_ns - cpu : 0;
  return s;
}

}  // namespace stats
