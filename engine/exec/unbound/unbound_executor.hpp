#pragma once
// The "unbound" execution model, after the kernel's WQ_UNBOUND workqueues with affinity_scope:
// a pool of workers restricted to a cpumask and split over affinity pods (cpu, smt, cache, numa
// or system). Each pod has one epoll set shared by its workers; a queue lives in the pod of the
// CPU that received its packets and any worker of that pod may run its io_work, never two at
// once. With strict, a pod's workers are pinned to the pod's CPUs; without, they start there
// and may run anywhere in the mask.
//
// Data path (io_work, schedule, watch_fd, events): no lock and no allocation. attach, release,
// tasks, threads, stop: control path.
#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/exec/executor.hpp"
#include "engine/system/topology.hpp"

namespace exec {

struct UnboundConfig {
  unsigned threads = 0;                             // 0 = one per CPU of cpus
  std::vector<unsigned> cpus;                       // worker cpumask; empty = every online CPU
  sys::AffinityScope scope = sys::AffinityScope::cache;
  bool strict = false;                              // workers never leave their pod's CPUs
  stats::Registry* registry = nullptr;              // where workers publish their statistics
};

namespace unbound {
class Pod;
class Worker;
struct Slot;
class SlotTable;
}  // namespace unbound

class UnboundExecutor final : public Executor {
 public:
  // Checks cfg against the host topology: every CPU online, a usable mask. Empty = valid.
  static std::string check(const UnboundConfig& cfg);

  // Starts the workers, pinned, before returning. Throws std::invalid_argument when check()
  // fails and std::system_error when an epoll set, an eventfd or a thread cannot be created.
  explicit UnboundExecutor(const UnboundConfig& cfg);
  ~UnboundExecutor() override;  // stop()
  UnboundExecutor(const UnboundExecutor&) = delete;
  UnboundExecutor& operator=(const UnboundExecutor&) = delete;

  std::string name() const override { return "unbound"; }
  // Any thread. Places the task in the pod of task.incoming_cpu() (round-robin over pods when
  // unknown or outside the mask) and runs it once. After stop() the task is retired at once.
  void attach(Task& task) override;
  // Any thread. Dropped while task.exec_scheduled is set (released to another executor).
  void schedule(Task& task) override;
  // Only from inside task.io_work(). The task runs once more afterwards.
  void watch_fd(Task& task, int fd) override;
  // Any thread except a worker of this executor. Retires every attached task on the calling
  // thread after the workers are joined; a release still pending is dropped (the task retired).
  void stop() override;
  // Any thread, once per attachment. handover runs on a worker of the task's pod, after its
  // pass; in pods of several workers it runs on the calling thread before release() returns
  // when the task is idle. A task whose io_work returns closed first is retired instead and
  // handover is never called.
  void release(Task& task, std::function<void(Task&)> handover) override;
  std::vector<Task*> tasks() const override;
  std::vector<ThreadInfo> threads() const override;
  // When every pod has one worker (threads = one per pod, e.g. scope cpu with one thread per
  // CPU, or a one-CPU mask) a task never leaves its pod's worker, so its queue may own its
  // io_uring as in the bound model.
  bool keeps_tasks_on_one_thread() const override;

  // The pods in use (after merging when there are fewer threads than pods), in worker order.
  const std::vector<std::vector<unsigned>>& pod_cpus() const { return _pod_cpus; }
  // One entry per worker in threads() order, read with relaxed loads (a live snapshot):
  // io_work passes, busy/idle passes (task.exec_did_work), returns from a blocking wait.
  std::vector<ExecStats> stats() const;

 private:
  friend class unbound::Pod;
  friend class unbound::Worker;

  void start_workers(unsigned threads);
  unbound::Slot& slot_of(Task& task) const;
  unsigned pick_pod(const Task& task);
  bool detach(unbound::Slot& slot, Task& task, std::function<void(Task&)>* handover);
  void retire_closed(unbound::Slot& slot);
  void honour_release(unbound::Slot& slot);

  std::vector<std::vector<unsigned>> _pod_cpus;
  std::vector<int> _pod_of_cpu;  // CPU number → pod index, -1 outside the mask
  std::vector<std::unique_ptr<unbound::Pod>> _pods;
  std::unique_ptr<unbound::SlotTable> _slots;
  std::atomic<unsigned> _next_pod{0};
  std::atomic<bool> _stopping{false};

  mutable std::mutex _ctl_mu;  // attach/detach/release bookkeeping, never per I/O
  std::vector<Task*> _attached;       // guarded by _ctl_mu
  bool _stopped = false;              // guarded by _ctl_mu
  std::mutex _stop_mu;                // serialises stop()
};

// Builds an UnboundExecutor (same exceptions as its constructor).
std::unique_ptr<Executor> make_unbound_executor(const UnboundConfig& cfg);

}  // namespace exec
