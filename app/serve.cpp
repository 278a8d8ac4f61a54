#include "app/serve.hpp"

#include <sys/time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>

#include "engine/system/topology.hpp"
#include "app/exit_code.hpp"
#include "app/serve_record.hpp"
#include "engine/backend/ram/ram_backend.hpp"
#include "engine/config/config_cpumask.hpp"
#include "engine/rpc/rpc_methods.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "data/profile/profile_methods.hpp"
#include "data/store/store.hpp"
#include "probes/engine_probes.hpp"

namespace app {

namespace {

constexpr timespec liveness_check_period{1, 0};  // how often serve() checks the engine still runs

// ---------------------------------------------------------------- configuration

std::optional<std::string> read_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "ADDR:PORT" → listener; the address and port themselves are checked by control::validate.
std::optional<control::ListenerConfig> parse_listen(const std::string& arg) {
  const auto colon = arg.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == arg.size()) return std::nullopt;
  return control::ListenerConfig{"tcp", arg.substr(0, colon), arg.substr(colon + 1)};
}

control::SubsystemConfig& first_subsystem(control::Config& cfg) {
  if (cfg.subsystems.empty()) {
    control::SubsystemConfig s;
    s.nqn = control::default_nqn;
    s.allow_any_host = true;
    cfg.subsystems.push_back(std::move(s));
  }
  return cfg.subsystems.front();
}

struct Overrides {
  std::vector<control::ConfigError> errors;  // options that could not be applied at all
  std::vector<std::string> listen_args;       // the --listen argument behind each listener
};

Overrides apply_overrides(const ServeOptions& opts, control::Config& cfg) {
  Overrides o;
  if (!opts.listen.empty()) {
    cfg.listeners.clear();
    for (const auto& arg : opts.listen) {
      if (auto l = parse_listen(arg)) {
        cfg.listeners.push_back(*l);
        o.listen_args.push_back(arg);
      } else {
        o.errors.push_back({"--listen " + arg, "expected ADDR:PORT, e.g. 127.0.0.1:4420 or 0.0.0.0:0"});
      }
    }
  }
  if (!opts.ram.empty()) {
    control::NamespaceConfig ns;
    ns.nsid = 1;
    ns.backend.kind = "ram";
    if (!control::parse_size(opts.ram, ns.backend.size_bytes))
      o.errors.push_back({"--ram", "malformed size \"" + opts.ram + "\" (e.g. 64MiB, 1G; 1024-based)"});
    first_subsystem(cfg).namespaces = {ns};
  }
  if (!opts.nqn.empty()) first_subsystem(cfg).nqn = opts.nqn;
  if (opts.threads) cfg.threading.threads = *opts.threads;
  return o;
}

bool within(const std::string& path, const std::string& prefix) {
  return path.compare(0, prefix.size(), prefix) == 0 &&
         (path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[');
}

// The option that set the value at path, or path itself when the value came from the file.
std::string option_for(const std::string& path, const ServeOptions& opts, const Overrides& o) {
  for (size_t i = 0; i < o.listen_args.size(); ++i) {
    if (within(path, "$.listeners[" + std::to_string(i) + "]")) return "--listen " + o.listen_args[i];
  }
  if (!opts.ram.empty() && within(path, "$.subsystems[0].namespaces[0]")) return "--ram";
  if (!opts.nqn.empty() && path == "$.subsystems[0].nqn") return "--nqn";
  if (opts.threads && path == "$.threading.threads") return "--threads";
  return path;
}

// Validates the merged configuration; errors about a value an option set are reported under
// that option's name, once.
void check_merged(const control::Config& cfg, const ServeOptions& opts, Overrides& o) {
  for (auto e : control::validate(cfg)) {
    e.path = option_for(e.path, opts, o);
    const bool seen = std::any_of(o.errors.begin(), o.errors.end(),
                                  [&](const control::ConfigError& x) { return x.path == e.path; });
    if (!seen) o.errors.push_back(std::move(e));
  }
}

// ---------------------------------------------------------------- start-up banner

std::string format_size(uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  while (u + 1 < std::size(units) && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

// What a RAM namespace's memory is made of: an operator comparing runs needs to know whether
// it had huge pages and whether it was faulted in at start.
std::string ram_memory_text(const backend::BackendSpec& b) {
  const std::string_view thp = backend::transparent_huge_pages();
  std::string text = thp == "always" || thp == "madvise"
                         ? ", transparent huge pages"
                         : ", 4k pages (transparent huge pages are " + std::string(thp) + " here)";
  return text + (b.populate ? ", populated" : ", faulted in as written");
}

void print_subsystem(const control::SubsystemConfig& s) {
  std::printf("nvmetune: subsystem %s (%s)\n", s.nqn.c_str(),
              s.allow_any_host ? "any host" : (std::to_string(s.hosts.size()) + " allowed host(s)").c_str());
  for (const auto& ns : s.namespaces) {
    const auto& b = ns.backend;
    std::string what = b.kind + (b.path.empty() ? "" : " " + b.path);
    std::string size = b.size_bytes ? format_size(b.size_bytes) : "file size";
    std::printf("  nsid %u: %s, %s, %u-byte blocks%s\n", ns.nsid, what.c_str(), size.c_str(), ns.block_size,
                b.kind == "ram" ? ram_memory_text(b).c_str() : "");
  }
}

// The threading the engine runs, as the executor reports its threads: with no cpumask the
// workers cover the CPUs this process may run on (taskset, cgroups), which is worth saying.
void print_threading(const engine::Engine& engine) {
  const auto t = engine.threading();
  std::vector<unsigned> cpus;
  unsigned workers = 0;
  for (const auto& th : engine.threads()) {
    if (th.role != "worker" && th.role != "poller") continue;
    ++workers;
    cpus.insert(cpus.end(), th.cpus.begin(), th.cpus.end());
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::printf("nvmetune: threading %s (%s), %u worker%s on CPU%s %s%s\n", t.mode.c_str(), t.io_mechanism.c_str(),
              workers, workers == 1 ? "" : "s", cpus.size() == 1 ? "" : "s",
              cpus.empty() ? "any" : sys::format_cpu_list(cpus).c_str(),
              t.cpus.empty() ? " (the CPUs this process may run on; threading.cpumask picks others)" : "");
}

void print_connect_lines(const engine::ListenerInfo& l, const control::Config& cfg) {
  // A wildcard listener is reachable locally on the loopback address; from elsewhere, use
  // this machine's address.
  const bool wildcard = l.traddr == "0.0.0.0";
  const std::string addr = wildcard ? "127.0.0.1" : l.traddr;
  std::printf("nvmetune: listening on %s %s:%u%s\n", l.trtype.c_str(), l.traddr.c_str(), l.port,
              wildcard ? " (all addresses; from another machine use this host's address)" : "");
  std::printf("  nvme discover -t %s -a %s -s %u\n", l.trtype.c_str(), addr.c_str(), l.port);
  for (const auto& s : cfg.subsystems) {
    std::string host;
    if (!s.allow_any_host && !s.hosts.empty()) host = " -q " + s.hosts.front();
    std::printf("  nvme connect -t %s -a %s -s %u -n %s%s%s\n", l.trtype.c_str(), addr.c_str(), l.port, s.nqn.c_str(),
                host.c_str(),
                !s.allow_any_host && s.hosts.empty() ? "   # refused: no host is allowed yet" : "");
  }
}

void print_control_socket(const control::RpcServer& rpc) {
  const bool is_default = rpc.path() == control::default_control_socket_path();
  std::printf("nvmetune: control socket %s\n", rpc.path().c_str());
  std::printf("  nvmetune ctl %s%sengine.info\n", is_default ? "" : "--socket ", is_default ? "" : (rpc.path() + " ").c_str());
}

void print_banner(const engine::Engine& engine, const control::RpcServer* rpc) {
  const auto cfg = engine.config();
  for (const auto& s : cfg.subsystems) print_subsystem(s);
  print_threading(engine);
  for (const auto& l : engine.listeners()) print_connect_lines(l, cfg);
  if (rpc) print_control_socket(*rpc);
  std::printf("nvmetune: ready\n");
  std::fflush(stdout);  // scripts wait for the ready line through a pipe
}

// Starts the control socket next to engine. nullptr when disabled or when the default path is
// taken (a warning); sets `fatal` when an explicitly given path could not be used.
std::unique_ptr<control::RpcServer> start_control_socket(engine::Engine& engine,
                                                         const std::shared_ptr<probes::EngineProbes>& engine_probes,
                                                         const std::string& profile_db, const ControlSocketOptions& opts,
                                                         bool& fatal, control::RpcMethodTable extra = {}) {
  fatal = false;
  if (!opts.enabled) return nullptr;
  control::RpcServerOptions ro;
  ro.path = opts.path.empty() ? control::default_control_socket_path() : opts.path;
  auto log = stderr_log_sink();
  ro.log = [log](std::string_view text) { log(engine::LogLevel::warning, text); };
  ro.concurrent = control::concurrent_engine_methods();
  auto methods = control::make_engine_methods(engine, {NVMETUNE_VERSION, ro.path, std::chrono::steady_clock::now()});
  data::add_profile_methods(methods, data::table_caller(methods), profile_db);
  probes::EngineProbes::add_methods(methods, engine_probes);
  methods.merge(extra);
  auto rpc = std::make_unique<control::RpcServer>(std::move(methods), ro);
  if (auto err = rpc->start(); !err.empty()) {
    fatal = !opts.path.empty();
    std::fprintf(stderr, "nvmetune: %s control socket: %s\n", fatal ? "cannot create the" : "warning: no", err.c_str());
    if (!fatal) std::fprintf(stderr, "  (pass --control-socket PATH for another one, or --no-control-socket)\n");
    return nullptr;
  }
  return rpc;
}

// Waits for a stop signal; returns it, or 0 if the engine stopped on its own.
int wait_for_stop(const engine::Engine& engine, const sigset_t& stop) {
  for (;;) {
    siginfo_t info;
    int sig = sigtimedwait(&stop, &info, &liveness_check_period);
    if (sig > 0) return sig;
    if (errno != EAGAIN && errno != EINTR) return 0;
    if (!engine.running()) return 0;
  }
}

}  // namespace

void add_serve_options(CLI::App& cmd, ServeOptions& opts) {
  cmd.add_option("-c,--config", opts.config_path,
                 "JSON configuration (format: docs/reference/config-file.md). Without it: the embedded\n"
                 "default, a 1 GiB RAM namespace in nqn.2026-12.io.nvmetune:default\n"
                 "on 127.0.0.1:4420, any host allowed.")
      ->type_name("FILE.json");
  cmd.add_option("-l,--listen", opts.listen,
                 "Listen on ADDR:PORT (IPv4; port 0 = any free port). Repeatable;\n"
                 "replaces the listeners of the configuration.")
      ->type_name("ADDR:PORT")
      ->allow_extra_args(false);
  cmd.add_option("--ram", opts.ram,
                 "The first subsystem serves one RAM namespace (nsid 1) of SIZE\n"
                 "instead of its configured namespaces. SIZE: bytes, or with K/M/G/T\n"
                 "or KiB/MiB/GiB/TiB (both 1024-based), e.g. 64MiB.")
      ->type_name("SIZE");
  cmd.add_option("--nqn", opts.nqn, "Rename the first subsystem (must start with \"nqn.\").")->type_name("NQN");
  cmd.add_option("--threads", opts.threads, "Worker threads of the unbound, poll and inline modes (0 = one per CPU this process may run on); bound runs one worker per CPU of its cpumask.")->type_name("N");
  auto* socket = cmd.add_option("--control-socket", opts.control.path,
                                "The control socket (JSON-RPC, mode 0600) for `nvmetune ctl`.\n"
                                "Default: " + control::default_control_socket_path() + ".")
                     ->type_name("PATH");
  cmd.add_flag_callback("--no-control-socket", [&opts] { opts.control.enabled = false; },
                        "Do not open a control socket.")
      ->excludes(socket);
  add_record_options(cmd, opts.record);
  cmd.footer(
      "Runs until SIGINT (Ctrl-C) or SIGTERM, then closes every connection and exits 0.\n"
      "Prints each listener with ready-to-paste nvme-cli lines and the control socket, then\n"
      "\"nvmetune: ready\" on stdout. Logs connects and disconnects on stderr.\n"
      "Exit codes: 0 clean stop; 1 could not start (port in use, missing file, a --control-socket\n"
      "that cannot be created, ...) or the engine\n"
      "stopped unexpectedly; 2 bad command line or invalid configuration (every error is printed\n"
      "as \"PATH: message\").\n"
      "Example: nvmetune serve --listen 0.0.0.0:4420 --ram 4GiB --nqn nqn.2026-12.io.example:lab");
}

control::ParseResult build_config(const ServeOptions& opts) {
  control::ParseResult result;
  if (opts.config_path.empty()) {
    result.config = control::default_config();
  } else {
    std::string error;
    auto text = read_file(opts.config_path, error);
    if (!text) return {{}, {{"--config", error}}};
    result = control::parse_config(*text);
    if (!result.errors.empty()) return result;  // overrides on a broken document help nobody
  }
  Overrides o = apply_overrides(opts, result.config);
  check_merged(result.config, opts, o);
  result.errors = std::move(o.errors);
  if (result.config.listeners.empty())
    result.errors.push_back({"$.listeners", "no listener: add one to the configuration or pass --listen ADDR:PORT"});
  return result;
}

int run_serve_command(const ServeOptions& opts) {
  auto parsed = build_config(opts);
  if (!parsed.errors.empty()) {
    print_errors(parsed.errors);
    return exit_usage;
  }
  return serve(parsed.config, opts.control, opts.record);
}

int serve(const control::Config& cfg, const ControlSocketOptions& control, const RecordOptions& record) {
  const sigset_t stop = block_stop_signals();
  std::signal(SIGPIPE, SIG_IGN);  // a host vanishing mid-send is an error value, not a kill

  engine::Engine engine(cfg);
  engine.set_log_sink(stderr_log_sink());
  if (auto errors = engine.start(); !errors.empty()) {
    std::fprintf(stderr, "nvmetune: the engine could not start:\n");
    print_errors(errors);
    return exit_failure;
  }
  if (record.sample_interval_ms) engine.set_sample_interval_ms(record.sample_interval_ms);
  std::unique_ptr<Recorder> recorder;
  if (!record.db_path.empty()) {
    std::string error;
    recorder = Recorder::start(engine, record, error);
    if (!recorder) {
      std::fprintf(stderr, "nvmetune: cannot record: %s\n", error.c_str());
      engine.stop();
      return exit_failure;
    }
  }
  // eBPF probes beside the engine: started over the control socket, read into each snapshot.
  auto engine_probes = probes::EngineProbes::install(engine);
  bool fatal = false;
  // profiles.save keeps the engine's state where `nvmetune profile save` on this host would.
  const std::string profile_db = record.db_path.empty() ? data::default_db_path() : record.db_path;
  auto rpc = start_control_socket(engine, engine_probes, profile_db, control, fatal,
                                  recorder ? recorder->methods() : control::RpcMethodTable{});
  if (fatal) {
    engine.stop();
    return exit_failure;
  }
  if (recorder) recorder->print_banner();
  print_banner(engine, rpc.get());

  const int sig = wait_for_stop(engine, stop);
  rpc.reset();  // no request may reach a stopping engine
  engine_probes.reset();  // the provider goes before the probes stop
  if (sig == 0) {
    std::fprintf(stderr, "nvmetune: the engine stopped unexpectedly\n");
    engine.stop();
    return exit_failure;
  }
  std::fprintf(stderr, "nvmetune: SIG%s received, stopping\n", sigabbrev_np(sig));
  engine.stop();
  const auto s = engine.stats();
  std::fprintf(stderr, "nvmetune: stopped after %llu commands, %llu connects, %llu protocol errors\n",
               static_cast<unsigned long long>(s.commands), static_cast<unsigned long long>(s.connects),
               static_cast<unsigned long long>(s.protocol_errors));
  return exit_ok;
}

sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

void print_errors(const std::vector<control::ConfigError>& errors) {
  for (const auto& e : errors) std::fprintf(stderr, "%s: %s\n", e.path.c_str(), e.message.c_str());
}

engine::LogSink stderr_log_sink() {
  return [](engine::LogLevel level, std::string_view text) {
    static constexpr const char* names[] = {"info", "warning", "error"};
    const auto now = std::chrono::system_clock::now();
    const std::time_t secs = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    localtime_r(&secs, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    // One fprintf per line: stdio's stream lock keeps lines from different threads whole.
    std::fprintf(stderr, "%s.%03lld %s: %.*s\n", stamp, static_cast<long long>(ms),
                 names[static_cast<int>(level)], static_cast<int>(text.size()), text.data());
  };
}

}  // namespace app
