#pragma once
// Sampler snapshots made up for store tests and bench/store_bench: a given number of queues,
// each with counters and three latency histograms spread like a real device's (a bell around
// a centre, a few dozen non-empty buckets), deterministic for a given seq.
#include <cstdint>
#include <random>

#include "engine/stats/histogram_layout.hpp"
#include "engine/stats/snapshot.hpp"

namespace test_support {

// n samples around centre_ns (log-normal, sigma 0.3: ~30 distinct sub-buckets).
inline stats::HistogramData synthetic_histogram(std::mt19937_64& rng, uint64_t centre_ns, unsigned n) {
  namespace hl = stats::histogram_layout;
  stats::HistogramData h;
  h.counts.assign(hl::buckets, 0);
  h.min_ns = UINT64_MAX;
  std::lognormal_distribution<double> dist(std::log(static_cast<double>(centre_ns)), 0.3);
  for (unsigned i = 0; i < n; ++i) {
    const auto v = static_cast<uint64_t>(dist(rng));
    ++h.counts[hl::bucket_of(v)];
    ++h.count;
    h.sum_ns += v;
    h.min_ns = std::min(h.min_ns, v);
    h.max_ns = std::max(h.max_ns, v);
  }
  if (h.count == 0) return {};
  return h;
}

inline stats::Snapshot synthetic_snapshot(uint64_t seq, int64_t time_ns, unsigned queues, unsigned samples_per_hist = 200) {
  std::mt19937_64 rng(seq * 7919 + queues);
  stats::Snapshot s;
  s.seq = seq;
  s.time_ns = time_ns;
  s.interval_ns = 1'000'000'000;
  s.mode = "bound";
  for (unsigned q = 0; q < queues; ++q) {
    stats::QueueRow r;
    r.queue_id = q + 1;
    r.qid = static_cast<uint16_t>(q + 1);
    r.cntlid = 1;
    r.commands = 1000 + (rng() % 1000);
    r.read_bytes = r.commands * 4096 / 2;
    r.write_bytes = r.commands * 4096 / 2;
    r.pdus_rx = r.commands;
    r.pdus_tx = r.commands * 2;
    r.queue_wait = synthetic_histogram(rng, 5'000, samples_per_hist);
    r.read_latency = synthetic_histogram(rng, 50'000, samples_per_hist);
    r.backend_latency = synthetic_histogram(rng, 20'000, samples_per_hist);
    s.total.commands += r.commands;
    s.total.read_bytes += r.read_bytes;
    s.total.write_bytes += r.write_bytes;
    s.total.queue_wait.merge(r.queue_wait);
    s.total.read_latency.merge(r.read_latency);
    s.total.backend_latency.merge(r.backend_latency);
    s.queues.push_back(std::move(r));
  }
  for (unsigned w = 0; w < 2; ++w) {
    stats::WorkerRow wr;
    wr.index = w;
    wr.cpu_ns = 250'000'000;
    wr.io_work_passes = 10'000;
    s.workers.push_back(wr);
  }
  return s;
}

}  // namespace test_support
