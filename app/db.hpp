#pragma once
// `nvmetune db`: read and maintain the SQLite store (runs, series, events, percentiles,
// compare, export, vacuum). docs/guide/compare-runs.md.
#include <functional>

namespace CLI {
class App;
}

namespace app {

// Declares `db` and its subcommands on cmd; returns what to run (an exit code).
std::function<int()> attach_db(CLI::App& cmd);

}  // namespace app
