#pragma once
// `nvmetune probe`: the eBPF probes (probes/) on the command line. docs/guide/probes.md.
//   nvmetune probe list|start|stop ...       against a running serve's control socket
//   nvmetune probe NAME [INTERVAL [COUNT]]   standalone, bcc-style log2 histograms
#include <functional>

namespace CLI {
class App;
}

namespace app {

// Exit code of `probe NAME` when this machine or process cannot run eBPF probes (not root and
// no CAP_BPF+CAP_PERFMON, BPF disabled, no kernel BTF).
inline constexpr int exit_probe_unavailable = 3;

// Declares `probe` on cmd; returns what to run (an exit code).
std::function<int()> attach_probe(CLI::App& cmd);

}  // namespace app
