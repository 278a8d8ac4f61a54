#pragma once
// `nvmetune perf`: an NVMe/TCP load generator on engine/initiator (spdk_nvme_perf's target
// string, fio's output fields). See run_perf() and `nvmetune perf --help`. The load itself is
// engine/initiator/load_generator (shared with `nvmetune experiment`).
#include <optional>
#include <string>

namespace CLI {
class App;
}
namespace initiator {
struct LoadSpec;
}

namespace app {

struct PerfOptions {
  std::string remote;          // -r 'trtype:tcp traddr:A trsvcid:P subnqn:NQN [hostnqn:NQN]'
  std::string rw = "randread"; // read | write | randread | randwrite | randrw
  unsigned rwmixread = 50;     // randrw: percentage of reads
  std::string bs = "4k";       // I/O size
  unsigned qd = 32;            // outstanding I/Os per queue
  unsigned queues = 1;         // I/O queues (one TCP connection each)
  unsigned threads = 1;        // poll threads; each drives queues/threads queues
  std::string cpus;            // CPU list to pin the threads to (round robin)
  double time_s = 0;           // measured seconds (0 and no --size: 10)
  std::string size;            // or: stop after this many bytes measured
  double ramp_s = 0;           // seconds run before measuring
  bool verify = false;         // crc32c per block written, checked on read-back
  std::string digest;          // hdr,data
  unsigned nsid = 1;
  bool json = false;
};

// Declares perf's options on cmd, bound to opts (which must outlive parsing).
void add_perf_options(CLI::App& cmd, PerfOptions& opts);

// Checks opts and fills spec from them (target, pattern, sizes, CPUs, digests); progress, stop
// and hooks are left to the caller. Returns the message of the first bad option.
std::optional<std::string> resolve_perf_options(const PerfOptions& opts, initiator::LoadSpec& spec);

// Runs the workload and prints the report. Exit codes: 0 ok; 1 connection/I/O error or a
// verify mismatch; 2 bad command line (including a malformed -r string).
int run_perf(const PerfOptions& opts);

}  // namespace app
