#pragma once
// The "inline" execution model, after irq_poll: "first batch inline, rest deferred". One
// notification thread waits on an epoll set holding every queue's fds; when a queue becomes
// ready and nobody runs it, the notification thread itself runs a pass limited to
// inline_budget PDUs (Task::io_work_limited). If that leaves work, the queue is handed to its
// deferred worker, which runs full io_work passes until the queue is idle. Readiness of a
// queue a worker is running just asks that worker for another pass. Kicks (schedule) go to the
// deferred worker.
//
// Data path (io_work, schedule, watch_fd, events): no lock and no allocation. attach, release,
// tasks, threads, stop: control path.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/exec/executor.hpp"

namespace exec {

struct InlineConfig {
  unsigned threads = 0;        // deferred workers; 0 = one per CPU of cpus
  std::vector<unsigned> cpus;  // mask; empty = every online CPU
  unsigned inline_budget = 8;  // PDUs the notification thread handles per readiness
  stats::Registry* registry = nullptr;  // where the threads publish their statistics
};

namespace inline_exec {
class Notifier;
class Worker;
struct Slot;
class SlotTable;
}  // namespace inline_exec

class InlineExecutor final : public Executor {
 public:
  // Checks cfg against this machine (CPUs online, budget > 0). Empty = valid.
  static std::string check(const InlineConfig& cfg);

  // Starts the notification thread (pinned to the mask) and the deferred workers (worker i
  // pinned to CPU i of the mask, modulo its size) before returning. Throws
  // std::invalid_argument when check() fails, std::system_error when an fd or a thread cannot
  // be created.
  explicit InlineExecutor(const InlineConfig& cfg);
  ~InlineExecutor() override;  // stop()
  InlineExecutor(const InlineExecutor&) = delete;
  InlineExecutor& operator=(const InlineExecutor&) = delete;

  std::string name() const override { return "inline"; }
  // Any thread. The task gets the deferred worker on task.incoming_cpu() (round-robin when
  // unknown) and runs a first pass on the notification thread. After stop() the task is
  // retired at once.
  void attach(Task& task) override;
  // Any thread. Dropped while task.exec_scheduled is set (released to another executor).
  void schedule(Task& task) override;
  // Only from inside the task's io_work. The task runs once more afterwards.
  void watch_fd(Task& task, int fd) override;
  // Any thread except one of this executor's. Joins every thread, then retires every attached
  // task on the calling thread; a release still pending is dropped (the task retired).
  void stop() override;
  // Same contract as UnboundExecutor::release: handover runs on the calling thread when the task
  // is idle, otherwise on the thread running it (notification or worker) after its pass; a task
  // that closes first is retired instead.
  void release(Task& task, std::function<void(Task&)> handover) override;
  std::vector<Task*> tasks() const override;
  // The notification thread first, then the workers.
  std::vector<ThreadInfo> threads() const override;

  unsigned inline_budget() const { return _budget; }
  // threads() order. For the notification thread io_work_passes counts inline passes.
  std::vector<ExecStats> stats() const;
  // Times the notification thread handed a queue to a deferred worker.
  uint64_t deferrals() const;

 private:
  friend class inline_exec::Notifier;
  friend class inline_exec::Worker;

  void start_threads();
  inline_exec::Slot& slot_of(Task& task) const;
  unsigned pick_worker(const Task& task);
  void defer(inline_exec::Slot& slot);
  bool detach(inline_exec::Slot& slot, Task& task, std::function<void(Task&)>* handover);
  void retire_closed(inline_exec::Slot& slot);
  void honour_release(inline_exec::Slot& slot);
  void watch(inline_exec::Slot& slot, unsigned index, int fd);
  void unwatch(const Task& task);

  const unsigned _budget;
  std::vector<unsigned> _mask;
  std::vector<int> _worker_of_cpu;  // CPU number → deferred worker, -1 none
  int _epfd = -1;
  std::unique_ptr<inline_exec::SlotTable> _slots;
  std::unique_ptr<inline_exec::Notifier> _notifier;
  std::vector<std::unique_ptr<inline_exec::Worker>> _workers;
  std::atomic<unsigned> _next_worker{0};
  std::atomic<bool> _stopping{false};

  mutable std::mutex _ctl_mu;   // attach/detach/release bookkeeping, never per I/O
  std::vector<Task*> _attached;  // guarded by _ctl_mu
  bool _stopped = false;         // guarded by _ctl_mu
  std::mutex _stop_mu;           // serialises stop()
};

// Builds an InlineExecutor (same exceptions as its constructor).
std::unique_ptr<Executor> make_inline_executor(const InlineConfig& cfg);

}  // namespace exec
