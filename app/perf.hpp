#pragma once
// `nvmetune perf`: an NVMe/TCP load generator on engine/initiator (spdk_nvme_perf's target
// string, fio's output fields). See run_perf() and `nvmetune perf --help`. The load itself is
// engine/initiator/load_generator (shared with `nvmetune experiment`).
#include <optional>
#include <string>

#include "lab/load/perf_options.hpp"

namespace CLI {
class App;
}

namespace app {

using lab::PerfOptions;
using lab::resolve_perf_options;

// Declares perf's options on cmd, bound to opts (which must outlive parsing).
void add_perf_options(CLI::App& cmd, PerfOptions& opts);

// Runs the workload and prints the report. Exit codes: 0 ok; 1 connection/I/O error or a
// verify mismatch; 2 bad command line (including a malformed -r string).
int run_perf(const PerfOptions& opts);

}  // namespace app
