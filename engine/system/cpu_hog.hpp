#pragma once
// The CPU-contention generator: one thread per CPU of a list, pinned there, alternating busy
// spinning and sleeping so that each takes `load_pct` % of its CPU. It stands in for the "other
// workload" of the kernel threads this project grew from (a dedicated poller vs a bound worker
// when something else wants the same cores); `nvmetune hog` and `nvmetune experiment` use it.
//
// Duty cycle: periods of `period_us`; in each, a thread spins until it has used its share of
// CPU time (its own CLOCK_THREAD_CPUTIME_ID, so being preempted does not count as busy) or the
// period is over, then sleeps to the period's end (absolute deadlines: no drift).
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sys {

struct HogSpec {
  std::vector<unsigned> cpus;  // one thread pinned to each
  unsigned load_pct = 50;      // 0..100 of each CPU
  unsigned period_us = 10'000; // one busy + sleep cycle
  // The threads' nice value (-20..19). Below 0 (CAP_SYS_NICE) the hog takes its share of a CPU
  // whatever else already runs there: on a machine busy with other work, a hog of the same
  // weight as that work hardly changes what the engine gets.
  int nice = 0;
};

struct HogThreadStats {
  unsigned cpu = 0;
  int tid = 0;
  uint64_t cpu_ns = 0;   // the thread's CPU time since it started
  uint64_t wall_ns = 0;  // wall time since it started
  double duty_pct() const { return wall_ns ? 100.0 * static_cast<double>(cpu_ns) / static_cast<double>(wall_ns) : 0; }
};

class CpuHog {
 public:
  CpuHog();
  ~CpuHog();  // stops
  CpuHog(const CpuHog&) = delete;
  CpuHog& operator=(const CpuHog&) = delete;

  // Starts the threads. An error (empty spec, load > 100, a CPU that cannot be pinned) starts
  // nothing. Starting a running hog restarts it with the new spec.
  std::string start(const HogSpec& spec);
  // Joins every thread. Idempotent.
  void stop();
  bool running() const { return !_threads.empty(); }
  const HogSpec& spec() const { return _spec; }
  // Measured so far, per thread (what the duty cycle really was).
  std::vector<HogThreadStats> stats() const;

  // Validates a spec without starting anything (the command line and experiment files).
  static std::string check(const HogSpec& spec);

 private:
  struct Thread;
  HogSpec _spec;
  std::atomic<bool> _stop{false};
  std::vector<std::unique_ptr<Thread>> _threads;
};

}  // namespace sys
