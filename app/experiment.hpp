#pragma once
// `nvmetune experiment FILE.json`: every engine setting x workload x contention level of an
// experiment file (lab/experiment/), applied live to an engine, measured with the perf
// load generator, compared in one table and optionally kept as JSON.
#include <string>

namespace CLI {
class App;
}

namespace app {

struct ExperimentOptions {
  std::string file;
  std::string socket;  // --socket: a running engine instead of an embedded one
  std::string out;     // --out: the results as JSON
  unsigned rounds = 0;  // --rounds: overrides the file's "rounds"; 0 = not given
};

void add_experiment_options(CLI::App& cmd, ExperimentOptions& opts);

// Exit codes: 0 the experiment ran (failed cells are reported in the table and the JSON);
// 1 no cell could be measured (engine did not start, socket unreachable, every cell failed);
// 2 bad command line or experiment file.
int run_experiment(const ExperimentOptions& opts);

}  // namespace app
