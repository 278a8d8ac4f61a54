#pragma once
// Contention for tests: threads that spin on chosen CPUs until destroyed, and pinning the
// calling thread. What the probe tests use as "high load" on a CPU.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

namespace test_support {

inline void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// `per_cpu` spinning threads pinned to each CPU of `cpus`.
class BusyThreads {
 public:
  BusyThreads(const std::vector<int>& cpus, int per_cpu) {
    for (int cpu : cpus)
      for (int i = 0; i < per_cpu; ++i)
        _threads.emplace_back([this, cpu] {
          pin_this_thread(cpu);
          while (!_stop.load(std::memory_order_relaxed)) {
          }
        });
  }
  ~BusyThreads() {
    _stop = true;
    for (auto& t : _threads) t.join();
  }
  BusyThreads(const BusyThreads&) = delete;
  BusyThreads& operator=(const BusyThreads&) = delete;

 private:
  std::atomic<bool> _stop{false};
  std::vector<std::thread> _threads;
};

}  // namespace test_support
