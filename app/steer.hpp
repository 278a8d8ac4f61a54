#pragma once
// `nvmetune steer show|plan|apply|revert`: IRQ affinity, RPS/XPS/RFS and busy-poll sysctls of
// a running engine, through its control socket (steering.*), or the state file left by a
// crashed engine. docs/guide/steer.md.
#include <functional>

namespace CLI {
class App;
}

namespace app {

// Declares `steer` and its subcommands on cmd; returns what to run (an exit code).
std::function<int()> attach_steer(CLI::App& cmd);

}  // namespace app
