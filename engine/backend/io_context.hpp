#pragma once
// Per-queue asynchronous I/O context. Each queue owns one; it is used only by the thread
// running that queue's io_work, so submissions and completions need no locks and no handoff
// between threads. The io_uring is created on first use by an async backend; its eventfd is
// what the executor watches to re-arm the queue's io_work when completions arrive.
#include <cstdint>
#include <functional>

struct io_uring;

namespace backend {

struct Io;

class IoContext {
 public:
  explicit IoContext(unsigned entries);
  ~IoContext();
  IoContext(const IoContext&) = delete;
  IoContext& operator=(const IoContext&) = delete;

  // The ring, created on first call (nullptr if io_uring cannot be set up; errno kept).
  io_uring* ring();
  // eventfd signalled on completions; -1 until the ring exists.
  int notify_fd() const { return _event_fd; }
  // Submits queued SQEs in one syscall (io_work calls this once per pass: batching).
  void flush_submissions();
  // Reaps up to max completions, calling done(io) for each (io.result set). Returns the count.
  unsigned reap(unsigned max, const std::function<void(Io&)>& done);
  // Operations submitted and not yet reaped.
  unsigned inflight() const { return _inflight; }
  void note_submitted() { ++_inflight; ++_unsubmitted; }

 private:
  unsigned _entries;
  io_uring* _ring = nullptr;
  int _event_fd = -1;
  unsigned _inflight = 0;
  unsigned _unsubmitted = 0;
  bool _setup_failed = false;
};

}  // namespace backend
