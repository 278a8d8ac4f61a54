#pragma once
// A workload as `nvmetune perf` and experiment files describe it (spdk_nvme_perf's target
// string, fio's names), and its resolution into engine/initiator's LoadSpec. Shared by the
// CLI's perf and experiment and by any front end that starts a load.
#include <optional>
#include <string>

#include "engine/initiator/host_identity.hpp"

namespace initiator {
struct LoadSpec;
}

namespace lab {

struct PerfOptions {
  std::string remote;          // -r 'trtype:tcp|rdma traddr:A trsvcid:P subnqn:NQN [hostnqn:NQN]'
  std::string rw = "randread"; // read | write | randread | randwrite | randrw
  unsigned rwmixread = 50;     // randrw: percentage of reads
  std::string bs = "4k";       // I/O size
  unsigned qd = 32;            // outstanding I/Os per queue
  unsigned queues = 1;         // I/O queues (one TCP connection or RDMA queue pair each)
  unsigned threads = 1;        // poll threads; each drives queues/threads queues
  std::string cpus;            // CPU list to pin the threads to (round robin)
  double time_s = 0;           // measured seconds (0 and no --size: 10)
  std::string size;            // or: stop after this many bytes measured
  double ramp_s = 0;           // seconds run before measuring
  bool verify = false;         // crc32c per block written, checked on read-back
  std::string digest;          // hdr,data
  unsigned nsid = 1;
  bool json = false;
  // Who to connect as: --hostnqn, else -r's hostnqn:, else this machine's host NQN found as
  // nvme-cli finds it (engine/initiator/host_identity.hpp) in these files.
  std::string hostnqn;
  initiator::HostIdentityPaths identity;
};

// Checks opts and fills spec from them (target, pattern, sizes, CPUs, digests); progress, stop
// and hooks are left to the caller. Returns the message of the first bad option, named as the
// command line names it ("--bs: ...").
// host_source, when given, is told where the host NQN came from ("--hostnqn", "/etc/nvme/hostnqn", ...).
std::optional<std::string> resolve_perf_options(const PerfOptions& opts, initiator::LoadSpec& spec,
                                                std::string* host_source = nullptr);

}  // namespace lab
