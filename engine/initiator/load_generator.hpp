#pragma once
// A closed-loop NVMe/TCP load generator: one controller, N I/O queues of QD slots each, kept
// busy by poll threads; every completion records its latency and submits the next I/O. It is
// what `nvmetune perf` prints and what `nvmetune experiment` measures each cell with, so both
// report the same numbers. Nothing allocates or locks per I/O (buffers, slots and the verify
// table are preallocated).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine/initiator/target.hpp"
#include "engine/stats/histogram.hpp"
#include "engine/stats/histogram_data.hpp"

namespace initiator {

enum class Pattern : uint8_t { read, write, randread, randwrite, randrw };

const char* pattern_name(Pattern p);
bool has_reads(Pattern p);
bool has_writes(Pattern p);

// The host's own latency while a load runs, for whoever shows it beside the target's (the app's
// dashboard, experiments): each measured I/O's submit-to-completion time, cumulative, readable
// from any thread at any time (two readings' difference is an interval). It may follow several
// runs, one after the other, and never goes backwards. Its mutex is taken per reading and per
// run, never per I/O: the load's threads record into histograms of their own.
class LiveLatency {
 public:
  struct Reading {
    stats::HistogramData read, write;
  };
  Reading read() const;

  // run_load's side: a worker's histograms join at the start of a run, and leave (their final
  // values kept) at its end.
  void attach(const stats::Histogram* read, const stats::Histogram* write);
  void detach_all();

 private:
  mutable std::mutex _mu;
  std::vector<std::pair<const stats::Histogram*, const stats::Histogram*>> _live;
  Reading _retired;
};

struct LoadSpec {
  Target target;
  uint32_t nsid = 1;
  Pattern pattern = Pattern::randread;
  unsigned mixread = 50;     // randrw: percentage of reads
  uint32_t bs = 4096;        // a multiple of the namespace's block size
  unsigned qd = 32;          // slots per queue
  unsigned queues = 1;       // I/O queues, one TCP connection each
  unsigned threads = 1;      // poll threads (<= queues); thread t drives queues t, t+threads, …
  std::vector<unsigned> cpus;  // thread i pinned to cpus[i % size]; empty = not pinned
  uint64_t size_bytes = 0;   // stop after this many measured bytes (0: by time)
  double time_s = 10;        // measured seconds (0 with size_bytes: until the size is done)
  double ramp_s = 0;         // run this long before measuring
  bool verify = false;       // per-block pattern + crc32c table; reads checked, read-back at the end
  std::FILE* progress = nullptr;            // a header and one line per second; nullptr = silent
  const std::atomic<bool>* stop = nullptr;  // another thread (a signal handler) ends the run early
  // verify: called on the calling thread once every write is done and before the read-back,
  // so a test can corrupt a block behind the target's back and expect its LBA reported.
  std::function<void()> before_readback;
  LiveLatency* live = nullptr;  // also record into this (nullptr: nobody watches)
};

struct LoadDirResult {
  stats::HistogramData h;  // submit-to-completion latency of the measured I/Os (ns)
  uint64_t errors = 0;
  double stddev = 0;       // ns
};

struct LoadMismatch {
  uint64_t lba;
  uint32_t offset;  // first differing byte within that block
};

struct LoadResult {
  enum class Status : uint8_t {
    ok,        // ran; see failure and verify_mismatches for what went wrong during the run
    usage,     // the spec does not fit the target (bs vs its block size): a caller error
    failed,    // could not start: connect, identify, queue creation, limits of the controller
  };
  Status status = Status::ok;
  std::string error;         // why status != ok
  std::string failure;       // the first I/O or queue failure during the run (empty: none)
  uint32_t block_size = 0;   // the namespace, as identified
  uint64_t nsze = 0;
  double runtime_s = 0;      // measured wall time
  LoadDirResult read, write;
  double usr_cpu_pct = 0, sys_cpu_pct = 0;  // of one CPU, whole process, over the measured time
  uint64_t verify_checked = 0, verify_mismatches = 0;
  std::vector<LoadMismatch> mismatches;     // the first few per thread, sorted by LBA

  bool clean() const { return status == Status::ok && failure.empty() && verify_mismatches == 0; }
};

// Connects, runs the workload, disconnects. Blocks for ramp + time (or until size/stop).
LoadResult run_load(const LoadSpec& spec);

}  // namespace initiator
