#pragma once
// `nvmetune hog`: the CPU-contention generator (engine/system/cpu_hog) on the command line.
#include <string>

namespace CLI {
class App;
}

namespace app {

struct HogOptions {
  std::string cpus;          // CPU list, e.g. "0-1"
  unsigned load_pct = 50;    // per CPU
  double time_s = 0;         // 0 = until SIGINT/SIGTERM
  unsigned period_ms = 10;   // duty-cycle period
  int nice = 0;              // the threads' nice value
  bool quiet = false;        // no per-second lines
};

void add_hog_options(CLI::App& cmd, HogOptions& opts);

// Runs the hog and prints each thread's measured duty cycle at the end. Exit codes: 0 ok;
// 1 the threads could not start (a CPU cannot be pinned); 2 bad command line.
int run_hog(const HogOptions& opts);

}  // namespace app
