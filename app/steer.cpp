// `nvmetune steer`: argument parsing and printing; the work is the engine's (steering.* methods)
// or, for revert after a crash, engine/system/steering_txn.
#include "app/steer.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/exit_code.hpp"
#include "engine/rpc/rpc_client.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "engine/system/steering_txn.hpp"

namespace app {

namespace {

using json = nlohmann::json;

struct SteerOptions {
  std::string socket;
  bool all = false, json_out = false;
  unsigned rate_ms = 500;
  std::string request_json, request_file;
  std::vector<std::string> irq, rps, xps;
  int64_t flow_entries = -1, busy_poll = -1, busy_read = -1;  // -1: not given
  std::string state_file, root;
};

std::string socket_path(const SteerOptions& o) {
  return o.socket.empty() ? control::default_control_socket_path() : o.socket;
}

// One request to the engine; nullopt after printing why (no engine, or the engine's error
// with each field). `missing` is set when no engine answers on the socket.
std::optional<json> call(const SteerOptions& o, const std::string& method, const json& params, bool* missing = nullptr) {
  control::RpcClient client;
  if (auto err = client.open(socket_path(o)); !err.empty()) {
    if (missing) *missing = true;
    else std::fprintf(stderr, "nvmetune steer: %s\n", err.c_str());
    return std::nullopt;
  }
  std::string error;
  auto resp = client.call({{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}}, error);
  if (!resp) {
    std::fprintf(stderr, "nvmetune steer: %s\n", error.c_str());
    return std::nullopt;
  }
  if (resp->contains("error")) {
    const auto& e = (*resp)["error"];
    std::fprintf(stderr, "nvmetune steer: %s\n", e.value("message", std::string("error")).c_str());
    if (e.contains("data") && e["data"].is_array())
      for (const auto& d : e["data"])
        std::fprintf(stderr, "  %s: %s\n", d.value("path", std::string()).c_str(), d.value("message", std::string()).c_str());
    return std::nullopt;
  }
  return (*resp)["result"];
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "\"\"" : s;
}

// "DEV[:QUEUE]=CPUS[/FLOWCNT]" or, for --irq, "IRQ=CPUS" / "DEV[:QUEUE]=CPUS".
std::optional<json> parse_rule(const std::string& text, bool irq, bool flow) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  std::string target = text.substr(0, eq), cpus = text.substr(eq + 1);
  json r = json::object();
  if (flow && cpus.find('/') != std::string::npos) {
    r["flow_cnt"] = std::stoull(cpus.substr(cpus.find('/') + 1));
    cpus = cpus.substr(0, cpus.find('/'));
  }
  if (!cpus.empty()) r["cpus"] = cpus;
  if (irq && target.find_first_not_of("0123456789") == std::string::npos) {
    r["irq"] = std::stoul(target);
    return r;
  }
  const size_t colon = target.find(':');
  r["device"] = target.substr(0, colon);
  if (colon != std::string::npos) r["queue"] = std::stoul(target.substr(colon + 1));
  return r;
}

std::optional<json> rule(const std::string& text, bool irq, bool flow) {
  try {
    return parse_rule(text, irq, flow);
  } catch (const std::exception&) {  // a number that is not one, or out of range
    return std::nullopt;
  }
}

// The request from --file / a JSON argument / the rule options.
std::optional<json> request_of(const SteerOptions& o) {
  json req = json::object();
  if (!o.request_file.empty()) {
    std::ifstream in(o.request_file);
    std::stringstream ss;
    ss << in.rdbuf();
    req = json::parse(ss.str(), nullptr, false);
    if (!in || req.is_discarded()) return std::fprintf(stderr, "nvmetune steer: %s: not a JSON request\n", o.request_file.c_str()), std::nullopt;
  } else if (!o.request_json.empty()) {
    req = json::parse(o.request_json, nullptr, false);
    if (req.is_discarded()) return std::fprintf(stderr, "nvmetune steer: the request is not JSON\n"), std::nullopt;
  }
  const std::pair<const char*, const std::vector<std::string>*> kinds[] = {{"irq", &o.irq}, {"rps", &o.rps}, {"xps", &o.xps}};
  for (const auto& [kind, texts] : kinds)
    for (const auto& t : *texts) {
      auto r = rule(t, std::string(kind) == "irq", std::string(kind) == "rps");
      if (!r) return std::fprintf(stderr, "nvmetune steer: --%s %s: expected %s\n", kind, t.c_str(),
                                  std::string(kind) == "irq" ? "IRQ=CPUS or DEV[:QUEUE]=CPUS" : "DEV[:QUEUE]=CPUS[/FLOWCNT]"), std::nullopt;
      req[kind].push_back(*r);
    }
  if (o.flow_entries >= 0) req["rps_sock_flow_entries"] = o.flow_entries;
  if (o.busy_poll >= 0) req["busy_poll"] = o.busy_poll;
  if (o.busy_read >= 0) req["busy_read"] = o.busy_read;
  if (req.empty()) return std::fprintf(stderr, "nvmetune steer: nothing to do: give --irq, --rps, --xps, ... or a request (see --help)\n"), std::nullopt;
  return req;
}

void print_rows(const json& rows) {
  size_t w = 4;
  for (const auto& r : rows) w = std::max(w, r["path"].get<std::string>().size());
  std::printf("%-*s  %-20s  %s\n", int(w), "path", "old", "new");
  for (const auto& r : rows)
    std::printf("%-*s  %-20s  %s%s\n", int(w), r["path"].get<std::string>().c_str(), trimmed(r["old"]).c_str(),
                trimmed(r["new"]).c_str(), r["change"].get<bool>() ? "" : "  (unchanged)");
}

std::string text_or_dash(const json& v) { return v.is_null() ? "-" : v.is_string() ? (v.get<std::string>().empty() ? "none" : v.get<std::string>()) : v.dump(); }

void print_view(const json& v) {
  std::printf("CPUs %s; rps_sock_flow_entries %s, busy_poll %s, busy_read %s\n", v["cpus"].get<std::string>().c_str(),
              text_or_dash(v["rps_sock_flow_entries"]).c_str(), text_or_dash(v["busy_poll"]).c_str(), text_or_dash(v["busy_read"]).c_str());
  for (const auto& n : v["interfaces"]) {
    std::printf("\n%s%s\n", n["name"].get<std::string>().c_str(),
                n["device"].get<std::string>().empty() ? " (virtual: no interrupt lines)" : (" on " + n["device"].get<std::string>()).c_str());
    for (const auto& irq : n["irqs"])
      for (const auto& l : v["irqs"])
        if (l["irq"] == irq)
          std::printf("  irq %-5u %-28s %-5s affinity %-8s effective %-6s %10.1f/s\n", l["irq"].get<unsigned>(),
                      l["name"].get<std::string>().c_str(), l["role"].get<std::string>().c_str(), text_or_dash(l["affinity"]).c_str(),
                      text_or_dash(l["effective_affinity"]).c_str(), l["rate"].get<double>());
    for (const auto& q : n["rx"])
      std::printf("  rx-%-3u rps_cpus %-10s rps_flow_cnt %s\n", q["queue"].get<unsigned>(), text_or_dash(q["rps_cpus"]).c_str(),
                  text_or_dash(q["rps_flow_cnt"]).c_str());
    for (const auto& q : n["tx"]) std::printf("  tx-%-3u xps_cpus %s\n", q["queue"].get<unsigned>(), text_or_dash(q["xps_cpus"]).c_str());
  }
  std::printf("\n%-4s %10s %10s %10s  %-16s %s\n", "cpu", "irq/s", "NET_RX/s", "NET_TX/s", "irqs", "rps / xps");
  for (const auto& c : v["per_cpu"]) {
    std::string irqs, queues;
    for (const auto& i : c["irqs"]) irqs += (irqs.empty() ? "" : ",") + std::to_string(i.get<unsigned>());
    for (const char* k : {"rps", "xps"})
      for (const auto& q : c[k]) queues += (queues.empty() ? "" : " ") + q.get<std::string>();
    std::printf("%-4u %10.1f %10.1f %10.1f  %-16s %s\n", c["cpu"].get<unsigned>(), c["irq_rate"].get<double>(),
                c["net_rx_rate"].get<double>(), c["net_tx_rate"].get<double>(), irqs.empty() ? "-" : irqs.c_str(), queues.c_str());
  }
  for (const auto& w : v["warnings"]) std::printf("warning: %s\n", w.get<std::string>().c_str());
  if (!v["saved"].empty())
    std::printf("\nchanged by the engine: %zu file(s) (state %s); `nvmetune steer revert` restores them\n", v["saved"].size(),
                v["state_file"].get<std::string>().c_str());
  if (!v["blocked"].get<std::string>().empty()) std::printf("\nnote: %s\n", v["blocked"].get<std::string>().c_str());
}

int run_show(const SteerOptions& o) {
  const json params = {{"all", o.all}};
  if (!call(o, "steering.get", params)) return exit_failure;
  // Rates need two readings.
  std::this_thread::sleep_for(std::chrono::milliseconds(o.rate_ms));
  auto v = call(o, "steering.get", params);
  if (!v) return exit_failure;
  if (o.json_out) std::printf("%s\n", v->dump(2).c_str());
  else print_view(*v);
  return exit_ok;
}

int run_plan(const SteerOptions& o, bool apply) {
  auto req = request_of(o);
  if (!req) return exit_usage;
  auto r = call(o, apply ? "steering.apply" : "steering.plan", *req);
  if (!r) return exit_failure;
  if (o.json_out) return std::printf("%s\n", r->dump(2).c_str()), exit_ok;
  print_rows((*r)["rows"]);
  std::printf("%s: %zu file(s)%s\n", apply ? "applied" : "dry run", (*r)["changes"].get<size_t>(),
              apply ? "; `nvmetune steer revert` restores them" : " would change; `nvmetune steer apply` with the same rules does it");
  return exit_ok;
}

int print_restored(const json& restored, const std::string& where) {
  for (const auto& s : restored)
    std::printf("restored %s: %s (was %s)\n", s["path"].get<std::string>().c_str(), trimmed(s["old"]).c_str(), trimmed(s["new"]).c_str());
  std::printf("reverted %zu file(s)%s\n", restored.size(), where.c_str());
  return exit_ok;
}

int run_revert(const SteerOptions& o) {
  bool missing = false;
  if (o.state_file.empty()) {
    if (auto r = call(o, "steering.revert", json::object(), &missing)) return print_restored((*r)["restored"], "");
    if (!missing) return exit_failure;
  }
  // No engine: the state file a crashed (or killed) engine left.
  const std::string state = o.state_file.empty() ? sys::default_steering_state_path() : o.state_file;
  auto r = sys::revert_state_file(state, o.root.empty() ? std::nullopt : std::optional<std::string>(o.root));
  if (!r.ok()) {
    std::fprintf(stderr, "nvmetune steer revert: %s\n", r.message().c_str());
    return exit_failure;
  }
  if (r.done.empty()) return std::printf("nothing to revert (no engine on %s, no state file %s)\n", socket_path(o).c_str(), state.c_str()), exit_ok;
  json restored = json::array();
  for (const auto& s : r.done) restored.push_back({{"path", s.path}, {"old", s.old_value}, {"new", s.new_value}});
  return print_restored(restored, " from " + state);
}

void add_rule_options(CLI::App* c, SteerOptions& o) {
  c->add_option("request", o.request_json, "a steering request as JSON (docs/guide/steer.md)");
  c->add_option("-f,--file", o.request_file, "read the JSON request from a file");
  c->add_option("--irq", o.irq, "IRQ=CPUS or DEV[:QUEUE]=CPUS: interrupt line(s) to CPUs (repeatable)");
  c->add_option("--rps", o.rps, "DEV[:QUEUE]=CPUS[/FLOWCNT]: RPS CPUs (\"none\" = off) and rps_flow_cnt of rx queue(s)");
  c->add_option("--xps", o.xps, "DEV[:QUEUE]=CPUS: XPS CPUs of tx queue(s)");
  c->add_option("--flow-entries", o.flow_entries, "net.core.rps_sock_flow_entries (RFS table)")->check(CLI::NonNegativeNumber);
  c->add_option("--busy-poll", o.busy_poll, "net.core.busy_poll (µs)")->check(CLI::NonNegativeNumber);
  c->add_option("--busy-read", o.busy_read, "net.core.busy_read (µs)")->check(CLI::NonNegativeNumber);
  c->add_flag("--json", o.json_out, "print the engine's JSON result");
}

}  // namespace

