// The tuning settings' description (settings_schema.hpp). Help texts say what a setting does and
// the trade-off an operator weighs, in a few sentences: they are the app's tooltips and
// docs/reference/configuration.md (`nvmetune config reference`); measurements go to bench/README.md.
#include "engine/config/settings_schema.hpp"

#include <algorithm>

#include "engine/config/config_json.hpp"

namespace control {

namespace {

using json = nlohmann::json;
using T = SettingType;

const std::vector<std::string_view> all_modes{"bound", "unbound", "poll", "inline"};

std::vector<Setting> threading_rows() {
  return {
      {.section = "threading", .key = "mode", .type = T::choice, .label = "Mode",
       .choices = all_modes, .noun = "execution mode", .modes = all_modes,
       .help = "Execution model: which thread runs a queue's io_work. bound: a worker per CPU, a queue stays on the "
               "CPU that received its packets (best locality; a busy CPU delays its queues). unbound: a pool over the "
               "mask grouped by affinity_scope (survives a busy CPU, costs locality). poll: dedicated threads "
               "busy-poll their queues (lowest latency, burns its cores). inline: the first batch runs in the "
               "notification context (fewest hand-offs; a long batch delays other queues)."},
      {.section = "threading", .key = "cpumask", .type = T::cpumask, .label = "CPU mask", .modes = all_modes,
       .help = "Worker CPUs as a CPU list such as \"0-3,6\", every one online on this machine; \"all\" = every online "
               "CPU. A smaller mask leaves CPUs to other work and to NIC interrupts, but gives the engine fewer cores "
               "under load."},
      {.section = "threading", .key = "threads", .type = T::integer, .label = "Threads", .min = 0, .max = 1024,
       .modes = {"unbound", "poll", "inline"},
       .help = "Workers for unbound, poll and inline; 0 = one per CPU of the mask. More threads spread queues wider; "
               "in poll mode every thread burns a core, so fewer threads save CPU at the cost of queues sharing a "
               "poller."},
      {.section = "threading", .key = "queue_cpu", .type = T::choice, .label = "Queue CPU",
       .choices = {"incoming", "round_robin"}, .noun = "queue_cpu", .modes = {"bound"},
       .help = "bound: \"incoming\" runs a queue on the CPU that received its packets (SO_INCOMING_CPU), so its data "
               "stays in that CPU's cache, but queues pile up where interrupts land; \"round_robin\" spreads queues "
               "evenly at the cost of cross-CPU wake-ups."},
      {.section = "threading", .key = "affinity_scope", .type = T::choice, .label = "Affinity scope",
       .choices = {"cpu", "smt", "cache", "numa", "system"}, .noun = "affinity_scope", .modes = {"unbound"},
       .help = "unbound: the pods workers are grouped into: \"cpu\", \"smt\", \"cache\", \"numa\" or \"system\". A "
               "narrow scope keeps a queue's work near its caches; a wide one finds an idle CPU sooner when some are "
               "busy."},
      {.section = "threading", .key = "strict", .type = T::boolean, .label = "Strict", .modes = {"unbound"},
       .help = "unbound: workers never leave their pod's CPUs. Strict guarantees locality, but a busy pod cannot "
               "borrow an idle CPU from another."},
      {.section = "threading", .key = "first_core", .type = T::integer, .label = "First core", .min = -1,
       .max_rule = "the highest online CPU", .modes = {"poll"},
       .help = "poll: thread i pinned to CPU first_core + i; -1 = threads float over the mask. Every pinned CPU must "
               "be online. Pinning gives each poller a core of its own (steady latency); floating lets the scheduler "
               "move a poller off a CPU other work needs."},
      {.section = "threading", .key = "idle_poll_us", .type = T::integer, .label = "Idle poll", .unit = "µs",
       .min = 0, .max = 10'000'000, .modes = {"poll"},
       .help = "poll: µs of polling without work before the thread sleeps. Longer keeps latency low after a quiet "
               "gap but burns the CPU while idle; 0 sleeps at once and frees the core, at the cost of a wake-up on the "
               "next command. Changing it between 0 and non-zero switches the mode over (the queues' rings change "
               "kind); a new non-zero value applies in place."},
      {.section = "threading", .key = "idle_poll_period_us", .type = T::integer, .label = "Idle poll period",
       .unit = "µs", .min = 0, .max = 10'000'000, .modes = {"bound"},
       .help = "bound: the longest a worker keeps polling its queues after the last work before it sleeps, as the "
               "kernel target's idle_poll_period_usecs. A period longer than the host's round trip (tens of µs) "
               "saves the wake-up on every command at low queue depth, at the cost of a CPU spinning while the load "
               "lasts; with the adaptive window (the default) the worker polls only when commands come that close "
               "together. 0 sleeps at once and leaves the CPU to other work. With a fixed period (adaptive off), "
               "changing it between 0 and non-zero switches the mode over (the queues' rings change kind)."},
      {.section = "threading", .key = "idle_poll_adaptive", .type = T::boolean, .label = "Adaptive idle poll",
       .modes = {"bound"},
       .help = "bound: the worker polls only as long as the gaps between commands call for, up to the idle poll "
               "period: a gap it slept through that is shorter than the period opens the window to 1.5x that gap, "
               "a longer one shuts it. A sparse load then costs no polling, and a steady one at low queue depth no "
               "wake-ups. Off: always poll the whole period, as the kernel target does. With a period, turning it on "
               "or off switches the mode over (a worker that spins through every gap gets other rings)."},
      {.section = "threading", .key = "priority", .type = T::choice, .label = "Priority",
       .choices = {"normal", "nice", "fifo"}, .noun = "priority", .modes = {"poll"},
       .help = "poll: scheduling of the polling threads: \"normal\", \"nice\" (nice -20) or \"fifo\" (SCHED_FIFO). "
               "Higher priority keeps other work from delaying the pollers; fifo can starve everything else on those "
               "CPUs."},
      {.section = "threading", .key = "inline_budget", .type = T::integer, .label = "Inline budget", .unit = "PDUs",
       .min = 1, .max = 1024, .modes = {"inline"},
       .help = "inline: PDUs handled in the notification context before the rest is deferred to a worker. A larger "
               "budget saves a hand-off per batch; a smaller one keeps one busy queue from delaying the others."},
      {.section = "threading", .key = "io_mechanism", .type = T::choice, .label = "I/O mechanism",
       .choices = {"epoll", "io_uring"}, .noun = "io_mechanism", .modes = all_modes,
       .help = "How a queue reads its socket: \"epoll\" (readiness and recv()) or \"io_uring\" (a multishot receive "
               "into provided buffers on the queue's own ring, no receive syscall). io_uring saves a syscall per "
               "receive; epoll works on every kernel. Sends stay one sendmsg() per pass either way. Applies to "
               "connections accepted after the change (stats show each queue's io_mechanism); refused with "
               "the kernel's reason where multishot receive is missing (before 6.0)."},
  };
}

std::vector<Setting> budget_rows() {
  return {
      {.section = "budgets", .key = "recv_pdus", .type = T::integer, .label = "Receive PDUs", .unit = "PDUs",
       .min = 1, .max = 1024, .modes = all_modes,
       .help = "PDUs received per io_work pass (32; nvmet-tcp's 8). Larger passes amortise wake-ups and favour "
               "throughput; smaller ones turn to the next queue, and from reads to writes, sooner: fairer."},
      {.section = "budgets", .key = "send_pdus", .type = T::integer, .label = "Send PDUs", .unit = "PDUs",
       .min = 1, .max = 1024, .modes = all_modes,
       .help = "PDUs sent per pass, in one sendmsg (64: 32 reads and their responses; nvmet-tcp's 8). As with recv_pdus, larger favours "
               "throughput (fewer, fuller segments) and smaller fairness between queues sharing a thread."},
      {.section = "budgets", .key = "ops_per_pass", .type = T::integer, .label = "Ops per pass", .min = 1,
       .max = 65536, .modes = all_modes,
       .help = "Operations per io_work pass (nvmet-tcp's 64): the cap on a pass's total work. Larger gives a busy "
               "queue more done per turn; smaller bounds how long the other queues of its thread wait."},
      {.section = "budgets", .key = "bytes_per_pass", .type = T::size, .label = "Bytes per pass", .unit = "bytes",
       .min = 0, .max = int64_t{1} << 30, .modes = all_modes,
       .help = "Bytes moved per pass, 0..1GiB; 0 = unlimited. A cap keeps one queue doing large writes from holding "
               "its thread while small reads wait; a low cap costs throughput on large I/O."},
      {.section = "budgets", .key = "deadline_us", .type = T::integer, .label = "Deadline", .unit = "µs", .min = 0,
       .max = 1'000'000, .modes = all_modes,
       .help = "µs an io_work pass may run; 0 = no deadline. A deadline bounds the wait of queues sharing a thread "
               "(tail latency); too short and passes end before their budgets, adding wake-ups."},
      {.section = "budgets", .key = "reap_batch", .type = T::integer, .label = "Reap batch", .min = 1, .max = 1024,
       .modes = all_modes,
       .help = "Backend completions reaped at once. Larger batches cost fewer reaps per command; smaller ones hand "
               "the first completions back sooner."},
  };
}

std::vector<Setting> tcp_rows() {
  return {
      {.section = "tcp", .key = "in_capsule_data_size", .type = T::integer, .label = "In-capsule data",
       .unit = "bytes", .min = 0, .max = 128 * 1024, .multiple_of = 16, .modes = all_modes, .live = false,
       .help = "Write data carried in the command capsule, 0..131072, a multiple of 16; I/O queues only, admin "
               "queues always take 8 KiB. Larger saves the R2T round trip for writes up to that size, at the cost of "
               "receive buffer memory per queue. Applies at start."},
      {.section = "tcp", .key = "maxh2cdata", .type = T::integer, .label = "MAXH2CDATA", .unit = "bytes",
       .min = 4096, .multiple_of = 4, .modes = all_modes, .live = false,
       .help = "Largest H2CData PDU a host may send, at least 4096 and a multiple of 4. Larger means fewer PDUs per "
               "large write; smaller bounds the buffer each PDU takes. Applies at start."},
      {.section = "tcp", .key = "queue_depth", .type = T::integer, .label = "Queue depth", .min = 2, .max = 1024,
       .modes = all_modes, .live = false,
       .help = "Entries per queue (MQES + 1). Deeper queues let a host keep more commands in flight (throughput); "
               "each entry costs preallocated buffers, and deep queues lengthen queueing delay under overload. "
               "Applies at start."},
      {.section = "tcp", .key = "max_io_queues", .type = T::integer, .label = "Max I/O queues", .min = 1,
       .max = 65535, .modes = all_modes, .live = false,
       .help = "I/O queues per controller. More queues let a host spread work over more CPUs; each is a connection "
               "with its own io_work and buffers. Applies at start."},
      {.section = "tcp", .key = "mdts_bytes", .type = T::integer, .label = "MDTS", .unit = "bytes", .min = 8192,
       .max = 16 << 20, .power_of_two = true, .modes = all_modes, .live = false,
       .help = "Largest transfer per command, a power of two from 8192 to 16 MiB (4096 would advertise MDTS 0, "
               "which means unlimited). Larger lets hosts send big I/O as "
               "one command; smaller splits it, which keeps per-command buffers small and evens out latency between "
               "large and small I/O. Applies at start."},
      {.section = "tcp", .key = "max_connections", .type = T::integer, .label = "Max connections", .min = 1,
       .max = 1 << 20, .modes = all_modes, .live = false,
       .help = "TCP and RDMA connections served at once, together; more are closed at accept or rejected (logged). A cap bounds "
               "the memory and descriptors a connection storm can take; too low refuses legitimate hosts' queues. "
               "Applies at start."},
      {.section = "tcp", .key = "connect_timeout_ms", .type = T::integer, .label = "Connect timeout", .unit = "ms",
       .min = 100, .max = 600000, .modes = all_modes, .live = false,
       .help = "Accept to NVMe Connect, TCP and RDMA: a connection not connected this long is closed (a connect_timeout event). Short "
               "frees idle sockets sooner; too short cuts off hosts on a slow or lossy path. Applies at start."},
      {.section = "tcp", .key = "discovery_kato_ms", .type = T::integer, .label = "Discovery KATO", .unit = "ms",
       .min = 100, .max = 3'600'000, .modes = all_modes, .live = false,
       .help = "Keep-alive timeout of a discovery controller whose host asks for none (KATO 0, as a one-shot "
               "nvme discover does): it is torn down after this long without a command, as the kernel target "
               "does after 120 s. Short frees the connections of silent discovery hosts sooner; too short cuts "
               "off a slow discovery. Applies at start."},
      {.section = "tcp", .key = "so_priority", .type = T::integer, .label = "Socket priority", .min = -1, .max = 15,
       .modes = all_modes, .live = false,
       .help = "SO_PRIORITY on the listening and every accepted socket (as nvmet-tcp's so_priority); -1 = not set. "
               "A higher priority puts the target's packets ahead in the NIC's traffic classes; values above 6 need "
               "CAP_NET_ADMIN. Applies to connections accepted after start."},
      {.section = "tcp", .key = "busy_poll_us", .type = T::integer, .label = "Busy poll", .unit = "µs", .min = 0,
       .max = 1'000'000, .modes = all_modes, .live = false,
       .help = "SO_BUSY_POLL: µs a receive may spin on the NIC queue before sleeping; 0 = off. Spinning cuts the "
               "interrupt and softirq hop from receive latency, at the price of CPU burnt while waiting."},
      {.section = "tcp", .key = "arrival_stamps", .type = T::boolean, .label = "Arrival stamps",
       .modes = all_modes, .live = false,
       .help = "The kernel stamps each received segment (SO_TIMESTAMPING software receive stamps), so a command's "
               "target latency starts when its capsule reached this host and includes the wait for a worker to wake. "
               "Off, it starts when the engine saw the queue ready. Costs a clock read per received packet, "
               "host-wide while any socket asks. Applies at start."},
      {.section = "tcp", .key = "prefer_busy_poll", .type = T::boolean, .label = "Prefer busy poll",
       .modes = all_modes, .live = false,
       .help = "SO_PREFER_BUSY_POLL: the NIC queue defers its interrupts while the application busy-polls. Fewer "
               "interrupts and softirqs under load; needs busy_poll_us and the device's gro_flush_timeout / "
               "napi_defer_hard_irqs to matter, and CAP_NET_ADMIN."},
      {.section = "tcp", .key = "socket_buffer_bytes", .type = T::size, .label = "Socket buffers", .unit = "bytes",
       .min = 0, .max = 64 << 20, .modes = all_modes, .live = false,
       .help = "SO_SNDBUF and SO_RCVBUF of the listening and every accepted socket, 0..64MiB; 0 = the kernel's "
               "autotuning. Large fixed buffers let one sendmsg carry a whole pass of responses and one recv take "
               "many commands (SPDK asks for 2MiB too); each connection may hold this much memory each way. Set "
               "with SO_SNDBUFFORCE/SO_RCVBUFFORCE as root, else capped by net.core.wmem_max/rmem_max; the kernel "
               "reports twice the value. Applies to connections accepted after start."},
  };
}

std::vector<Setting> rdma_rows() {
  return {
      {.section = "rdma", .key = "data_pool_bytes", .type = T::size, .label = "RDMA data pool", .unit = "bytes",
       .min = 1 << 20, .max = int64_t{64} << 30, .modes = all_modes, .live = false,
       .help = "Command data buffers per RDMA device, 1MiB..64GiB: registered (pinned) once and shared by every "
               "queue on the device, in size classes from 16KiB up to twice MDTS, each an equal share. Larger lets "
               "more large commands run at once; when a class is empty a command waits for a buffer rather than "
               "failing. Applies at start."},
      {.section = "rdma", .key = "use_srq", .type = T::boolean, .label = "Shared receive queue", .modes = all_modes,
       .live = false,
       .help = "One shared receive queue per RDMA device (nvmet-rdma's use_srq): the device's queues take command "
               "capsules from one set of srq_size buffers instead of queue_depth each. Saves memory with many "
               "queues; a burst over srq_size waits on the link (receiver-not-ready retries). Applies at start."},
      {.section = "rdma", .key = "srq_size", .type = T::integer, .label = "SRQ size", .min = 256, .max = 65535,
       .modes = all_modes, .live = false,
       .help = "Receive buffers in the shared receive queue (nvmet-rdma's srq_size, 256..65535), capped at the "
               "device's limit. More absorbs larger bursts over all queues; each costs a capsule buffer. Applies at "
               "start."},
      {.section = "rdma", .key = "comp_vector", .type = T::integer, .label = "Completion vector", .min = -1,
       .max = 1023, .modes = all_modes, .live = false,
       .help = "The completion vector (interrupt) of each queue's CQ: -1 spreads queues over the device's vectors "
               "by queue ID; n puts every queue on vector n (modulo the device's count), leaving the others' CPUs "
               "free. Shown per queue in the log at connect and in stats (comp_vector). Applies to new connections."},
  };
}

// Defaults come from the model itself (config.hpp's initialisers), encoded as the JSON takes them.
std::vector<Setting> build_schema() {
  const json defaults = {{"threading", to_json(ThreadingConfig{})},
                         {"budgets", to_json(BudgetConfig{})},
                         {"tcp", to_json(TcpConfig{})},
                         {"rdma", to_json(RdmaConfig{})}};
  std::vector<Setting> out;
  for (auto rows : {threading_rows(), budget_rows(), tcp_rows(), rdma_rows()})
    for (Setting& s : rows) {
      s.default_value = defaults.at(std::string(s.section)).at(std::string(s.key));
      out.push_back(std::move(s));
    }
  return out;
}

json to_json(const Setting& s) {
  json j = {{"name", s.key},   {"path", s.path()},    {"section", s.section}, {"type", to_string(s.type)},
            {"label", s.label}, {"modes", s.modes},   {"live", s.live},       {"default", s.default_value},
            {"help", s.help}};
  if (!s.unit.empty()) j["unit"] = s.unit;
  if (s.min) j["min"] = *s.min;
  if (s.max) j["max"] = *s.max;
  if (!s.max_rule.empty()) j["max_rule"] = s.max_rule;
  if (s.multiple_of > 1) j["multiple_of"] = s.multiple_of;
  if (s.power_of_two) j["power_of_two"] = true;
  if (!s.choices.empty()) j["values"] = s.choices;
  return j;
}

}  // namespace

std::string_view to_string(SettingType t) {
  switch (t) {
    case SettingType::integer: return "integer";
    case SettingType::size: return "size";
    case SettingType::boolean: return "bool";
    case SettingType::choice: return "enum";
    case SettingType::cpumask: return "cpumask";
  }
  return "?";
}

const std::vector<Setting>& settings_schema() {
  static const std::vector<Setting> schema = build_schema();
  return schema;
}

std::vector<const Setting*> settings_in(std::string_view section) {
  std::vector<const Setting*> out;
  for (const Setting& s : settings_schema())
    if (s.section == section) out.push_back(&s);
  return out;
}

const Setting* find_setting(std::string_view path) {
  const auto& all = settings_schema();
  auto it = std::find_if(all.begin(), all.end(), [&](const Setting& s) { return s.path() == path; });
  return it == all.end() ? nullptr : &*it;
}

std::vector<std::string_view> setting_keys(std::string_view section) {
  std::vector<std::string_view> out;
  for (const Setting* s : settings_in(section)) out.push_back(s->key);
  return out;
}

json settings_schema_json() {
  json settings = json::array();
  for (const Setting& s : settings_schema()) settings.push_back(to_json(s));
  return {{"settings", std::move(settings)}};
}

}  // namespace control
