#pragma once
// Every latency histogram a queue carries, in one table: its key (store, control socket, ctl,
// `db percentiles`), what a person reads, and from which moment to which it measures. Everything
// that lists, stores, merges or plots a queue's histograms walks this table, so a new source is
// one line here (and one member in QueueRow / QueueStats).
//
// The command's timeline, on both transports (engine/core/command_timing.hpp):
//   arrival        the kernel's receive stamp of the segment that carried the capsule (TCP,
//                  SO_TIMESTAMPING), else the executor's readiness (QueueRow::arrival_clock says)
//   ready          the executor saw the queue ready (event, kick, requeue)
//   pass           the queue's io_work pass began
//   parsed         the capsule (and in-capsule data) is complete
//   [data]         writes asking for their data (R2T): the last H2CData arrived
//   submitted/done the backend's I/O (RAM: the same call)
//   completed      core/ finished the command; its response is queued
//   handed         the sendmsg() that carried the response's last byte returned (one preempted
//                  on its way out: its start plus the queue's usual transmit time; RDMA: its
//                  send completion was reaped)
#include <cstddef>
#include <string_view>

#include "engine/stats/snapshot.hpp"

namespace stats {

enum class LatencyKind : unsigned char {
  target,  // arrival -> handed: what the host sees of the target, per opcode
  stage,   // one stage of it; the stages of a command add up to its target latency
  engine,  // the engine's own views from before (parsed -> completed, per pass)
};

struct LatencySource {
  const char* key;    // "target_read_latency"
  const char* title;  // "Target read latency"
  const char* span;   // "kernel arrival stamp -> response handed to the socket"
  LatencyKind kind;
  HistogramData QueueRow::*row;
};

inline constexpr LatencySource latency_sources[] = {
    {"target_read_latency", "Target latency, reads", "capsule's kernel arrival stamp -> response handed to the socket",
     LatencyKind::target, &QueueRow::target_read_latency},
    {"target_write_latency", "Target latency, writes", "capsule's kernel arrival stamp -> response handed to the socket",
     LatencyKind::target, &QueueRow::target_write_latency},
    {"target_other_latency", "Target latency, other commands",
     "capsule's kernel arrival stamp -> response handed to the socket", LatencyKind::target,
     &QueueRow::target_other_latency},
    {"stage_scheduling", "Stage: scheduling", "capsule's arrival -> the executor saw its queue ready (wake-up)",
     LatencyKind::stage, &QueueRow::stage_scheduling},
    {"stage_queue", "Stage: queue", "queue seen ready -> its io_work pass began (waiting behind other work)",
     LatencyKind::stage, &QueueRow::stage_queue},
    {"stage_receive", "Stage: receive", "pass began -> capsule parsed (receive calls, PDUs ahead of it)",
     LatencyKind::stage, &QueueRow::stage_receive},
    {"stage_data_wait", "Stage: data wait (host)", "writes with R2T: capsule parsed -> the host's last H2CData arrived",
     LatencyKind::stage, &QueueRow::stage_data_wait},
    {"backend_latency", "Stage: backend", "backend submit -> backend completion", LatencyKind::stage,
     &QueueRow::backend_latency},
    {"stage_send", "Stage: send", "command completed -> response handed to the socket (waits for the pass's sendmsg)",
     LatencyKind::stage, &QueueRow::stage_send},
    {"queue_wait", "Queue wait (per pass)", "queue seen ready -> io_work pass began, once per pass: the engine's wqlat",
     LatencyKind::engine, &QueueRow::queue_wait},
    {"read_latency", "Engine read latency", "read capsule parsed -> response queued (no receive, no send)",
     LatencyKind::engine, &QueueRow::read_latency},
    {"write_latency", "Engine write latency", "write capsule parsed -> response queued (no receive, no send)",
     LatencyKind::engine, &QueueRow::write_latency},
    {"other_latency", "Engine other latency", "other capsule parsed -> response queued (no receive, no send)",
     LatencyKind::engine, &QueueRow::other_latency},
};

inline constexpr size_t latency_source_count = sizeof latency_sources / sizeof latency_sources[0];

// The source of that key, or nullptr.
inline const LatencySource* find_latency_source(std::string_view key) {
  for (const auto& s : latency_sources)
    if (key == s.key) return &s;
  return nullptr;
}

}  // namespace stats
