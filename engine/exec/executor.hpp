#pragma once
// An executor decides which thread runs which queue's io_work and when. It knows no protocol
// (DESIGN.md "Execution models"). One interface; one folder per implementation.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/system/topology.hpp"

namespace stats {
class Registry;
}

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
  // A pass limited to max_pdus received PDUs (the inline model's notification-context batch).
  virtual Progress io_work_limited(unsigned max_pdus) {
    (void)max_pdus;
    return io_work();
  }
  // The CPU that received this queue's packets (SO_INCOMING_CPU), -1 if unknown.
  virtual int incoming_cpu() const { return -1; }
  // Admin queues are counted apart by the poll model's placement (known after Connect).
  virtual bool is_admin() const { return false; }
  // Told by executors that place a task on one worker (bound, poll): its index, for the stats.
  virtual void placed(int worker) { (void)worker; }
  // Whether an io_work with nothing to do finds that out without a syscall (an io_uring socket:
  // the ring's shared flags say whether the kernel holds completions for it). A busy-polling
  // worker runs such a task on every pass instead of asking epoll about it. Fixed for the
  // task's life: executors ask once, at attach.
  virtual bool polls_in_memory() const { return false; }

  // Executor-private bookkeeping, kept in the task so scheduling never allocates.
  std::atomic<bool> exec_scheduled{false};
  Task* exec_next = nullptr;
  int exec_worker = -1;
  // CLOCK_MONOTONIC ns when the task last became ready (event, kick or requeue); the queue
  // turns "now - exec_ready_ns" at io_work start into its queue-wait histogram (our wqlat).
  std::atomic<uint64_t> exec_ready_ns{0};
  // Set by io_work: whether the pass moved anything (busy-polling executors sleep after a
  // period of passes that did not).
  bool exec_did_work = false;
  // Set by io_work: the pass left data unsent because the socket was full (EAGAIN or a short
  // send) and only the socket draining will let it go on. Executors that re-arm fds one-shot
  // arm EPOLLOUT exactly then; an idle task whose socket is writable must not be woken by it.
  bool exec_tx_blocked = false;
  // Set at attach by executors that re-arm fds level-triggered (multi-worker unbound pods,
  // EPOLLONESHOT): such a re-arm fires at once for a completion eventfd whose count is
  // non-zero, so io_work must consume the count before it reports idle. Edge-triggered
  // watchers never need that read, and it is a syscall per pass.
  bool exec_level_rearm = false;
  // Set by executors when a readiness event of the task said the peer shut its side down
  // (EPOLLRDHUP, EPOLLHUP, EPOLLERR); never cleared. Edge-triggered watchers get one event for
  // data and an end of stream that arrived together, and nothing after it: a read that took
  // the data and came back short then does not mean the socket is drained, the end of stream
  // still waits behind it (a host vanishing mid-transfer left its queue open for good).
  std::atomic<bool> exec_peer_closed{false};
};

// Monotonic nanoseconds, the clock of every latency and wait measurement in the engine.
uint64_t monotonic_ns();

struct ExecStats {
  uint64_t io_work_passes = 0;
  uint64_t wakeups = 0;
  uint64_t busy_passes = 0;
  uint64_t idle_passes = 0;
  uint64_t idle_poll_ns = 0;  // time spinning without work (executors that busy-poll)
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  // Starts serving task; it runs once immediately.
  virtual void attach(Task& task) = 0;
  // Thread-safe: make task's io_work run soon (a kick from another queue or the control plane).
  // A schedule() may race with the pass that returns closed; from then on it is dropped. The
  // caller keeps the task alive for the duration of the call (retire() may free it).
  virtual void schedule(Task& task) = 0;
  // Called from the task's own io_work when an fd appeared after attach (the backend ring).
  virtual void watch_fd(Task& task, int fd) = 0;
  // Stops all workers; every attached task is retired. Idempotent.
  virtual void stop() = 0;

  // Live switching: removes task at its next io_work boundary (never while io_work runs) and
  // then calls handover(task) exactly once, on some thread, after which this executor no
  // longer touches the task. task.exec_scheduled is left true so that a kick racing with the
  // handover is dropped; the next executor's attach() clears it and runs io_work once, which
  // picks up whatever the dropped kick was for.
  virtual void release(Task& task, std::function<void(Task&)> handover) = 0;
  // Tasks currently attached (control path; for switching every queue).
  virtual std::vector<Task*> tasks() const = 0;
  // Whether every io_work of a task runs on one thread for as long as the task is attached
  // here (then the handover of release() runs on that thread too): a queue may then give its
  // io_uring to that thread alone (IoContext::set_owned).
  virtual bool keeps_tasks_on_one_thread() const { return false; }
  // Whether its threads spin between events rather than sleep in the kernel (poll): a queue's
  // owned ring then defers completion work until asked, since the spin asks anyway.
  virtual bool busy_polls() const { return false; }
  // The executor's threads: tid, name, the CPUs each is allowed.
  struct ThreadInfo {
    int tid = 0;
    std::string name;
    std::string role;
    std::vector<unsigned> cpus;
  };
  virtual std::vector<ThreadInfo> threads() const = 0;
};

enum class Placement : uint8_t {
  round_robin,   // queues spread in turn
  incoming_cpu,  // the worker whose CPU received the queue's packets (bound)
  least_loaded,  // fewest I/O queues, then fewest queues; admin queues counted apart (poll)
};

using Priority = sys::ThreadPriority;

struct EventExecutorConfig {
  unsigned threads = 0;  // 0 = one per online CPU (ignored when worker_cpus is set)
  // Per-worker affinity: worker i may run on worker_cpus[i] (empty list = anywhere). When set,
  // its size is the number of workers.
  std::vector<std::vector<unsigned>> worker_cpus;
  Placement placement = Placement::round_robin;
  uint64_t busy_poll_ns = 0;  // > 0: poll queues without sleeping for this long after work
  // The poll window follows the gaps between bursts, up to busy_poll_ns (event/idle_poll_window.hpp)
  bool adaptive_poll = false;
  Priority priority = Priority::normal;
  std::string mode = "event";       // name() of the executor ("bound", "poll", "event")
  // Where workers publish their statistics blocks (the sampler's per-worker rows); optional.
  stats::Registry* registry = nullptr;
  std::string thread_prefix = "nvmt-ev";

  // Whether workers spin on through every gap up to busy_poll_ns (poll, bound with a fixed period)
  // rather than mostly sleep (bound, adaptive or without a period): Executor::busy_polls.
  bool spins() const { return busy_poll_ns > 0 && !adaptive_poll; }
};

// Event-driven worker threads: epoll per worker, queues spread round-robin, one io_work per
// queue, budget exhaustion re-queues the task on the same worker.
std::unique_ptr<Executor> make_event_executor(const EventExecutorConfig& cfg);

}  // namespace exec
