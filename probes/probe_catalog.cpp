#include "probes/probe_catalog.hpp"

#include "probes/loaders.hpp"

namespace probes {

namespace {

constexpr ProbeKind kinds[] = {
    {"runqlat", "run-queue latency (wakeup/preemption -> on CPU) per thread; off-CPU time", nullptr, true,
     load_runqlat},
    {"irqload", "hard IRQ count and time per IRQ line and CPU; softirq time per vector and CPU", nullptr, false,
     load_irqload},
    {"wqlat", "kernel workqueue latency (queue_work -> work starts) per workqueue",
     "a workqueue name (nvmet_tcp_wq, nvmet-wq, kblockd, ...)", false, load_wqlat},
    {"biolat", "block I/O latency (issue -> complete) per disk, of the disks under the engine's namespaces",
     "a disk (loop0, /dev/loop0 or MAJ:MIN), or all (default: the engine's disks; every disk if it has none)", false,
     load_biolat},
    {"socklat", "socket syscall latency and counts (recv/send/io_uring_enter); TCP retransmits", nullptr, true,
     load_socklat},
    {"usdtlat", "the engine's USDT points: command latency and queue wait, attached on demand", nullptr, true,
     load_usdtlat},
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
