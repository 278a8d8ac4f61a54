#include "probes/probe_catalog.hpp"

#include "probes/loaders.hpp"

namespace probes {

namespace {

// Each summary is the one line the probes panel and `nvmetune probe` show: what is measured,
// from which event to which. Kept here only; both read it from ProbeKind (and the engine's
// probes.list carries it to remote front ends).
constexpr ProbeKind kinds[] = {
    {"runqlat",
     "run-queue wait per thread as the scheduler counts it (enqueue -> switch-in, schedstat run_delay); "
     "clock=wall: sched_wakeup -> sched_switch; off-CPU time",
     nullptr, true, load_runqlat},
    {"irqload",
     "irq_handler_entry -> exit per IRQ line and CPU, softirq_entry -> exit per vector and CPU "
     "(counts as /proc/interrupts, /proc/softirqs)",
     nullptr, false, load_irqload},
    {"wqlat", "a kernel work item's wait: workqueue_queue_work -> workqueue_execute_start, per workqueue",
     "a workqueue name (nvmet_tcp_wq, nvmet-wq, kblockd, ...)", false, load_wqlat},
    {"biolat",
     "block I/O in the driver: block_rq_issue -> block_rq_complete per disk (of the engine's namespaces)",
     "a disk (loop0, /dev/loop0 or MAJ:MIN), or all (default: the engine's disks; every disk if it has none)", false,
     load_biolat},
    {"socklat",
     "sys_enter -> sys_exit of recv/send/read/write/io_uring_enter per syscall, with counts; TCP retransmits",
     nullptr, true, load_socklat},
    {"usdtlat",
     "the engine's USDT points: cmd_arrival -> cmd_complete per command; queue_wait_end (the engine's queue wait)",
     nullptr, true, load_usdtlat},
};

}  // namespace

std::span<const ProbeKind> probe_kinds() { return kinds; }

const ProbeKind* find_probe_kind(std::string_view name) {
  for (const ProbeKind& k : kinds)
    if (name == k.name) return &k;
  return nullptr;
}

std::string probe_names() {
  std::string out;
  for (const ProbeKind& k : kinds) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

}  // namespace probes
