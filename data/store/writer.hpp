#pragma once
// data::Writer: the thread between the sampler and the disk. submit() (called on the sampler
// thread) only appends to a bounded queue and never waits for I/O; the writer thread takes
// whatever is queued and commits it as one transaction (Store::write_batch).
//
// When the disk falls behind (or fails: full, read-only), the queue fills up and the OLDEST
// queued snapshot is dropped for each new one, and counted: stats().dropped, also stamped on
// the run row (runs.dropped_intervals). A failed commit keeps its snapshots queued and is
// retried after a pause, so writing resumes by itself once space returns; the failure is
// visible in stats().write_errors and stats().last_error.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/store/store.hpp"

namespace data {

struct WriterOptions {
  size_t queue_capacity = 120;        // snapshots held for a slow disk: 2 minutes at 1 s intervals
  size_t event_capacity = 10'000;     // events held (same drop-oldest rule, counted apart)
  size_t max_batch = 256;             // snapshots per transaction at most
  std::chrono::milliseconds retry_pause{200};  // after a failed commit
  bool per_queue_histograms = true;
  // Called on the writer thread after each successful commit with the highest snapshot seq
  // committed so far (the crash test logs it; `serve` does not need it).
  std::function<void(uint64_t last_seq)> on_commit;
};

struct WriterStats {
  uint64_t submitted = 0;       // snapshots handed to submit()
  uint64_t written = 0;         // snapshots committed
  uint64_t dropped = 0;         // snapshots dropped because the queue was full
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;
  uint64_t batches = 0;         // successful transactions
  uint64_t write_errors = 0;    // failed transactions (each retried)
  uint64_t last_committed_seq = 0;
  size_t queued = 0;
  bool failing = false;         // the latest transaction failed (cleared by a success)
  std::string last_error;       // of the latest failed transaction (kept after recovery)
};

class Writer {
 public:
  // Starts the thread; rows go to run (Store::begin_run). store must outlive the writer.
  Writer(Store& store, int64_t run, WriterOptions opts = {});
  ~Writer();  // stop()
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Never blocks on I/O: a short lock to queue (dropping the oldest when full). Any thread.
  void submit(stats::Snapshot s);
  void submit_event(stats::Event e);

  WriterStats stats() const;
  // Waits until everything queued so far is committed, or timeout (false). For tests and
  // shutdown; a failing disk makes it time out.
  bool flush(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Stops accepting, tries once more to commit what is queued, stamps the dropped count on the
  // run, joins. Idempotent.
  void stop();
  // Test hook: while paused the thread commits nothing (a disk that fell behind).
  void pause(bool paused);

 private:
  void run();
  bool commit(std::vector<stats::Snapshot>& snaps, std::vector<stats::Event>& events);

  Store& _store;
  const int64_t _run;
  const WriterOptions _opts;
  mutable std::mutex _mu;
  std::condition_variable _cv;       // work queued, stop, unpause
  std::condition_variable _idle_cv;  // a batch finished (flush waits)
  std::deque<stats::Snapshot> _queue;
  std::deque<stats::Event> _events;
  size_t _in_flight = 0;  // taken from the queues by the thread, not yet committed
  bool _stop = false;
  bool _paused = false;
  WriterStats _stats;
  std::thread _thread;
};

}  // namespace data
