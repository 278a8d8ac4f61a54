#pragma once
// An executor decides which thread runs which queue's io_work and when. It knows no protocol
// (DESIGN.md "Execution models"). One interface; one folder per implementation.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace exec {

enum class Progress : uint8_t {
  idle,    // nothing more to do until an fd becomes ready or schedule() is called
  more,    // budget or deadline hit with work left: run again soon
  closed,  // the queue is finished: the executor detaches it and calls retire()
};

// A queue as an executor sees it.
class Task {
 public:
  virtual ~Task() = default;
  // One budgeted pass: receive, execute, send, reap completions. Never runs concurrently
  // with itself.
  virtual Progress io_work() = 0;
  // The fds whose readiness means work: the socket and the backend completion eventfd
  // (-1 for none). fds[1] may become valid later; the task calls executor.watch_fd() then.
  virtual std::array<int, 2> fds() const = 0;
  // Called once on the executor thread after the task was detached because io_work returned
  // closed (or the executor stopped): the owner may destroy the task now.
  virtual void retire() = 0;

  // Executor-private bookkeeping, kept in the task so scheduling never allocates.
  std::atomic<bool> exec_scheduled{false};
  Task* exec_next = nullptr;
  int exec_worker = -1;
};

struct ExecStats {
  uint64_t io_work_passes = 0;
  uint64_t wakeups = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  // Starts serving task; it runs once immediately.
  virtual void attach(Task& task) = 0;
  // Thread-safe: make task's io_work run soon (a kick from another queue or the control plane).
  virtual void schedule(Task& task) = 0;
  // Called from the task's own io_work when an fd appeared after attach (the backend ring).
  virtual void watch_fd(Task& task, int fd) = 0;
  // Stops all workers; every attached task is retired. Idempotent.
  virtual void stop() = 0;
};

struct EventExecutorConfig {
  unsigned threads = 0;  // 0 = one per online CPU
};

// Event-driven worker threads: epoll per worker, queues spread round-robin, one io_work per
// queue, budget exhaustion re-queues the task on the same worker.
std::unique_ptr<Executor> make_event_executor(const EventExecutorConfig& cfg);

}  // namespace exec
