#pragma once
// Statistics blocks of the data path and the registry the sampler reads them through.
//
// A QueueStats / WorkerStats block belongs to one queue / worker: only the thread running its
// io_work (or the worker thread) writes its counters and histograms, with relaxed stores.
// The Registry is control path only (connect, disconnect, thread start/stop, the sampler):
// the data path never touches it, so its mutex never delays an I/O.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/stats/counter.hpp"
#include "engine/stats/histogram.hpp"
#include "engine/stats/snapshot.hpp"

namespace stats {

// Who a queue is; known in pieces (peer at accept, qid/cntlid/subnqn at Connect).
struct QueueIdentity {
  uint64_t queue_id = 0;  // engine-wide queue number (stable while connected)
  uint16_t qid = 0;       // NVMe queue ID (0 = admin)
  uint16_t cntlid = 0;
  std::string subnqn;
  std::string peer;
  std::string io_mechanism;  // "epoll" | "io_uring": how the queue reads its socket
  int comp_vector = -1;      // RDMA: its CQ's completion vector; -1 for other transports
  std::string arrival_clock;  // QueueRow::arrival_clock
};

// Every latency histogram of a queue (latency_sources.hpp says what each measures): 13 of 9 KiB.
// Made when the queue connects (QueueStats::make_latency), so a connection that never does (an
// idle storm, a port scan) costs none of it.
struct QueueLatency {
  Histogram queue_wait;      // readiness/enqueue -> io_work start (the engine's wqlat)
  Histogram read_latency, write_latency, other_latency;  // capsule complete -> response queued
  Histogram backend_latency;
  // Arrival -> response handed to the socket, per opcode, and its stages.
  Histogram target_read_latency, target_write_latency, target_other_latency;
  Histogram stage_scheduling, stage_queue, stage_receive, stage_data_wait, stage_send;
};

struct alignas(64) QueueStats {
  QueueStats() = default;
  ~QueueStats();
  QueueStats(const QueueStats&) = delete;
  QueueStats& operator=(const QueueStats&) = delete;

  // --- Data path: written by the thread running the queue's io_work.
  Counter commands, read_bytes, write_bytes, pdus_rx, pdus_tx;
  // The latency histograms, nullptr until made: nothing is timed before. Any thread may read.
  QueueLatency* latency() const { return _latency.load(std::memory_order_acquire); }
  // The writer thread, once (at Connect: control path): makes them; later calls return them.
  QueueLatency& make_latency();
  // Worker index running the queue's io_work now (-1 = none); set by the executor.
  std::atomic<int> worker{-1};
  // The CPU the queue's packets arrive on (SO_INCOMING_CPU), read at accept and at each
  // placement (a const query of the queue, hence mutable); -1 = unknown.
  mutable std::atomic<int> incoming_cpu{-1};

  // --- Identity: any thread, any time (control path; takes a mutex).
  void set_identity(QueueIdentity id);
  QueueIdentity identity() const;

  // Cumulative values now, identity included (a QueueRow whose counters are totals).
  QueueRow read() const;

 private:
  std::atomic<QueueLatency*> _latency{nullptr};
  alignas(64) mutable std::mutex _mu;
  QueueIdentity _id;
};

struct alignas(64) WorkerStats {
  explicit WorkerStats(unsigned index = 0, std::string name = {});

  // --- Data path: written by the worker thread.
  Counter io_work_passes;  // io_work calls
  Counter busy_passes;     // loop passes that found work
  Counter idle_passes;     // loop passes that found none (pollers)
  Counter idle_poll_ns;    // time spent in those passes while spinning, measured (pollers)
  Counter wakeups;         // returns from a blocking wait
  // gettid() of the thread, set by the thread when it starts (0 = not running). The sampler
  // reads its CPU time from /proc/self/task/TID/schedstat.
  std::atomic<int> tid{0};
  // Queues placed on this worker now; set by the executor.
  std::atomic<uint32_t> queues{0};

  // --- Identity: any thread (control path; takes a mutex). cpus_allowed is the affinity the
  // engine asked for (empty = any), changed on every re-pin.
  unsigned index() const { return _index; }
  void set_name(std::string name);
  std::string name() const;
  void set_cpus_allowed(std::vector<unsigned> cpus);
  std::vector<unsigned> cpus_allowed() const;

  // Cumulative values now (cpu_ns left 0: the sampler reads it from the kernel).
  WorkerRow read() const;

 private:
  const unsigned _index;
  alignas(64) mutable std::mutex _mu;
  std::string _name;
  std::vector<unsigned> _cpus;
};

// Row arithmetic over cumulative QueueRows (identity fields are left alone).
void accumulate(QueueRow& into, const QueueRow& from);    // counters +=, histograms merged
QueueRow difference(const QueueRow& now, const QueueRow& before);  // the interval between

// One collect(): every live source's cumulative values. `source` is a registration number,
// unique for the registry's lifetime (a queue_id or worker index may come back, a source
// never does): the sampler pairs intervals by it.
struct QueueSample {
  uint64_t source = 0;
  QueueRow row;
};
struct WorkerSample {
  uint64_t source = 0;
  WorkerRow row;
};
struct Collection {
  std::vector<QueueSample> queues;    // ordered by queue_id, then source
  std::vector<WorkerSample> workers;  // ordered by index, then source
  QueueRow retired;                   // final values of every queue removed so far
  QueueRow total() const;             // retired + every live queue: never goes backwards
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The registry does not own the blocks: a block must outlive its registration. Add a block
  // once (its cumulative values count from zero, writes before add() included); adding one
  // already registered is ignored.
  void add_queue(QueueStats* q);
  // Folds the block's final values into the retired totals. Call after the queue's last
  // data-path write (e.g. from retire()); later writes are not counted. Unknown blocks are
  // ignored. May wait for a running collect().
  void remove_queue(QueueStats* q);
  void add_worker(WorkerStats* w);
  void remove_worker(WorkerStats* w);  // a worker's counters are not kept after removal

  Collection collect() const;
  size_t queue_count() const;
  size_t worker_count() const;

 private:
  template <typename T>
  struct Entry {
    uint64_t source;
    T* block;
  };
  mutable std::mutex _mu;
  uint64_t _next_source = 1;
  std::vector<Entry<QueueStats>> _queues;
  std::vector<Entry<WorkerStats>> _workers;
  QueueRow _retired;
};

}  // namespace stats
