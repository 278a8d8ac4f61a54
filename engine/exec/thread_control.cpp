#include "engine/exec/thread_control.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>

namespace exec {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int current_tid() { return static_cast<int>(syscall(SYS_gettid)); }

std::string pin_thread(int tid, const std::vector<unsigned>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpus.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long i = 0; i < n && i < CPU_SETSIZE; ++i) CPU_SET(static_cast<int>(i), &set);
  }
  for (unsigned c : cpus) CPU_SET(c, &set);
  // sched_setaffinity on a TID pins that one thread (pthread_setaffinity_np needs a handle).
  if (sched_setaffinity(tid, sizeof set, &set) != 0)
    return "cannot pin thread " + std::to_string(tid) + ": " + std::strerror(errno);
  return {};
}

std::string set_thread_priority(int tid, Priority p) {
  sched_param sp{};
  const int policy = p == Priority::fifo ? SCHED_FIFO : SCHED_OTHER;
  sp.sched_priority = p == Priority::fifo ? 1 : 0;
  if (sched_setscheduler(tid, policy, &sp) != 0)
    return "cannot set scheduling policy of thread " + std::to_string(tid) + ": " + std::strerror(errno);
  const int nice = p == Priority::nice ? -20 : 0;
  if (p != Priority::fifo && setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) != 0)
    return "cannot set nice " + std::to_string(nice) + " on thread " + std::to_string(tid) + ": " +
           std::strerror(errno);
  return {};
}

std::vector<unsigned> thread_cpus_allowed(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  std::vector<unsigned> out;
  while (std::getline(f, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
    std::string list = line.substr(line.find(':') + 1);
    size_t pos = 0;
    while (pos < list.size()) {
      const size_t end = list.find(',', pos);
      const std::string part = list.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      const size_t dash = part.find('-');
      const unsigned a = static_cast<unsigned>(std::stoul(part));
      const unsigned b = dash == std::string::npos ? a : static_cast<unsigned>(std::stoul(part.substr(dash + 1)));
      for (unsigned c = a; c <= b; ++c) out.push_back(c);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  return out;
}

}  // namespace exec
