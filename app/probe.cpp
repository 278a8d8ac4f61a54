// `nvmetune probe`: list/start/stop probes of a running engine over its control socket, or run
// one probe standalone and print what it saw each interval the way bcc's tools do.
#include "app/probe.hpp"

#include <CLI/CLI.hpp>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "app/exit_code.hpp"
#include "engine/rpc/rpc_client.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "engine/stats/print.hpp"
#include "probes/bpf_support.hpp"
#include "probes/probe_catalog.hpp"

namespace app {

namespace {

using json = nlohmann::json;

struct ProbeCliOptions {
  std::vector<std::string> args;  // list | start NAME | stop NAME | NAME [INTERVAL [COUNT]]
  std::string socket;
  std::string filter;
  int pid = 0;
  bool per_key = false;
  std::string unit = "usecs";
  bool timestamp = false;
};

// One request over the control socket; prints the error and returns nullopt on failure.
std::optional<json> call(const std::string& socket, const std::string& method, json params) {
  const std::string path = socket.empty() ? control::default_control_socket_path() : socket;
  control::RpcClient conn;
  if (auto err = conn.open(path); !err.empty()) {
    std::fprintf(stderr, "nvmetune probe: %s\n", err.c_str());
    return std::nullopt;
  }
  std::string error;
  auto response = conn.call({{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", std::move(params)}}, error);
  if (!response) {
    std::fprintf(stderr, "nvmetune probe: %s\n", error.c_str());
    return std::nullopt;
  }
  if (response->contains("error")) {
    const json& e = (*response)["error"];
    std::fprintf(stderr, "nvmetune probe: %s\n", e.value("message", std::string("error")).c_str());
    return std::nullopt;
  }
  return (*response)["result"];
}

int run_list(const ProbeCliOptions& o) {
  auto result = call(o.socket, "probes.list", json::object());
  if (!result) return exit_failure;
  std::printf("%-8s %-9s %-7s %s\n", "PROBE", "AVAILABLE", "RUNNING", "MEASURES");
  for (const auto& p : (*result)["probes"]) {
    const bool available = p.value("available", false);
    std::printf("%-8s %-9s %-7s %s\n", p.value("name", std::string()).c_str(), available ? "yes" : "no",
                p.value("running", false) ? "yes" : "no", p.value("summary", std::string()).c_str());
    if (!available) std::printf("%27s unavailable: %s\n", "", p.value("reason", std::string()).c_str());
    else if (const std::string f = p.value("filter", std::string()); !f.empty()) std::printf("%27s filter: %s\n", "", f.c_str());
  }
  return exit_ok;
}

int run_start_stop(const ProbeCliOptions& o, bool start) {
  if (o.args.size() != 2) {
    std::fprintf(stderr, "nvmetune probe: usage: nvmetune probe %s NAME%s\n", start ? "start" : "stop",
                 start ? " [--filter TEXT]" : "");
    return exit_usage;
  }
  json params = {{"name", o.args[1]}};
  if (start && !o.filter.empty()) params["filter"] = o.filter;
  auto result = call(o.socket, start ? "probes.start" : "probes.stop", params);
  if (!result) return exit_failure;
  std::printf("%s %s\n", o.args[1].c_str(), start ? "started" : "stopped");
  return exit_ok;
}

std::string clock_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

void print_interval(const probes::ProbeData& d, stats::Unit unit, bool timestamp) {
  if (timestamp) std::printf("%s\n", clock_now().c_str());
  for (const auto& h : d.histograms) {
    std::printf("\n%s %s (count %llu, mean %s, p99 %s):\n", h.source.c_str(), h.labels.empty() ? "all" : h.labels.c_str(),
                static_cast<unsigned long long>(h.hist.count), stats::format_duration(h.hist.mean()).c_str(),
                stats::format_duration(h.hist.percentile(99)).c_str());
    const std::string text = stats::log2_hist(h.hist, unit);
    std::printf("%s", text.empty() ? "     (no samples)\n" : text.c_str());
  }
  if (!d.counters.empty()) std::printf("\n%-16s %-44s %s\n", "COUNTER", "LABELS", "VALUE");
  for (const auto& c : d.counters)
    std::printf("%-16s %-44s %llu\n", c.name.c_str(), c.labels.empty() ? "-" : c.labels.c_str(),
                static_cast<unsigned long long>(c.value));
  std::fflush(stdout);
}

// Parses "[INTERVAL [COUNT]]" after the probe's name, bcc-style (seconds; 0 count = forever).
bool parse_timing(const std::vector<std::string>& args, double& interval_s, unsigned long& count) {
  interval_s = 1e9;  // no interval: one histogram at Ctrl-C, as bcc's runqlat
  count = 0;
  try {
    if (args.size() > 1) interval_s = std::stod(args[1]);
    if (args.size() > 2) count = std::stoul(args[2]);
  } catch (const std::exception&) {
    return false;
  }
  return args.size() <= 3 && interval_s > 0;
}

int run_standalone(const ProbeCliOptions& o) {
  const probes::ProbeKind* kind = probes::find_probe_kind(o.args[0]);
  std::optional<stats::Unit> unit = stats::parse_unit(o.unit);
  double interval_s = 0;
  unsigned long count = 0;
  if (kind == nullptr || !unit || !parse_timing(o.args, interval_s, count) || (!o.filter.empty() && !kind->filter_help)) {
    if (kind == nullptr) std::fprintf(stderr, "nvmetune probe: unknown probe \"%s\" (probes: %s)\n", o.args[0].c_str(), probes::probe_names().c_str());
    else if (!unit) std::fprintf(stderr, "nvmetune probe: --unit is nsecs, usecs or msecs (got %s)\n", o.unit.c_str());
    else if (!o.filter.empty() && !kind->filter_help) std::fprintf(stderr, "nvmetune probe: %s takes no --filter\n", kind->name);
    else std::fprintf(stderr, "nvmetune probe: usage: nvmetune probe %s [INTERVAL [COUNT]] (INTERVAL > 0 seconds)\n", kind->name);
    return exit_usage;
  }
  if (std::string missing = probes::missing_for_tracing(); !missing.empty()) {
    std::fprintf(stderr, "nvmetune probe: %s: %s\n", kind->name, missing.c_str());
    return exit_probe_unavailable;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  probes::ProbeOptions po{o.pid, o.filter, o.per_key, {}};
  std::string error;
  auto probe = kind->load(po, error);
  if (!probe) {
    std::fprintf(stderr, "nvmetune probe: %s\n", error.c_str());
    return probes::check_bpf_permission().permitted ? exit_failure : exit_probe_unavailable;
  }
  std::printf("Tracing %s (%s)... Hit Ctrl-C to end.\n", kind->name, kind->summary);
  std::fflush(stdout);
  for (unsigned long n = 0; count == 0 || n < count; ++n) {
    timespec wait{static_cast<time_t>(interval_s), static_cast<long>((interval_s - static_cast<time_t>(interval_s)) * 1e9)};
    const bool interrupted = sigtimedwait(&stop, nullptr, &wait) > 0;
    print_interval(probe->collect(), *unit, o.timestamp);
    if (interrupted) break;
  }
  return exit_ok;
}

int run_probe(const ProbeCliOptions& o) {
  if (o.args.empty()) {
    std::fprintf(stderr, "nvmetune probe: give list, start NAME, stop NAME, or a probe name (see --help)\n");
    return exit_usage;
  }
  if (o.args[0] == "list") return o.args.size() == 1 ? run_list(o) : exit_usage;
  if (o.args[0] == "start") return run_start_stop(o, true);
  if (o.args[0] == "stop") return run_start_stop(o, false);
  return run_standalone(o);
}

std::string probes_help() {
  std::string out;
  for (const auto& k : probes::probe_kinds()) {
    out += "  " + std::string(k.name) + std::string(10 - std::min<size_t>(9, std::string(k.name).size()), ' ') + k.summary + "\n";
    if (k.filter_help) out += std::string(12, ' ') + "--filter: " + k.filter_help + "\n";
  }
  return out;
}

}  // namespace

std::function<int()> attach_probe(CLI::App& cmd) {
  auto o = std::make_shared<ProbeCliOptions>();
  cmd.add_option("args", o->args, "list | start NAME | stop NAME | NAME [INTERVAL [COUNT]]");
  cmd.add_option("--socket", o->socket, "list/start/stop: the engine's control socket (default: " +
                                            control::default_control_socket_path() + ").");
  cmd.add_option("--filter", o->filter, "Only what the probe's filter selects (wqlat: a workqueue; biolat: a disk).");
  cmd.add_option("-p,--pid", o->pid, "Standalone runqlat/socklat/usdtlat: only this process; wqlat: work it queued (default: all).");
  cmd.add_flag("-P,--per-key", o->per_key, "Standalone: a histogram per thread/workqueue/disk besides the total.");
  cmd.add_option("--unit", o->unit, "Histogram rows in nsecs, usecs (default) or msecs.");
  cmd.add_flag("-T,--timestamp", o->timestamp, "Print the time before each interval.");
  cmd.footer(
      "Probes (eBPF, tracepoints only):\n" + probes_help() +
      "\nStandalone, `nvmetune probe NAME` prints a bcc-style log2 histogram every INTERVAL seconds,\n"
      "COUNT times (default: once, at Ctrl-C). list/start/stop act on a running `nvmetune serve`,\n"
      "whose snapshots (and --db store) then carry the probe's histograms.\n"
      "Exit codes: 0 ok; 1 failed (no engine at the socket, the kernel refused a program);\n"
      "2 bad command line; 3 eBPF unavailable here (not root and no CAP_BPF+CAP_PERFMON,\n"
      "BPF disabled, no kernel BTF): the message names what is missing.");
  return [o] { return run_probe(*o); };
}

}  // namespace app
