#pragma once
// How late this machine wakes a sleeping thread, measured beside a timing test.
//
// Latency tests on a shared 2-core machine see two things: what the engine adds, and the
// scheduler waking threads late because other work holds the CPUs (seen here: +40 % at p90
// with a load average of 28). A sampler thread sleeps for the same delay as the test's
// injected one, over the same window, and records how late each wake-up was; a test bounds
// its percentile by the delay plus the lateness at that percentile. On a quiet machine the
// lateness is tens of microseconds, so the bound stays tight and still fails when the engine
// itself completes late.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace test_support {

class WakeupLateness {
 public:
  // Starts sampling at once: sleeps of sleep_ns, back to back, until stop(). cpu >= 0: on that
  // CPU only, the one the engine thread under test is pinned to (its wake-ups compete with
  // whatever else runs there, not with the machine's least busy CPU).
  explicit WakeupLateness(uint64_t sleep_ns, int cpu = -1) : _sleep_ns(sleep_ns), _cpu(cpu), _thread([this] { run(); }) {}
  ~WakeupLateness() { stop(); }
  WakeupLateness(const WakeupLateness&) = delete;
  WakeupLateness& operator=(const WakeupLateness&) = delete;

  void stop() {
    _stop.store(true, std::memory_order_relaxed);
    if (_thread.joinable()) _thread.join();
    std::sort(_late_ns.begin(), _late_ns.end());
  }
  // Lateness at percentile p (0..100) in ns; call after stop(). 0 without samples.
  double at(double p) const {
    if (_late_ns.empty()) return 0;
    const auto i = static_cast<size_t>(p / 100.0 * static_cast<double>(_late_ns.size() - 1));
    return static_cast<double>(_late_ns[std::min(i, _late_ns.size() - 1)]);
  }
  size_t samples() const { return _late_ns.size(); }

 private:
  static uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  }
  void run() {
    if (_cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(_cpu, &set);
      (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    const timespec d{static_cast<time_t>(_sleep_ns / 1'000'000'000ull), static_cast<long>(_sleep_ns % 1'000'000'000ull)};
    while (!_stop.load(std::memory_order_relaxed)) {
      const uint64_t t0 = now_ns();
      clock_nanosleep(CLOCK_MONOTONIC, 0, &d, nullptr);
      const uint64_t took = now_ns() - t0;
      _late_ns.push_back(took > _sleep_ns ? took - _sleep_ns : 0);
    }
  }

  uint64_t _sleep_ns;
  int _cpu;
  std::atomic<bool> _stop{false};
  std::vector<uint64_t> _late_ns;  // written by the sampler only until stop() joins it
  std::thread _thread;
};

}  // namespace test_support
