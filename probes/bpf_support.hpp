#pragma once
// Whether this process may load BPF programs, and what to tell the operator when it may not.
// Without that permission the app says so and keeps working on the engine's own histograms
// (DESIGN.md).
#include <memory>
#include <string>
#include <string_view>

namespace probes {

struct BpfPermission {
  bool permitted = false;
  std::string reason;  // why not (or what was checked), one line, for the operator
};

// Loads the smallest valid program (a socket filter "r0 = 0; exit") with the raw bpf(2)
// syscall and closes it again. A socket filter is the least privileged program type, so
// `permitted` is necessary but not sufficient for tracing programs, which additionally need
// CAP_PERFMON (or CAP_SYS_ADMIN); callers loading those still report their own failure.
BpfPermission check_bpf_permission();

// What a tracing probe needs and this process lacks, "" when nothing is evidently missing:
// kernel BTF (/sys/kernel/btf/vmlinux), root or CAP_BPF+CAP_PERFMON, bpf(2) itself.
std::string missing_for_tracing();

// One line for a failed libbpf step (`what`: "runqlat: load"), err a negative or positive
// errno. Permission errors name what is missing (libbpf's own RLIMIT_MEMLOCK hint is wrong on
// current kernels); others end with libbpf's last warning, which says which program or map.
std::string bpf_error(std::string_view what, int err);

// true when err (negative or positive errno) means "not allowed", as opposed to "broken".
bool is_permission_error(int err);

// Routes libbpf's messages into the buffer bpf_error() quotes (and to stderr when the
// environment sets NVMETUNE_BPF_VERBOSE=1). Idempotent; called by every loader.
void install_libbpf_log();

// A bpftool skeleton owned by a unique_ptr that calls NAME_bpf__destroy().
template <class Skel>
using SkeletonPtr = std::unique_ptr<Skel, void (*)(Skel*)>;

}  // namespace probes
