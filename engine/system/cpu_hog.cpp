#include "engine/system/cpu_hog.hpp"

#include <sys/resource.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "engine/system/topology.hpp"

namespace sys {

namespace {

constexpr unsigned min_period_us = 1000;       // below this, wake-up latency is the duty cycle
constexpr unsigned max_period_us = 10'000'000;
constexpr uint64_t ns_per_us = 1000;
constexpr int min_nice = -20, max_nice = 19;

uint64_t clock_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

void sleep_until(uint64_t deadline_ns) {
  timespec t{static_cast<time_t>(deadline_ns / 1'000'000'000ull), static_cast<long>(deadline_ns % 1'000'000'000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

}  // namespace

struct CpuHog::Thread {
  unsigned cpu = 0;
  std::atomic<int> tid{0};
  std::atomic<bool> ready{false};
  std::string pin_error;  // pinning or the nice value failed; set before ready
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC, set before ready
  clockid_t cpu_clock{};
  std::thread thread;
};

namespace {

void spin(const std::atomic<bool>& stop, const HogSpec& spec, uint64_t start_ns) {
  const uint64_t period = uint64_t{spec.period_us} * ns_per_us;
  const uint64_t busy = period * spec.load_pct / 100;
  for (uint64_t begin = start_ns; !stop.load(std::memory_order_relaxed); begin += period) {
    const uint64_t end = begin + period;
    if (busy > 0) {
      const uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
      // Preemption must not count as busy: spin on this thread's own CPU time, bounded by the
      // period so a starved hog does not fall ever further behind.
      while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 < busy && clock_ns(CLOCK_MONOTONIC) < end) {
      }
    }
    if (busy < period) sleep_until(end);
  }
}

}  // namespace

CpuHog::CpuHog() = default;
CpuHog::~CpuHog() { stop(); }

std::string CpuHog::check(const HogSpec& spec) {
  if (spec.cpus.empty()) return "no CPUs given";
  if (spec.load_pct > 100) return "load " + std::to_string(spec.load_pct) + " % is above 100";
  if (spec.nice < min_nice || spec.nice > max_nice) return "nice " + std::to_string(spec.nice) + " out of range (-20..19)";
  if (spec.period_us < min_period_us || spec.period_us > max_period_us)
    return "period " + std::to_string(spec.period_us) + " µs out of range (" + std::to_string(min_period_us) + ".." +
           std::to_string(max_period_us) + ")";
  for (unsigned cpu : spec.cpus)
    if (!cpu_online(cpu)) return "CPU " + std::to_string(cpu) + " is not online (or not usable by this process)";
  return {};
}

std::string CpuHog::start(const HogSpec& spec) {
  stop();
  if (auto err = check(spec); !err.empty()) return err;
  _spec = spec;
  _stop.store(false);
  std::string error;
  for (unsigned cpu : spec.cpus) {
    auto t = std::make_unique<Thread>();
    t->cpu = cpu;
    Thread* raw = t.get();
    t->thread = std::thread([this, raw] {
      raw->pin_error = pin_current_thread({raw->cpu});
      // PRIO_PROCESS with 0 is the calling thread on Linux (nice is per thread there).
      if (raw->pin_error.empty() && _spec.nice != 0 && setpriority(PRIO_PROCESS, 0, _spec.nice) != 0)
        raw->pin_error = "nice " + std::to_string(_spec.nice) + ": " + std::strerror(errno);
      raw->tid.store(current_tid());
      pthread_getcpuclockid(pthread_self(), &raw->cpu_clock);
      pthread_setname_np(pthread_self(), ("nvmetune-hog" + std::to_string(raw->cpu)).substr(0, 15).c_str());
      raw->start_ns = clock_ns(CLOCK_MONOTONIC);
      const bool ok = raw->pin_error.empty();
      raw->ready.store(true);
      if (ok) spin(_stop, _spec, raw->start_ns);
    });
    while (!raw->ready.load()) std::this_thread::yield();
    _threads.push_back(std::move(t));
    if (!raw->pin_error.empty()) {
      error = "CPU " + std::to_string(cpu) + ": " + raw->pin_error;
      break;
    }
  }
  if (!error.empty()) stop();
  return error;
}

void CpuHog::stop() {
  _stop.store(true);
  for (auto& t : _threads)
    if (t->thread.joinable()) t->thread.join();
  _threads.clear();
}

std::vector<HogThreadStats> CpuHog::stats() const {
  std::vector<HogThreadStats> out;
  const uint64_t now = clock_ns(CLOCK_MONOTONIC);
  for (const auto& t : _threads) {
    HogThreadStats s;
    s.cpu = t->cpu;
    s.tid = t->tid.load();
    s.cpu_ns = clock_ns(t->cpu_clock);
    s.wall_ns = now - t->start_ns;
    out.push_back(s);
  }
  return out;
}

}  // namespace sys
