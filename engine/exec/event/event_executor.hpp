#pragma once
// The "event" execution model: N worker threads, each with its own epoll set and an eventfd for
// cross-thread wake-ups. Queues are spread round-robin at attach and stay on their worker; a
// pass that hits its budget (Progress::more) re-runs on the same worker before it blocks again.
// Data path (io_work, schedule, watch_fd): no lock and no allocation. attach/stop: control path.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/exec/executor.hpp"

namespace exec {

namespace event {
class Worker;
}

class EventExecutor final : public Executor {
 public:
  // Starts cfg.threads workers (0 = one per CPU the process may run on). Throws std::system_error when an
  // epoll set, an eventfd or a thread cannot be created.
  explicit EventExecutor(const EventExecutorConfig& cfg);
  ~EventExecutor() override;  // stop()
  EventExecutor(const EventExecutor&) = delete;
  EventExecutor& operator=(const EventExecutor&) = delete;

  std::string name() const override { return _cfg.mode; }
  // Any thread. The task runs once on its worker soon after. After stop(), the task is retired
  // at once on the calling thread.
  void attach(Task& task) override;
  // Any thread; at most one pending run per task (task.exec_scheduled).
  void schedule(Task& task) override;
  // Only from inside task.io_work() on its worker. The task runs once more afterwards, since an
  // edge may have passed before the fd was added.
  void watch_fd(Task& task, int fd) override;
  // Any thread except a worker of this executor. Retires every attached task, joins workers.
  void stop() override;
  void release(Task& task, std::function<void(Task&)> handover) override;
  std::vector<Task*> tasks() const override;
  std::vector<ThreadInfo> threads() const override;
  // A task stays on the worker placement gave it (release's handover runs there too).
  bool keeps_tasks_on_one_thread() const override { return true; }
  // As configured at creation: a live change of the busy-poll period keeps the queues' rings.
  bool busy_polls() const override { return _busy_polls; }
  // Live, in place: new CPUs per worker (same worker count), priority and busy-poll period.
  // Returns an error message, empty on success.
  std::string reconfigure(const EventExecutorConfig& cfg);

  unsigned worker_count() const { return static_cast<unsigned>(_workers.size()); }
  // One entry per worker, read with relaxed loads (a live, not a consistent, snapshot).
  std::vector<ExecStats> stats() const;
  // epoll_wait calls per worker (ExecStats has no field for it yet).
  std::vector<uint64_t> epoll_waits() const;

 private:
  unsigned pick_worker(Task& task);

  // mode and placement are fixed at creation; the CPU lists and poll settings change in
  // reconfigure() and are read at attach (pick_worker) under _cfg_mu.
  EventExecutorConfig _cfg;
  mutable std::mutex _cfg_mu;
  const bool _busy_polls;
  std::vector<std::unique_ptr<event::Worker>> _workers;
  std::atomic<unsigned> _next_worker{0};
  std::mutex _stop_mu;
  bool _stopped = false;
};

}  // namespace exec
