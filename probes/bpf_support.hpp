#pragma once
// Whether this process may load BPF programs. Without that permission the app says so and
// keeps working on the engine's own histograms (DESIGN.md).
#include <string>

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

}  // namespace probes