std::function<int()> attach_steer(CLI::App& cmd) {
  auto o = std::make_shared<SteerOptions>();
  cmd.add_option("--socket", o->socket, "the engine's control socket (default: as for ctl)");
  cmd.require_subcommand(1);
  cmd.footer(
      "Changes are one transaction: every file is read before it is written, a refused write rolls back the "
      "others, and the engine restores everything on revert or on a clean exit. After a crash, `steer revert` "
      "restores from the state file.\nExit codes: 0 done; 1 refused or no engine; 2 bad command line.");
  auto* show = cmd.add_subcommand("show", "Interfaces, interrupt lines, RPS/XPS queues and per-CPU interrupt rates.");
  show->add_flag("--all", o->all, "every interface (default: those carrying the listeners' addresses)");
  show->add_flag("--json", o->json_out, "print steering.get's JSON");
  show->add_option("--rate-interval", o->rate_ms, "ms between the two readings rates come from (500)");
  auto* plan = cmd.add_subcommand("plan", "Dry run: the files a change would write, with old and new values.");
  add_rule_options(plan, *o);
  auto* apply = cmd.add_subcommand("apply", "Apply the change live (all or nothing).");
  add_rule_options(apply, *o);
  auto* revert = cmd.add_subcommand("revert", "Restore every value the engine changed (or a crashed engine's state file).");
  revert->add_option("--state", o->state_file, "revert this state file without asking an engine");
  revert->add_option("--root", o->root, "the tree the state file's paths are under (default: as recorded)");
  return [o, show, plan, apply, revert] {
    if (show->parsed()) return run_show(*o);
    if (plan->parsed()) return run_plan(*o, false);
    if (apply->parsed()) return run_plan(*o, true);
    if (revert->parsed()) return run_revert(*o);
    return exit_usage;
  };
}

}  // namespace app
