#include "engine/control/executor_factory.hpp"

#include <sched.h>

#include <algorithm>
#include <exception>

#include "engine/config/config_json.hpp"
#include "engine/exec/event/event_executor.hpp"
#include "engine/exec/inline/inline_executor.hpp"
#include "engine/exec/unbound/unbound_executor.hpp"
#include "engine/tcp/uring_socket.hpp"

namespace control {
namespace {

std::vector<unsigned> mask_of(const ThreadingConfig& t) { return t.cpus.empty() ? sys::allowed_cpus() : t.cpus; }

exec::Priority priority_of(const std::string& p) {
  return sys::parse_thread_priority(p).value_or(exec::Priority::normal);
}

// bound: one worker per CPU of the mask, pinned there; queues go to the worker of the CPU that
// received their packets (or round-robin). After the last work a worker polls for up to
// idle_poll_period_us (adaptive: only as long as the recent gaps between commands call for),
// then sleeps.
exec::EventExecutorConfig bound_config(const ThreadingConfig& t) {
  exec::EventExecutorConfig c;
  for (unsigned cpu : mask_of(t)) c.worker_cpus.push_back({cpu});
  c.placement = t.queue_cpu == "round_robin" ? exec::Placement::round_robin : exec::Placement::incoming_cpu;
  c.busy_poll_ns = uint64_t{t.idle_poll_period_us} * 1000;
  c.adaptive_poll = t.idle_poll_adaptive;
  c.mode = "bound";
  c.thread_prefix = "nvmt-bnd";
  return c;
}

// poll: dedicated polling threads, thread i on first_core + i (or free over the mask), busy
// for idle_poll_us after the last work, least-loaded placement.
exec::EventExecutorConfig poll_config(const ThreadingConfig& t) {
  exec::EventExecutorConfig c;
  const auto mask = mask_of(t);
  const unsigned n = t.threads ? t.threads : static_cast<unsigned>(mask.size());
  for (unsigned i = 0; i < n; ++i) {
    if (t.first_core >= 0) c.worker_cpus.push_back({static_cast<unsigned>(t.first_core) + i});
    else c.worker_cpus.push_back(mask);
  }
  c.placement = exec::Placement::least_loaded;
  c.busy_poll_ns = uint64_t{t.idle_poll_us} * 1000;
  c.priority = priority_of(t.priority);
  c.mode = "poll";
  c.thread_prefix = "nvmt-poll";
  return c;
}

// unbound: a pool over the mask, split into affinity pods of the real topology.
exec::UnboundConfig unbound_config(const ThreadingConfig& t) {
  exec::UnboundConfig c;
  c.threads = t.threads;
  c.cpus = mask_of(t);
  c.scope = sys::parse_affinity_scope(t.affinity_scope).value_or(sys::AffinityScope::cache);
  c.strict = t.strict;
  return c;
}

// inline: the notification thread runs the first inline_budget PDUs, deferred workers the rest.
exec::InlineConfig inline_config(const ThreadingConfig& t) {
  exec::InlineConfig c;
  c.threads = t.threads;
  c.cpus = mask_of(t);
  c.inline_budget = t.inline_budget;
  return c;
}

}  // namespace

// Field rules (ranges, names, online CPUs) are the config validator's; this adds what only the
// running process knows: its own CPU affinity and what this build implements.
std::vector<ConfigError> check_threading(const ThreadingConfig& t, const std::string& path) {
  std::vector<ConfigError> errs = validate_threading(t, path);
  if (!errs.empty()) return errs;
  const auto allowed = sys::allowed_cpus();
  auto allowed_text = sys::format_cpu_list(allowed);
  for (unsigned c : t.cpus)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
      errs.push_back({path + ".cpumask", "CPU " + std::to_string(c) + " is not available (available: " + allowed_text + ")"});
  if (t.mode == "poll" && t.first_core >= 0) {
    const unsigned n = t.threads ? t.threads : static_cast<unsigned>(mask_of(t).size());
    for (unsigned i = 0; i < n; ++i) {
      const unsigned c = static_cast<unsigned>(t.first_core) + i;
      if (std::find(allowed.begin(), allowed.end(), c) == allowed.end()) {
        errs.push_back({path + ".first_core", "poll thread " + std::to_string(i) + " would need CPU " +
                                                  std::to_string(c) + ", which is not available (available: " +
                                                  allowed_text + ")"});
        break;
      }
    }
  }
  if (t.mode == "unbound") {
    if (std::string e = exec::UnboundExecutor::check(unbound_config(t)); !e.empty())
      errs.push_back({path + ".cpumask", e});
  } else if (t.mode == "inline") {
    if (std::string e = exec::InlineExecutor::check(inline_config(t)); !e.empty())
      errs.push_back({path + ".cpumask", e});
  }
  if (t.io_mechanism == "io_uring") {
    // Probed once: the kernel must deliver a multishot receive into provided buffers.
    static const std::string uring_problem = tcp::UringSocket::probe();
    if (!uring_problem.empty())
      errs.push_back({path + ".io_mechanism", "io_uring sockets are not available here: " + uring_problem});
  }
  return errs;
}

std::unique_ptr<exec::Executor> make_executor(const ThreadingConfig& t, std::string& error,
                                              stats::Registry* registry) {
  if (t.mode == "bound" || t.mode == "poll") {
    auto cfg = t.mode == "bound" ? bound_config(t) : poll_config(t);
    cfg.registry = registry;
    return std::make_unique<exec::EventExecutor>(cfg);
  }
  // Their constructors check the mask against the topology and start pinned threads; a
  // refusal there is a refusal of the change, reported as the executor words it.
  try {
    if (t.mode == "unbound") {
      auto cfg = unbound_config(t);
      cfg.registry = registry;
      return exec::make_unbound_executor(cfg);
    }
    if (t.mode == "inline") {
      auto cfg = inline_config(t);
      cfg.registry = registry;
      return exec::make_inline_executor(cfg);
    }
  } catch (const std::exception& e) {
    error = e.what();
    return nullptr;
  }
  error = "execution mode \"" + t.mode + "\" is not available in this build";
  return nullptr;
}

bool reconfigure_in_place(exec::Executor& exec, const ThreadingConfig& current, const ThreadingConfig& t,
                          std::string& error) {
  if (t.mode != current.mode) return false;
  auto* ev = dynamic_cast<exec::EventExecutor*>(&exec);
  if (!ev) return false;
  const auto cfg = t.mode == "bound" ? bound_config(t) : poll_config(t);
  const auto cur = t.mode == "bound" ? bound_config(current) : poll_config(current);
  if (cfg.worker_cpus.size() != cur.worker_cpus.size() || cfg.placement != cur.placement) return false;
  // Whether workers spin decides the kind of ring each queue owns (Executor::busy_polls), fixed when
  // the ring is made: starting or stopping the spin takes a switch, which makes the rings anew.
  if (cfg.spins() != cur.spins()) return false;
  error = ev->reconfigure(cfg);
  return true;
}

}  // namespace control
