// `nvmetune ctl [--socket PATH] METHOD [JSON-PARAMS]`: one JSON-RPC request over the control
// socket, the result pretty-printed; and `ctl stats --watch`, a line per sampler interval.
#include "app/ctl.hpp"


#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/exit_code.hpp"
#include "engine/rpc/rpc_client.hpp"
#include "engine/rpc/json_codec.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "engine/stats/latency_sources.hpp"
#include "engine/stats/print.hpp"

namespace app {

namespace {

using json = nlohmann::json;

constexpr unsigned interval_min_ms = 50;

// Friendly names: a room alone reads it.
const std::map<std::string, std::string, std::less<>> aliases = {
    {"info", "engine.info"},         {"threading", "threading.get"}, {"budgets", "budgets.get"},
    {"subsystems", "subsystems.list"}, {"stats", "stats.get"},      {"events", "events.get"},
    {"threads", "threads.get"},
};

// The histograms --hist can print: every key of stats.get's "total" (stats::latency_sources),
// and short names for the target latency and its stages.
const std::map<std::string, std::string, std::less<>> hist_aliases = {
    {"read", "target_read_latency"}, {"write", "target_write_latency"}, {"other", "target_other_latency"},
    {"scheduling", "stage_scheduling"}, {"queue", "stage_queue"},     {"receive", "stage_receive"},
    {"data_wait", "stage_data_wait"},   {"backend", "backend_latency"}, {"send", "stage_send"},
};

std::string hist_field(const std::string& name) {
  auto it = hist_aliases.find(name);
  return it == hist_aliases.end() ? name : it->second;
}

std::vector<std::string> hist_names() {
  std::vector<std::string> names;
  for (const auto& [alias, key] : hist_aliases) names.push_back(alias);
  for (const auto& src : stats::latency_sources) names.emplace_back(src.key);
  return names;
}

std::string resolve(const std::string& method) {
  auto it = aliases.find(method);
  return it == aliases.end() ? method : it->second;
}

// ---------------------------------------------------------------- one request

void print_error(const std::string& method, const json& error) {
  std::fprintf(stderr, "nvmetune ctl: %s: error %lld: %s\n", method.c_str(),
               static_cast<long long>(error.value("code", 0)), error.value("message", std::string("?")).c_str());
  auto data = error.find("data");
  if (data == error.end()) return;
  if (data->is_array()) {
    for (const auto& e : *data) {
      if (e.is_object() && e.contains("path"))
        std::fprintf(stderr, "  %s: %s\n", e.value("path", std::string()).c_str(), e.value("message", std::string()).c_str());
      else
        std::fprintf(stderr, "  %s\n", e.dump().c_str());
    }
  } else if (data->is_object() && data->contains("available")) {
    std::string names;
    for (const auto& n : (*data)["available"]) names += (names.empty() ? "" : ", ") + n.get<std::string>();
    std::fprintf(stderr, "  methods: %s\n", names.c_str());
  } else {
    std::fprintf(stderr, "  %s\n", data->dump().c_str());
  }
}

// The result of method, or nullopt after printing why there is none.
std::optional<json> request(control::RpcClient& conn, const std::string& method, const json& params, int id) {
  json req = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) req["params"] = params;
  std::string error;
  auto response = conn.call(req, error);
  if (!response) {
    std::fprintf(stderr, "nvmetune ctl: %s: %s\n", method.c_str(), error.c_str());
    return std::nullopt;
  }
  if (auto e = response->find("error"); e != response->end()) {
    print_error(method, *e);
    return std::nullopt;
  }
  if (!response->contains("result")) {
    std::fprintf(stderr, "nvmetune ctl: %s: malformed response: %s\n", method.c_str(), response->dump().c_str());
    return std::nullopt;
  }
  return (*response)["result"];
}

// ---------------------------------------------------------------- stats --watch

std::string latency(const json& hist) {
  if (hist.value("count", uint64_t{0}) == 0) return "-";
  return stats::format_duration(static_cast<double>(hist.value("p99_ns", uint64_t{0})));
}

// "0.4/1.2/2.0/0.1/3.5us": each stage's mean share of the target latency (stats.get's
// stage_breakdown; scheduling, queue, receive, backend, send: data wait is the host's time).
std::string stage_shares(const json& total) {
  const auto it = total.find("stage_breakdown");
  if (it == total.end() || it->value("commands", uint64_t{0}) == 0) return "-";
  std::string out;
  for (const auto& f : (*it)["stages"]) {
    if (f.value("stage", std::string()) == "stage_data_wait") continue;
    char cell[24];
    std::snprintf(cell, sizeof cell, "%s%.1f", out.empty() ? "" : "/", f.value("share_ns", 0.0) / 1e3);
    out += cell;
  }
  return out + "us";
}

std::string clock_time(int64_t time_ns) {
  const std::time_t secs = static_cast<std::time_t>(time_ns / 1'000'000'000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

void print_watch_header() {
  // RD/WR p99: the target latency (kernel arrival -> response handed to the socket). The stage
  // columns are each stage's mean share of it (its time summed over every command / commands):
  // they add up to the mean target latency, so the largest says where the time goes.
  std::printf("%-8s %-8s %9s %9s %9s %9s %9s  %-31s  %s\n", "TIME", "MODE", "IOPS", "RD_MiB/s", "WR_MiB/s", "RD_p99",
              "WR_p99", "mean: sched/queue/recv/back/send", "CPU% per worker (of it spinning idle)");
}

void print_watch_line(const json& snap) {
  const json& total = snap["total"];
  std::string busy;
  for (const auto& w : snap["workers"]) {
    char cell[48];
    int n = std::snprintf(cell, sizeof cell, "%sw%u:%.0f", busy.empty() ? "" : " ", w.value("index", 0u),
                          w.value("busy_pct", 0.0));
    // A polling worker's CPU is mostly its spin when the load is light: without the split, poll
    // mode reads as a saturated worker.
    if (w.value("idle_poll_ns", uint64_t{0}) > 0 && n > 0)
      std::snprintf(cell + n, sizeof cell - static_cast<size_t>(n), "(%.0f)", w.value("idle_poll_pct", 0.0));
    busy += cell;
  }
  std::printf("%-8s %-8s %9llu %9.2f %9.2f %9s %9s  %-31s  %s\n", clock_time(snap.value("time_ns", int64_t{0})).c_str(),
              snap.value("mode", std::string("-")).c_str(), static_cast<unsigned long long>(snap.value("iops", uint64_t{0})),
              snap.value("read_mib_s", 0.0), snap.value("write_mib_s", 0.0), latency(total["target_read_latency"]).c_str(),
              latency(total["target_write_latency"]).c_str(), stage_shares(total).c_str(), busy.empty() ? "-" : busy.c_str());
}

void print_watch_hist(const json& snap, const std::string& name, stats::Unit unit) {
  const auto h = control::histogram_from_json(snap["total"][hist_field(name)]);
  std::printf("\n%s, all queues, %.1f s to %s:\n", name.c_str(),
              static_cast<double>(snap.value("interval_ns", uint64_t{0})) / 1e9,
              clock_time(snap.value("time_ns", int64_t{0})).c_str());
  const std::string text = stats::log2_hist(h, unit);
  std::printf("%s\n", text.empty() ? "     (no samples)" : text.c_str());
}

int watch(control::RpcClient& conn, const CtlOptions& opts) {
  std::optional<stats::Unit> unit = stats::parse_unit(opts.unit);
  const json params = {{"histograms", !opts.hist.empty()}};
  print_watch_header();
  std::fflush(stdout);
  uint64_t last_seq = 0;
  unsigned lines = 0;
  for (int id = 1;; ++id) {
    auto snap = request(conn, "stats.get", params, id);
    if (!snap) return exit_failure;
    const uint64_t seq = snap->value("seq", uint64_t{0});
    if (seq != 0 && seq != last_seq) {  // seq 0: no interval closed yet
      last_seq = seq;
      print_watch_line(*snap);
      if (!opts.hist.empty()) print_watch_hist(*snap, opts.hist, *unit);
      std::fflush(stdout);
      if (opts.count && ++lines >= opts.count) return exit_ok;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(opts.interval_ms));
  }
}

// Command-line checks CLI11 cannot express; prints the problem.
bool usable(const CtlOptions& opts, const std::string& method) {
  const bool watching = opts.watch || opts.count || !opts.hist.empty();
  if (watching && method != "stats.get") {
    std::fprintf(stderr, "nvmetune ctl: --watch, --count and --hist go with `stats` only (got %s)\n", opts.method.c_str());
    return false;
  }
  if ((opts.count || !opts.hist.empty()) && !opts.watch) {
    std::fprintf(stderr, "nvmetune ctl: --count and --hist need --watch\n");
    return false;
  }
  if (opts.watch && !opts.params.empty()) {
    std::fprintf(stderr, "nvmetune ctl: stats --watch takes no JSON params\n");
    return false;
  }
  return true;
}

}  // namespace

void add_ctl_options(CLI::App& cmd, CtlOptions& opts) {
  cmd.add_option("--socket", opts.socket,
                 "The control socket of the engine (`nvmetune serve --control-socket`).\n"
                 "Default: " + control::default_control_socket_path() + ".")
      ->type_name("PATH");
  cmd.add_option("method", opts.method, "A method (engine.info, threading.set, ...) or an alias.")
      ->required()
      ->type_name("METHOD");
  cmd.add_option("params", opts.params, "The params as one JSON object, e.g. '{\"mode\":\"poll\"}'.")
      ->type_name("JSON-PARAMS");
  cmd.add_flag("--watch", opts.watch, "stats: print one line per sampler interval until Ctrl-C.");
  cmd.add_option("--interval", opts.interval_ms, "--watch: poll every MS milliseconds (1000).")
      ->type_name("MS")
      ->check(CLI::Range(interval_min_ms, 3'600'000u));
  cmd.add_option("--count", opts.count, "--watch: stop after N lines.")->type_name("N");
  cmd.add_option("--hist", opts.hist,
                 "--watch: also print a log2 histogram (all queues, the interval's samples) of the\n"
                 "target latency (read, write, other: kernel arrival stamp -> response handed to the\n"
                 "socket), a stage of it (scheduling, queue, receive, data_wait, backend, send), or\n"
                 "any histogram key of stats.get (queue_wait, read_latency, ...).")
      ->type_name("NAME")
      ->check(CLI::IsMember(hist_names()));
  cmd.add_option("--unit", opts.unit, "--hist: nsecs, usecs or msecs (usecs).")
      ->type_name("UNIT")
      ->check(CLI::IsMember({"nsecs", "usecs", "msecs", "ns", "us", "ms"}));
  cmd.footer(
      "Sends one JSON-RPC 2.0 request over the engine's control socket and prints the result as\n"
      "JSON (exit 0), or prints the error code, message and every bad field on stderr (exit 1).\n"
      "Exit 2: bad command line or JSON-PARAMS that is not JSON.\n"
      "Methods: engine.info, threading.get/set, budgets.get/set, tcp.get, rdma.get,\n"
      "settings.schema, subsystems.list/add, namespaces.add/remove, stats.get, events.get/add,\n"
      "threads.get, topology.get, steering.get/plan/apply/revert, probes.list/start/stop,\n"
      "store.runs/history/health, profiles.save (docs/reference/control-socket.md).\n"
      "Aliases: info, threading, budgets, subsystems, stats, events, threads.\n"
      "Examples:\n"
      "  nvmetune ctl threading.set '{\"mode\": \"poll\", \"threads\": 1, \"first_core\": 1}'\n"
      "  nvmetune ctl budgets.set '{\"recv_pdus\": 16}'\n"
      "  nvmetune ctl stats --watch --hist queue_wait");
}

int run_ctl(const CtlOptions& opts) {
  const std::string method = resolve(opts.method);
  if (!usable(opts, method)) return exit_usage;
  json params = nullptr;
  if (!opts.params.empty()) {
    params = json::parse(opts.params, nullptr, false);
    if (params.is_discarded() || !(params.is_object() || params.is_array())) {
      std::fprintf(stderr, "nvmetune ctl: JSON-PARAMS must be a JSON object, e.g. '{\"mode\": \"poll\"}' (got %s)\n",
                   opts.params.c_str());
      return exit_usage;
    }
  }
  const std::string path = opts.socket.empty() ? control::default_control_socket_path() : opts.socket;
  control::RpcClient conn;
  if (auto err = conn.open(path); !err.empty()) {
    std::fprintf(stderr, "nvmetune ctl: %s\n", err.c_str());
    return exit_failure;
  }
  if (opts.watch) return watch(conn, opts);
  auto result = request(conn, method, params, 1);
  if (!result) return exit_failure;
  std::printf("%s\n", result->dump(2).c_str());
  return exit_ok;
}

}  // namespace app
