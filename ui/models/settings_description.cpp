// The live settings the tuning form shows (settings_description.hpp). Ranges and choices
// follow engine/control's validation (config.cpp); the engine judges every value again.
#include "ui/models/settings_description.hpp"

#include <algorithm>

namespace ui {

bool SettingField::applies_to(const std::string& mode) const {
  return modes.empty() || std::find(modes.begin(), modes.end(), mode) != modes.end();
}

const std::vector<SettingField>& settings_description() {
  using K = SettingField::Kind;
  static const std::vector<SettingField> fields = {
      {"threading", "mode", "Mode", K::choice, {"bound", "unbound", "poll", "inline"}, 0, 0, {},
       "Execution model.\nbound: one worker per CPU, a queue runs where its packets arrive - good locality, suffers "
       "when that CPU is busy.\nunbound: a pool over the mask - survives a busy CPU, costs locality.\npoll: dedicated "
       "threads busy-poll their queues - lowest latency, burns their cores.\ninline: io_work runs in the notifier "
       "itself - fewest handoffs, one slow queue delays the others."},
      {"threading", "cpumask", "CPU mask", K::cpumask, {}, 0, 0, {},
       "CPUs the workers may run on (\"all\" or a list such as 0-3,6). Pick them on the topology at the right. "
       "Fewer CPUs leave more for the rest of the machine but queue more work per CPU."},
      {"threading", "threads", "Threads", K::integer, {}, 0, 1024, {"unbound", "poll", "inline"},
       "Workers (0 = one per CPU of the mask). More threads spread queues; in poll mode each one burns a core."},
      {"threading", "queue_cpu", "Queue to CPU", K::choice, {"incoming", "round_robin"}, 0, 0, {"bound"},
       "incoming: a queue runs on the CPU its packets arrive on (SO_INCOMING_CPU) - best cache locality with RSS.\n"
       "round_robin: queues spread evenly - balanced when the NIC steers everything to one CPU."},
      {"threading", "affinity_scope", "Affinity scope", K::choice, {"cpu", "smt", "cache", "numa", "system"}, 0, 0,
       {"unbound"},
       "How far an unbound worker may wander (the kernel's affinity_scope): narrower keeps caches warm, wider "
       "escapes a busy CPU sooner."},
      {"threading", "strict", "Strict scope", K::boolean, {}, 0, 0, {"unbound"},
       "Workers never leave their pod's CPUs, even when the pod is saturated (predictable, less resilient)."},
      {"threading", "first_core", "First core", K::integer, {}, -1, 8191, {"poll"},
       "Poll thread i is pinned to first_core + i; -1 places them freely over the mask."},
      {"threading", "idle_poll_us", "Idle poll (us)", K::integer, {}, 0, 10'000'000, {"poll"},
       "Busy-poll this long without work before sleeping. Longer: lower latency after a pause, more CPU burnt idle."},
      {"threading", "priority", "Priority", K::choice, {"normal", "nice", "fifo"}, 0, 0, {"poll"},
       "Poll threads' scheduling: nice -20 or SCHED_FIFO win the CPU against other work (needs CAP_SYS_NICE) but can "
       "starve it."},
      {"threading", "inline_budget", "Inline budget (PDUs)", K::integer, {}, 1, 1024, {"inline"},
       "PDUs handled in the notification context before the rest is deferred: larger cuts handoffs, smaller bounds "
       "how long one queue holds the notifier."},
      {"threading", "io_mechanism", "I/O mechanism", K::choice, {"epoll", "io_uring"}, 0, 0, {},
       "epoll: readiness then recv/send syscalls. io_uring: multishot receive into provided buffers - fewer syscalls "
       "per PDU, needs a recent kernel."},
      {"budgets", "recv_pdus", "Receive PDUs", K::integer, {}, 1, 1024, {},
       "PDUs received per io_work pass (nvmet-tcp: 8). Larger favours throughput of busy queues over fairness."},
      {"budgets", "send_pdus", "Send PDUs", K::integer, {}, 1, 1024, {},
       "PDUs sent per io_work pass (nvmet-tcp: 8). Reads are send-heavy: this balances reads against writes."},
      {"budgets", "ops_per_pass", "Ops per pass", K::integer, {}, 1, 65536, {},
       "Operations per io_work before it yields (nvmet-tcp: 64). Smaller: fairer between queues, more passes."},
      {"budgets", "bytes_per_pass", "Bytes per pass", K::integer, {}, 0, int64_t{1} << 30, {},
       "Bytes per io_work before it yields (0 = unlimited): keeps large transfers from starving small ones."},
      {"budgets", "deadline_us", "Deadline (us)", K::integer, {}, 0, 1'000'000, {},
       "Longest io_work pass (0 = none): bounds the latency one queue adds to the others on its thread."},
      {"budgets", "reap_batch", "Completion batch", K::integer, {}, 1, 1024, {},
       "Backend completions reaped at once: larger amortizes, smaller answers sooner."},
  };
  return fields;
}

}  // namespace ui
