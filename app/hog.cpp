#include "app/hog.hpp"

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "app/exit_code.hpp"
#include "engine/system/cpu_hog.hpp"
#include "engine/system/topology.hpp"

namespace app {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }

void print_stats(const sys::CpuHog& hog, const char* prefix) {
  for (const auto& s : hog.stats())
    std::printf("%scpu %u: %.1f%% busy (asked %u%%), %.3f s CPU in %.3f s, tid %d\n", prefix, s.cpu, s.duty_pct(),
                hog.spec().load_pct, static_cast<double>(s.cpu_ns) / 1e9, static_cast<double>(s.wall_ns) / 1e9, s.tid);
}

}  // namespace

void add_hog_options(CLI::App& cmd, HogOptions& o) {
  cmd.add_option("--cpus", o.cpus, "CPUs to load, one pinned thread each, e.g. 0 or 0-1,3.")
      ->required()
      ->type_name("LIST");
  cmd.add_option("--load", o.load_pct, "Percentage of each CPU to take, 0..100.")
      ->required()
      ->check(CLI::Range(0u, 100u))
      ->type_name("PCT");
  cmd.add_option("--time", o.time_s, "Stop after SEC seconds (default: until Ctrl-C / SIGTERM).")
      ->check(CLI::Range(0.0, 1e7))
      ->type_name("SEC");
  cmd.add_option("--period", o.period_ms, "Duty-cycle period in milliseconds, 1..10000 (10).")
      ->check(CLI::Range(1u, 10000u))
      ->type_name("MS");
  cmd.add_option("--nice", o.nice,
                 "The threads' nice value, -20..19 (0). Below 0 (root) the hog takes its share whatever else runs "
                 "on the CPU.")
      ->check(CLI::Range(-20, 19))
      ->type_name("N");
  cmd.add_flag("-q,--quiet", o.quiet, "No per-second lines; only the summary.");
  cmd.footer(
      "Reproduces the \"other workload\" of a contention experiment: one thread per CPU of --cpus,\n"
      "pinned to it, alternating busy spinning and sleeping. In each --period a thread spins until\n"
      "it has used PCT % of the period in CPU time (its own thread clock, so time it loses to\n"
      "preemption is not counted as busy) or the period ends, then sleeps to the period's end.\n"
      "Prints the threads once started, a line per second with each thread's measured duty cycle\n"
      "(thread CPU time / wall time, CLOCK_THREAD_CPUTIME_ID), and a summary at the end.\n"
      "Exit codes: 0 ok; 1 a thread could not be pinned; 2 bad command line.\n"
      "Example: nvmetune hog --cpus 0-1 --load 80 --time 30");
}

int run_hog(const HogOptions& o) {
  const sys::CpuList cpus = sys::parse_cpu_list(o.cpus);
  if (!cpus.error.empty() || cpus.cpus.empty()) {
    std::fprintf(stderr, "nvmetune hog: --cpus: malformed CPU list \"%s\"%s%s\n", o.cpus.c_str(),
                 cpus.error.empty() ? "" : ": ", cpus.error.c_str());
    return exit_usage;
  }
  sys::HogSpec spec{cpus.cpus, o.load_pct, o.period_ms * 1000, o.nice};
  if (auto err = sys::CpuHog::check(spec); !err.empty()) {
    std::fprintf(stderr, "nvmetune hog: %s\n", err.c_str());
    return exit_usage;
  }
  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  sys::CpuHog hog;
  if (auto err = hog.start(spec); !err.empty()) {
    std::fprintf(stderr, "nvmetune hog: %s\n", err.c_str());
    return exit_failure;
  }
  std::printf("nvmetune hog: %zu thread(s) on CPUs %s at %u%% (period %u ms)\n", spec.cpus.size(), o.cpus.c_str(),
              o.load_pct, o.period_ms);
  std::fflush(stdout);
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto next = start + std::chrono::seconds(1);
  const auto limit = o.time_s > 0 ? start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o.time_s))
                                  : clock::time_point::max();
  while (!g_stop.load() && clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!o.quiet && clock::now() >= next) {
      std::string line;
      char b[48];
      for (const auto& s : hog.stats()) {
        std::snprintf(b, sizeof b, "%scpu %u %.1f%%", line.empty() ? "" : "  ", s.cpu, s.duty_pct());
        line += b;
      }
      std::printf("[%4llds] %s\n", static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(next - start).count()),
                  line.c_str());
      std::fflush(stdout);
      next += std::chrono::seconds(1);
    }
  }
  print_stats(hog, "");
  hog.stop();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  std::fflush(stdout);
  return exit_ok;
}

}  // namespace app
