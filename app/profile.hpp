#pragma once
// `nvmetune profile`: tuning profiles (data/profile/) saved in the store, exported, imported
// (also from nvmetcli and SPDK), diffed and applied to a running engine over its control socket.
namespace CLI {
class App;
}

#include <functional>

namespace app {

// Declares `profile` and its subcommands on cmd; returns what to run once parsed (an exit code).
std::function<int()> attach_profile(CLI::App& cmd);

}  // namespace app
