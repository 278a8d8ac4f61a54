#pragma once
// `nvmetune ctl`: the control socket's client (docs/reference/control-socket.md).
#include <string>

namespace CLI {
class App;
}

namespace app {

struct CtlOptions {
  std::string socket;       // empty: control::default_control_socket_path()
  std::string method;       // a method name, or an alias (stats, threading, ...)
  std::string params;       // JSON text; empty = no params
  bool watch = false;       // stats --watch: a line per sampler interval
  unsigned interval_ms = 1000;
  unsigned count = 0;       // --watch: stop after this many lines (0 = until Ctrl-C)
  std::string hist;         // --watch: also a log2 histogram of queue_wait | read | write | ...
  std::string unit = "usecs";
};

// Declares ctl's arguments on cmd, bound to opts (which must outlive parsing).
void add_ctl_options(CLI::App& cmd, CtlOptions& opts);

// Sends one request and prints the result (exit 0), or prints the error on stderr (exit 1);
// exit 2 for a bad command line. With --watch, polls stats.get until Ctrl-C or --count.
int run_ctl(const CtlOptions& opts);

}  // namespace app
