#pragma once
// `nvmetune serve`: the headless engine. Also the building blocks the other entry points share
// (configuration from file + overrides, error printing, stderr logging, stop signals).
#include <signal.h>

#include <optional>
#include <string>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"

namespace CLI {
class App;
}

namespace app {

// The control socket `serve` runs next to the engine (JSON-RPC, docs/reference/control-socket.md).
struct ControlSocketOptions {
  bool enabled = true;  // --no-control-socket turns it off
  std::string path;     // --control-socket PATH; empty = control::default_control_socket_path()
};

// Recording into the SQLite store (docs/guide/compare-runs.md). Opt-in: nothing is written unless
// --db or --record is given, so a plain `serve` leaves no file behind.
struct RecordOptions {
  std::string db_path;            // --db PATH, or data::default_db_path() with --record; empty = off
  unsigned sample_interval_ms = 0;  // --sample-interval MS; 0 = the engine's default (1000)
  std::string note;               // --note TEXT on the run row
};

struct ServeOptions {
  std::string config_path;          // empty: the embedded default (control::default_config())
  std::vector<std::string> listen;  // ADDR:PORT; when given, replaces the configured listeners
  std::string ram;                  // SIZE: the first subsystem serves one RAM namespace of SIZE
  std::string nqn;                  // renames the first subsystem
  std::optional<unsigned> threads;  // threading.threads
  ControlSocketOptions control;
  RecordOptions record;
};

// Declares serve's options on cmd, bound to opts (which must outlive parsing).
void add_serve_options(CLI::App& cmd, ServeOptions& opts);

// The configuration opts describe: the file or the embedded default, then the command-line
// overrides, validated as a whole. Errors caused by an option carry the option as their path.
control::ParseResult build_config(const ServeOptions& opts);

// `nvmetune serve`: build_config, then serve(). Returns an exit code (exit_code.hpp).
int run_serve_command(const ServeOptions& opts);

// Runs the engine on cfg, and the control socket unless disabled, until SIGINT or SIGTERM;
// prints the listeners, nvme-cli lines, the control socket and "nvmetune: ready" on stdout.
// A control socket that cannot be created is fatal when its path was given, a warning when it
// is the default (another engine may hold it). Returns an exit code.
// With record.db_path set, each interval and event is stored as one run (an unusable database
// is fatal: exit 1 before the ready line).
int serve(const control::Config& cfg, const ControlSocketOptions& control = {}, const RecordOptions& record = {});

// Blocks SIGINT and SIGTERM in the calling thread (call before the engine starts threads, so
// they inherit the mask and the signals reach sigwait/signalfd). Returns the blocked set.
sigset_t block_stop_signals();

// "PATH: message" lines on stderr.
void print_errors(const std::vector<control::ConfigError>& errors);

// A LogSink writing "2026-12-02T11:28:00.123 info: text" lines to stderr.
engine::LogSink stderr_log_sink();

}  // namespace app
