#pragma once
// One closed sampling interval: what the sampler hands to every sink (store, GUI, control
// socket). Plain data, copied freely; no Qt.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/stats/histogram_data.hpp"

namespace stats {

// Latency histograms are in nanoseconds; counters are deltas over the interval unless the
// name says "total".
struct QueueRow {
  uint64_t queue_id = 0;     // engine-wide queue number (stable while connected)
  uint16_t qid = 0;          // NVMe queue ID (0 = admin)
  uint16_t cntlid = 0;
  std::string subnqn;
  std::string peer;
  std::string io_mechanism;  // "epoll" | "io_uring"
  int comp_vector = -1;      // RDMA: its CQ's completion vector; -1 for other transports
  int worker = -1;           // worker index running its io_work now (-1 = none)
  int incoming_cpu = -1;     // SO_INCOMING_CPU when the queue was last placed (-1 = unknown)
  // Where its commands' arrival times come from: "kernel" (the socket's receive stamps) or
  // "readiness" (no stamp: the executor saw the queue ready; RDMA, tests feeding bytes).
  std::string arrival_clock;
  uint64_t commands = 0, read_bytes = 0, write_bytes = 0, pdus_rx = 0, pdus_tx = 0;
  HistogramData queue_wait;  // readiness/enqueue -> io_work start (the engine's wqlat)
  HistogramData read_latency, write_latency, other_latency;  // capsule complete -> response queued
  HistogramData backend_latency;  // the backend stage: submit -> completion
  // Arrival -> response handed to the socket, and its stages (latency_sources.hpp says each
  // one's span; the one place that lists them all).
  HistogramData target_read_latency, target_write_latency, target_other_latency;
  HistogramData stage_scheduling, stage_queue, stage_receive, stage_data_wait, stage_send;
};

struct WorkerRow {
  unsigned index = 0;
  int tid = 0;
  std::string name;
  std::vector<unsigned> cpus_allowed;
  uint64_t io_work_passes = 0, busy_passes = 0, idle_passes = 0, wakeups = 0;
  uint64_t idle_poll_ns = 0;  // time spinning through passes that found nothing (pollers)
  uint64_t cpu_ns = 0;       // CPU time used in the interval (kernel's per-thread clock)
  uint32_t queues = 0;       // queues placed on this worker now
};

// A histogram measured outside the engine (probes/: eBPF), in the engine's bucket layout and
// nanoseconds, so percentiles, the store and the plots treat it like the engine's own.
struct ProbeHistogram {
  std::string source;   // the probe: "runqlat", "wqlat", "biolat", "socklat", "irqload", ...
  std::string labels;   // "key=value,key=value" ("wq=nvmet_tcp_wq", "tid=812,comm=nvmt-w0"); "" = the total
  HistogramData hist;
};

// A probe's count over the interval (rates: IRQs per CPU, softirq time per vector, syscalls,
// retransmits, off-CPU time). Names carry their unit ("irq_ns", "softirq_count").
struct ProbeCounter {
  std::string name;
  std::string labels;   // as ProbeHistogram::labels
  uint64_t value = 0;
};

struct Snapshot {
  uint64_t seq = 0;          // interval number since engine start
  int64_t time_ns = 0;       // CLOCK_REALTIME at the interval end
  uint64_t interval_ns = 0;
  std::string mode;          // execution model during the interval
  std::vector<QueueRow> queues;
  std::vector<WorkerRow> workers;
  QueueRow total;            // all queues, including those gone during the interval
  std::vector<ProbeHistogram> probes;         // filled by snapshot providers (probes/), else empty
  std::vector<ProbeCounter> probe_counters;
  uint64_t iops() const { return interval_ns ? total.commands * 1'000'000'000ull / interval_ns : 0; }
};

// A configuration change, connect/disconnect, probe attach...: kept with its time so plots can
// show what changed when.
struct Event {
  uint64_t seq = 0;
  int64_t time_ns = 0;       // CLOCK_REALTIME
  std::string kind;          // "threading", "budgets", "connect", "disconnect", "namespace", ...
  std::string detail_json;   // a JSON object with the specifics
};

}  // namespace stats
