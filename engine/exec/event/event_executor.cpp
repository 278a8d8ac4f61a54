// Event executor: one epoll loop per worker thread (see event_executor.hpp).
//
// Per worker, every task sits in _tasks (attached, owned by this worker) and, while it has work,
// in one or more of:
//   - _ready   : tasks whose last pass returned more;
//   - _kicked  : schedule() called on this worker's own thread;
//   - _remote  : lock-free MPSC list, schedule() from other threads;
//   - the epoll set, whose events carry data.ptr = &task (nullptr = the worker's eventfd).
// Each loop iteration gathers them all into _batch and runs each task at most once (a task can
// be listed several times: an event and a schedule, say).
//
// task.exec_scheduled is a token: true exactly while the task sits on _kicked or _remote (it is
// on at most one). It is cleared when the worker takes the task off that list, just before the
// pass, never while the task is still listed: clearing it when a pass starts for another reason
// (an epoll event, more) would let a second schedule() push a task that is already on _remote,
// which corrupts the intrusive list. A schedule() after the take pushes again and costs at most
// one extra pass.
//
// Sleep protocol (no lost wake-up, no eventfd write while the worker is awake): the worker sets
// _sleeping, then re-checks _remote, then blocks; a producer pushes, then reads _sleeping, and
// writes the eventfd only if it made the list non-empty and the worker may sleep. Both pairs are
// seq_cst, so one side always sees the other.
#include "engine/exec/event/event_executor.hpp"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <thread>

#include "engine/exec/event/idle_poll_window.hpp"
#include "engine/exec/event/task_mpsc.hpp"
#include "engine/exec/hangup.hpp"
#include "engine/system/topology.hpp"
#include "engine/stats/registry.hpp"

namespace exec {
namespace event {

namespace {

constexpr int kMaxEvents = 64;  // epoll events taken per wait
// A polling worker whose queues all poll in memory (Task::polls_in_memory) runs them every pass
// and asks epoll once in this many passes, only to drain it: its events are edge-triggered and
// do not pile up, and kicks come through the lock-free lists.
constexpr unsigned kPollPassesPerEpoll = 16;
// Slack on top of the per-task bound of the run lists, so they never grow on the data path.
constexpr size_t kListSlack = 16;
constexpr uint32_t kTaskEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;

[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "nvmetune event executor: %s (errno %d)\n", what, errno);
  std::abort();
}

std::system_error sys_error(const char* what) {
  return std::system_error(errno, std::generic_category(), what);
}

}  // namespace

// Written only by the worker thread (plain load + store, no locked RMW), read by anyone.
struct alignas(64) WorkerCounters {
  std::atomic<uint64_t> epoll_waits{0};
};

inline void bump(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

class Worker {
 public:
  Worker(unsigned index, std::vector<unsigned> cpus, const EventExecutorConfig& cfg);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Returns once the thread runs, pinned and prioritised: threads() is then accurate.
  void start() {
    _thread = std::thread([this] { run(); });
    while (_tid.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  }
  void join() {
    if (_thread.joinable()) _thread.join();
  }
  bool on_this_thread() const;

  // Any thread (control path). enqueue_attach returns false once the worker is stopping.
  bool enqueue_attach(Task& task);
  bool enqueue_release(Task& task, std::function<void(Task&)> handover);
  void request_stop();
  // Control path, any thread: re-pin and re-prioritise the running thread in place.
  std::string set_cpus(std::vector<unsigned> cpus);
  std::string set_priority(Priority p);
  void set_busy_poll(uint64_t ns, bool adaptive) {
    _busy_poll_ns.store(ns, std::memory_order_relaxed);
    _adaptive_poll.store(adaptive, std::memory_order_relaxed);
  }
  Executor::ThreadInfo info() const;
  std::vector<Task*> tasks_snapshot() const;
  size_t task_count() const { return _task_count.load(std::memory_order_relaxed); }
  // Any thread other than this worker; task.exec_scheduled already set by the caller.
  void push_remote(Task& task) {
    if (_remote.push(task) && _sleeping.load(std::memory_order_seq_cst)) wake();
  }
  // This worker only; task.exec_scheduled already set by the caller.
  void push_local(Task& task) { _kicked.push_back(&task); }
  void watch(Task& task, int fd);

  ExecStats stats() const {
    return {_stats.io_work_passes.get(), _stats.wakeups.get(), _stats.busy_passes.get(), _stats.idle_passes.get(),
            _stats.idle_poll_ns.get()};
  }
  uint64_t epoll_waits() const { return _counters.epoll_waits.load(std::memory_order_relaxed); }

 private:
  void run();
  int wait_events(epoll_event* events);
  void gather(const epoll_event* events, int n);
  void take_scheduled(Task* task);
  bool take_control();
  void run_batch();
  void run_task(Task& task);
  void detach(Task& task);
  void release_now(Task& task, const std::function<void(Task&)>& handover);
  void take_off_lists(Task& task);
  void drop_from_lists(Task& task);
  void take_pending_push(Task& task);
  void shutdown();
  void add_fd(Task& task, int fd);
  void register_task(Task& task);
  void unregister_task(Task& task);
  void reserve_lists();
  void publish_tasks();
  static void mark_ready(Task& t, uint64_t now) {
    if (t.exec_ready_ns.load(std::memory_order_relaxed) == 0) t.exec_ready_ns.store(now, std::memory_order_relaxed);
  }
  void wake();
  void drain_eventfd();

  // Touched by producers: kept on its own cache line.
  alignas(64) TaskMpsc _remote;
  std::atomic<bool> _sleeping{false};

  // Control path.
  alignas(64) mutable std::mutex _ctl_mu;
  std::vector<Task*> _ctl_attach;  // guarded by _ctl_mu
  std::vector<std::pair<Task*, std::function<void(Task&)>>> _ctl_release;  // guarded by _ctl_mu
  std::vector<Task*> _task_view;   // guarded by _ctl_mu: what tasks() reports
  bool _ctl_stop = false;          // guarded by _ctl_mu
  std::atomic<bool> _ctl_pending{false};

  // Set at construction, then read-only (producers write to _evfd).
  alignas(64) int _epfd = -1;
  int _evfd = -1;
  std::string _name;
  std::vector<unsigned> _cpus;   // guarded by _ctl_mu after start
  Priority _priority;            // guarded by _ctl_mu after start
  std::atomic<int> _tid{0};
  std::atomic<uint64_t> _busy_poll_ns{0};
  std::atomic<bool> _adaptive_poll{false};
  std::atomic<size_t> _task_count{0};
  uint64_t _last_work_ns = 0;    // worker thread only
  uint64_t _woke_ns = 0;         // worker thread only: when this iteration's wait returned
  uint64_t _poll_ceiling_ns = 0;  // worker thread only: _busy_poll_ns as of this iteration
  bool _poll_adapts = false;     // worker thread only: _adaptive_poll as of this iteration
  IdlePollWindow _poll_window;   // worker thread only
  bool _polling = false;         // worker thread only: this pass busy-polls
  // Worker thread only, for the measured idle-poll time (stats::cpu_split): this iteration's
  // wait could not block, and the last iteration spun (polled, and no pass of it worked: its
  // _last_work_ns is older than its _woke_ns).
  bool _wait_spins = false;
  bool _spun = false;
  unsigned _poll_passes = 0;     // worker thread only: polling passes since the last epoll_wait

  // Worker thread only.
  std::vector<Task*> _tasks;   // attached to this worker
  std::vector<Task*> _in_memory;  // those of _tasks that poll in memory (set with publish_tasks)
  std::vector<Task*> _ready;   // returned more: run before the next blocking wait
  std::vector<Task*> _kicked;  // scheduled from this thread (exec_scheduled set)
  std::vector<Task*> _batch;   // this iteration's run list, in arrival order
  std::vector<Task*> _sorted;  // _batch sorted and unique, to run each task once
  std::vector<uint8_t> _ran;   // parallel to _sorted
  std::thread _thread;

  WorkerCounters _counters;
  stats::WorkerStats _stats;   // written by this worker only; read by the sampler
  stats::Registry* _registry;
};

namespace {
thread_local const Worker* tl_worker = nullptr;
}

bool Worker::on_this_thread() const { return tl_worker == this; }

Worker::Worker(unsigned index, std::vector<unsigned> cpus, const EventExecutorConfig& cfg)
    : _cpus(std::move(cpus)), _priority(cfg.priority), _busy_poll_ns(cfg.busy_poll_ns),
      _adaptive_poll(cfg.adaptive_poll),
      _stats(index, cfg.thread_prefix + "/" + std::to_string(index)), _registry(cfg.registry) {
  _name = _stats.name();
  _stats.set_cpus_allowed(_cpus);
  _epfd = epoll_create1(EPOLL_CLOEXEC);
  if (_epfd < 0) throw sys_error("epoll_create1");
  _evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (_evfd < 0) {
    auto err = sys_error("eventfd");
    close(_epfd);
    throw err;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: drained by drain_eventfd()
  ev.data.ptr = nullptr;
  if (epoll_ctl(_epfd, EPOLL_CTL_ADD, _evfd, &ev) < 0) {
    auto err = sys_error("epoll_ctl(eventfd)");
    close(_evfd);
    close(_epfd);
    throw err;
  }
  reserve_lists();
}

Worker::~Worker() {
  join();
  close(_evfd);
  close(_epfd);
}

void Worker::wake() {
  const uint64_t one = 1;
  // EAGAIN means the counter is saturated: the worker is already due to wake.
  if (write(_evfd, &one, sizeof one) < 0 && errno != EAGAIN) fatal("eventfd write");
}

void Worker::drain_eventfd() {
  uint64_t count;
  if (read(_evfd, &count, sizeof count) == sizeof count) _stats.wakeups.add();
}

bool Worker::enqueue_attach(Task& task) {
  {
    std::lock_guard lock(_ctl_mu);
    if (_ctl_stop) return false;
    _ctl_attach.push_back(&task);
    _ctl_pending.store(true, std::memory_order_release);
  }
  wake();
  return true;
}

bool Worker::enqueue_release(Task& task, std::function<void(Task&)> handover) {
  {
    std::lock_guard lock(_ctl_mu);
    if (_ctl_stop) return false;
    _ctl_release.emplace_back(&task, std::move(handover));
    _ctl_pending.store(true, std::memory_order_release);
  }
  wake();
  return true;
}

std::string Worker::set_cpus(std::vector<unsigned> cpus) {
  std::lock_guard lock(_ctl_mu);
  _cpus = std::move(cpus);
  _stats.set_cpus_allowed(_cpus);
  // Empty = no placement asked for: leave the thread where it is.
  return _tid.load() && !_cpus.empty() ? sys::pin_thread(_thread.native_handle(), _cpus) : std::string();
}

std::string Worker::set_priority(Priority p) {
  std::lock_guard lock(_ctl_mu);
  _priority = p;
  const int tid = _tid.load();
  return tid ? sys::set_thread_priority(tid, p) : std::string();
}

Executor::ThreadInfo Worker::info() const {
  std::lock_guard lock(_ctl_mu);
  return {_tid.load(), _name, "worker", _cpus};
}

std::vector<Task*> Worker::tasks_snapshot() const {
  std::lock_guard lock(_ctl_mu);
  return _task_view;
}

void Worker::request_stop() {
  {
    std::lock_guard lock(_ctl_mu);
    _ctl_stop = true;
    _ctl_pending.store(true, std::memory_order_release);
  }
  wake();
}

void Worker::run() {
  tl_worker = this;
  pthread_setname_np(pthread_self(), _name.substr(0, 15).c_str());
  {
    std::lock_guard lock(_ctl_mu);
    const int tid = sys::current_tid();
    // Failing to pin or prioritise is reported by the control plane; the worker still runs.
    if (!_cpus.empty()) (void)sys::pin_current_thread(_cpus);
    (void)sys::set_thread_priority(tid, _priority);
    _stats.tid.store(tid);
    if (_registry) _registry->add_worker(&_stats);
    _tid.store(tid);
  }

  std::array<epoll_event, kMaxEvents> events;
  for (;;) {
    int n = wait_events(events.data());
    gather(events.data(), n);
    if (_ctl_pending.load(std::memory_order_relaxed) && !take_control()) break;
    run_batch();
    // A polling pass that found no queue to run is the poller spinning (stats::cpu_split).
    if (_polling && _batch.empty()) _stats.idle_passes.add();
    _spun = _polling && _last_work_ns < _woke_ns;
  }
  shutdown();
  if (_registry) _registry->remove_worker(&_stats);
  tl_worker = nullptr;
}

int Worker::wait_events(epoll_event* events) {
  int timeout = 0;
  // The poll settings are read once per iteration; the busy passes that follow use these copies.
  _poll_ceiling_ns = _busy_poll_ns.load(std::memory_order_relaxed);
  _poll_adapts = _adaptive_poll.load(std::memory_order_relaxed);
  // Busy-polling asks epoll with a zero timeout on every pass and runs only the queues it
  // names (plus those with work left or kicked), as SPDK's posix sock does. Running every
  // queue's recv() instead costs a syscall per idle queue (4k randread qd32, one queue: 7 recv()s
  // in 8 found nothing), and each recv() locks the socket, so segments the host sends meanwhile
  // wait in its backlog for this CPU. epoll's readiness check takes no socket lock.
  // Queues that poll in memory (io_uring) run on every polling pass instead (gather): a worker
  // with only those asks epoll once in kPollPassesPerEpoll passes.
  const uint64_t window_ns = _poll_window.window_ns(_poll_ceiling_ns, _poll_adapts);
  _polling = window_ns > 0 && monotonic_ns() - _last_work_ns < window_ns;
  _wait_spins = true;
  if (_polling && _in_memory.size() == _tasks.size() && ++_poll_passes < kPollPassesPerEpoll) return 0;
  _poll_passes = 0;
  if (!_polling && _ready.empty() && _kicked.empty()) {
    _sleeping.store(true, std::memory_order_seq_cst);
    if (_remote.empty()) timeout = -1;
  }
  _wait_spins = timeout == 0;
  bump(_counters.epoll_waits);
  int n = epoll_wait(_epfd, events, kMaxEvents, timeout);
  _sleeping.store(false, std::memory_order_relaxed);
  if (n < 0) {
    if (errno != EINTR) fatal("epoll_wait");
    n = 0;
  }
  return n;
}

// Takes a task off _kicked or _remote into this iteration's batch. acq_rel: a scheduler that
// found the token still set relies on the coming pass seeing what it wrote before schedule().
void Worker::take_scheduled(Task* task) {
  task->exec_scheduled.exchange(false, std::memory_order_acq_rel);
  _batch.push_back(task);
}

// Builds _batch: tasks that returned more first (they waited longest), then local and remote
// kicks in FIFO order, then tasks with epoll events, then (polling) tasks that poll in memory.
void Worker::gather(const epoll_event* events, int n) {
  const uint64_t now = monotonic_ns();
  // From the last iteration's clock read to this one, with no wait that could sleep between:
  // the spin of a pass that found nothing, measured rather than inferred from pass counts (an
  // empty pass costs a fraction of a busy one). No clock read of its own.
  if (_spun && _wait_spins) _stats.idle_poll_ns.add(now - _woke_ns);
  _woke_ns = now;
  _batch.clear();
  for (Task* t : _ready) mark_ready(*t, now);
  _batch.insert(_batch.end(), _ready.begin(), _ready.end());
  _ready.clear();
  for (Task* t : _kicked) take_scheduled(t);
  _kicked.clear();
  for (Task* t = _remote.take_all(); t != nullptr;) {
    Task* next = t->exec_next;  // read first: once the token is cleared t may be pushed again
    take_scheduled(t);
    t = next;
  }
  for (int i = 0; i < n; ++i) {
    auto* task = static_cast<Task*>(events[i].data.ptr);
    if (task == nullptr) {
      drain_eventfd();
    } else {
      mark_ready(*task, now);
      note_hangup(*task, events[i].events);
      _batch.push_back(task);
    }
  }
  if (_polling) _batch.insert(_batch.end(), _in_memory.begin(), _in_memory.end());
}

// Takes attaches (registered and added to this iteration's batch: they run once) and the stop
// request. Returns false when the worker must stop; tasks received with it are retired unrun.
bool Worker::take_control() {
  std::vector<Task*> incoming;
  std::vector<std::pair<Task*, std::function<void(Task&)>>> releases;
  bool stop;
  {
    // One critical section: a release taken apart from its attach (attach enqueued after the
    // first swap, release before the second) found no task here and was dropped, so its
    // handover never came (the TSan hang in KicksDuringRepeatedHandoverAreNeverLost).
    std::lock_guard lock(_ctl_mu);
    _ctl_pending.store(false, std::memory_order_relaxed);
    incoming.swap(_ctl_attach);
    releases.swap(_ctl_release);
    stop = _ctl_stop;
  }
  for (Task* task : incoming) {
    _tasks.push_back(task);
    if (stop) continue;
    register_task(*task);
    _batch.push_back(task);
  }
  // Releases come after attaches: a task attached and released in one go still moves on.
  for (auto& [task, handover] : releases) {
    if (std::find(_tasks.begin(), _tasks.end(), task) != _tasks.end()) release_now(*task, handover);
  }
  publish_tasks();
  reserve_lists();
  return !stop;
}

// Every change of _tasks ends here (attach, detach, release, stop), so the polling lists are
// derived once per change instead of asking each task on every pass.
void Worker::publish_tasks() {
  _in_memory.clear();
  for (Task* t : _tasks)
    if (t->polls_in_memory()) _in_memory.push_back(t);
  std::lock_guard lock(_ctl_mu);
  _task_view = _tasks;
  _task_count.store(_tasks.size(), std::memory_order_relaxed);
  _stats.queues.store(static_cast<uint32_t>(_tasks.size()), std::memory_order_relaxed);
}

// A task is listed at most once in _ready (it runs once per iteration), once in _kicked or
// _remote (the exec_scheduled token) and once as polled in memory, so _batch holds at most 3 per
// task plus the epoll events.
// Reserving on attach keeps push_back allocation-free on the data path.
void Worker::reserve_lists() {
  const size_t per_round = 3 * _tasks.size() + kMaxEvents + kListSlack;
  _ready.reserve(_tasks.size() + kListSlack);
  _kicked.reserve(_tasks.size() + kListSlack);
  _batch.reserve(per_round);
  _sorted.reserve(per_round);
  _ran.reserve(per_round);
}

void Worker::run_batch() {
  _sorted.assign(_batch.begin(), _batch.end());
  std::sort(_sorted.begin(), _sorted.end());
  _sorted.erase(std::unique(_sorted.begin(), _sorted.end()), _sorted.end());
  _ran.assign(_sorted.size(), 0);
  // Arrival order, once per task. A task retired earlier in this loop may still be listed
  // further on; its slot is marked, so the pointer is never dereferenced again.
  for (Task* task : _batch) {
    size_t slot = std::lower_bound(_sorted.begin(), _sorted.end(), task) - _sorted.begin();
    if (_ran[slot]) continue;
    _ran[slot] = 1;
    run_task(*task);
  }
}

void Worker::run_task(Task& task) {
  _stats.io_work_passes.add();
  const Progress p = task.io_work();
  if (p != Progress::closed) {
    if (task.exec_did_work) {
      _stats.busy_passes.add();
      // The gap ends when the wait returned, not after this pass: a long pass (128 KiB reads)
      // is work, not idleness. An earlier task of this iteration may have worked after _woke_ns.
      if (_poll_adapts && _woke_ns > _last_work_ns) _poll_window.on_work(_woke_ns - _last_work_ns, _poll_ceiling_ns);
      _last_work_ns = monotonic_ns();
    } else {
      _stats.idle_passes.add();
    }
  }
  switch (p) {
    case Progress::idle:
      break;
    case Progress::more:
      _ready.push_back(&task);
      break;
    case Progress::closed:
      detach(task);
      break;
  }
}

// The task's io_work returned closed, and retire() may free it. A schedule() may race with that
// pass from another thread (a handshake timer, a controller failing): one that won the token just
// before the pass returned pushes onto _remote a few instructions later, after the lists were
// emptied, and the next iteration ran io_work on the freed task (issue 33: SIGSEGV in run_task and
// "double free" under connect/close churn). take_off_lists() keeps the token, so every later
// schedule() stops at the exchange, and waits for a push already under way. The owner still
// guarantees that the task outlives a schedule() call that reads its token (TcpTransport: the
// handshake timer kicks under the lock that on_retire takes before freeing the queue).
// The task stays in _batch, which run_batch() is iterating: erasing there would shift the next
// task under the loop's iterator and skip it, and that task's token is already cleared, so its kick
// would be lost (issue 15: the middle of three expiring handshakes never closed). Its _ran slot
// is marked, so the stale pointer is never dereferenced again.
void Worker::detach(Task& task) {
  take_off_lists(task);
  publish_tasks();
  task.retire();  // may delete the task: never touch it again
}

// Between passes (io_work is not running): the task leaves every list of this worker holding the
// exec_scheduled token, so kicks from now on are dropped rather than queued here. If a schedule()
// already held the token, its push is on _kicked or _remote, or still between winning the token
// and the push: wait for it, or it would land on a list after the task is gone (closed) or handed
// over (issue 15, defect 4: the task ran here and on its new executor at once).
void Worker::take_off_lists(Task& task) {
  if (task.exec_scheduled.exchange(true, std::memory_order_acq_rel)) take_pending_push(task);
  drop_from_lists(task);
}

// The task's token is held by a kick: find the task on _kicked or take it off _remote, waiting
// for a push that is a few instructions away. Other tasks taken with it keep their token and
// run next iteration.
void Worker::take_pending_push(Task& task) {
  if (std::find(_kicked.begin(), _kicked.end(), &task) != _kicked.end()) return;
  for (bool found = false; !found; std::this_thread::yield()) {
    for (Task* t = _remote.take_all(); t != nullptr;) {
      Task* next = t->exec_next;
      if (t == &task) found = true;
      else _kicked.push_back(t);
      t = next;
    }
    if (found) return;
  }
}

void Worker::drop_from_lists(Task& task) {
  unregister_task(task);
  for (Task* t = _remote.take_all(); t != nullptr;) {
    Task* next = t->exec_next;
    if (t != &task) _kicked.push_back(t);
    t = next;
  }
  std::erase(_ready, &task);
  std::erase(_kicked, &task);
  std::erase(_tasks, &task);
}

// Live switching: called between passes, so io_work is not running. The next executor's attach()
// drops the token take_off_lists() kept (see Executor::release).
void Worker::release_now(Task& task, const std::function<void(Task&)>& handover) {
  take_off_lists(task);
  std::erase(_batch, &task);  // take_control() runs before run_batch(): the list is not in use
  task.exec_worker = -1;
  handover(task);
}

// Stop: every attached task is retired, whether or not it has work pending.
void Worker::shutdown() {
  (void)_remote.take_all();
  _ready.clear();
  _kicked.clear();
  _batch.clear();
  std::vector<Task*> tasks;
  tasks.swap(_tasks);
  publish_tasks();
  for (Task* task : tasks) {
    unregister_task(*task);
    task->retire();
  }
  // Releases that arrived with the stop: the task is not ours any more, hand it on.
  std::vector<std::pair<Task*, std::function<void(Task&)>>> releases;
  {
    std::lock_guard lock(_ctl_mu);
    releases.swap(_ctl_release);
  }
  releases.clear();  // their tasks were just retired with the others
}

void Worker::add_fd(Task& task, int fd) {
  epoll_event ev{};
  ev.events = kTaskEvents;
  ev.data.ptr = &task;
  // EEXIST: the fd is already watched (listed twice, or watch_fd of a known fd).
  if (epoll_ctl(_epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST) {
    std::fprintf(stderr, "nvmetune event executor: cannot watch fd %d (errno %d)\n", fd, errno);
  }
}

void Worker::register_task(Task& task) {
  for (int fd : task.fds())
    if (fd >= 0) add_fd(task, fd);
}

void Worker::unregister_task(Task& task) {
  // Errors are expected and harmless: fds listed twice, never registered (stop before attach
  // was taken), or already closed.
  for (int fd : task.fds())
    if (fd >= 0) epoll_ctl(_epfd, EPOLL_CTL_DEL, fd, nullptr);
}

void Worker::watch(Task& task, int fd) {
  assert(on_this_thread() && "watch_fd must be called from the task's io_work");
  add_fd(task, fd);
}

}  // namespace event

EventExecutor::EventExecutor(const EventExecutorConfig& cfg) : _cfg(cfg), _busy_polls(cfg.spins()) {
  unsigned n = cfg.threads != 0 ? cfg.threads : static_cast<unsigned>(sys::allowed_cpus().size());
  if (!cfg.worker_cpus.empty()) n = static_cast<unsigned>(cfg.worker_cpus.size());
  if (n == 0) n = 1;
  _workers.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    std::vector<unsigned> cpus = cfg.worker_cpus.empty() ? std::vector<unsigned>{} : cfg.worker_cpus[i];
    _workers.push_back(std::make_unique<event::Worker>(i, std::move(cpus), cfg));
  }
  for (auto& worker : _workers) worker->start();
}

// Placement happens once, at attach: a queue then stays on its worker (bound/poll semantics).
unsigned EventExecutor::pick_worker(Task& task) {
  const unsigned n = static_cast<unsigned>(_workers.size());
  if (_cfg.placement == Placement::incoming_cpu) {
    const int cpu = task.incoming_cpu();
    // A live reconfigure() replaces the CPU lists while the accept thread places a queue.
    std::lock_guard lock(_cfg_mu);
    for (unsigned i = 0; cpu >= 0 && i < n; ++i) {
      const auto& cpus = _cfg.worker_cpus.empty() ? std::vector<unsigned>{} : _cfg.worker_cpus[i];
      if (cpus.size() == 1 && cpus[0] == static_cast<unsigned>(cpu)) return i;
    }
  } else if (_cfg.placement == Placement::least_loaded) {
    // Fewest I/O queues, then fewest queues in total; admin queues are counted apart.
    unsigned best = 0;
    size_t best_io = SIZE_MAX, best_all = SIZE_MAX;
    for (unsigned i = 0; i < n; ++i) {
      size_t io = 0, all = 0;
      for (Task* t : _workers[i]->tasks_snapshot()) {
        ++all;
        io += t->is_admin() ? 0 : 1;
      }
      if (io < best_io || (io == best_io && all < best_all)) best = i, best_io = io, best_all = all;
    }
    return best;
  }
  return _next_worker.fetch_add(1, std::memory_order_relaxed) % n;
}

EventExecutor::~EventExecutor() { stop(); }

void EventExecutor::attach(Task& task) {
  const unsigned index = pick_worker(task);
  task.exec_worker = static_cast<int>(index);
  task.placed(task.exec_worker);
  // A task handed over from another executor arrives holding the exec_scheduled token (see
  // Executor::release) and sits on no list; drop the token here, before the worker can have
  // taken any kick for it: clearing it later could hand out a second token for a task already
  // on the remote list. The first run after attach covers any kick dropped during the move.
  task.exec_level_rearm = false;
  task.exec_scheduled.store(false, std::memory_order_release);
  if (!_workers[index]->enqueue_attach(task)) task.retire();  // already stopped
}

void EventExecutor::schedule(Task& task) {
  if (task.exec_scheduled.exchange(true, std::memory_order_acq_rel)) return;  // already pending
  // Only the token holder reads exec_worker: during a release it is -1 while the token is held.
  assert(task.exec_worker >= 0 && size_t(task.exec_worker) < _workers.size() &&
         "schedule() before attach()");
  if (task.exec_ready_ns.load(std::memory_order_relaxed) == 0)
    task.exec_ready_ns.store(monotonic_ns(), std::memory_order_relaxed);
  event::Worker& worker = *_workers[task.exec_worker];
  if (worker.on_this_thread())
    worker.push_local(task);
  else
    worker.push_remote(task);
}

void EventExecutor::watch_fd(Task& task, int fd) {
  _workers[task.exec_worker]->watch(task, fd);
  schedule(task);  // an edge may have passed before the fd was added
}

void EventExecutor::stop() {
  std::lock_guard lock(_stop_mu);
  if (_stopped) return;
  for (auto& worker : _workers)
    if (worker->on_this_thread()) event::fatal("stop() called from a worker thread");
  _stopped = true;
  for (auto& worker : _workers) worker->request_stop();
  for (auto& worker : _workers) worker->join();
}

void EventExecutor::release(Task& task, std::function<void(Task&)> handover) {
  const int w = task.exec_worker;
  if (w < 0 || !_workers[static_cast<size_t>(w)]->enqueue_release(task, handover)) handover(task);
}

std::vector<Task*> EventExecutor::tasks() const {
  std::vector<Task*> out;
  for (const auto& w : _workers) {
    auto t = w->tasks_snapshot();
    out.insert(out.end(), t.begin(), t.end());
  }
  return out;
}

std::vector<Executor::ThreadInfo> EventExecutor::threads() const {
  std::vector<ThreadInfo> out;
  for (const auto& w : _workers) out.push_back(w->info());
  return out;
}

std::string EventExecutor::reconfigure(const EventExecutorConfig& cfg) {
  if (cfg.mode != _cfg.mode || cfg.placement != _cfg.placement)
    return "a different mode or placement needs a switch";
  const size_t n = cfg.worker_cpus.empty() ? (cfg.threads ? cfg.threads : _workers.size()) : cfg.worker_cpus.size();
  if (n != _workers.size()) return "a different number of workers needs a switch";
  std::string err;
  for (size_t i = 0; i < _workers.size(); ++i) {
    auto cpus = cfg.worker_cpus.empty() ? std::vector<unsigned>{} : cfg.worker_cpus[i];
    if (auto e = _workers[i]->set_cpus(std::move(cpus)); !e.empty()) err = e;
    if (auto e = _workers[i]->set_priority(cfg.priority); !e.empty()) err = e;
    _workers[i]->set_busy_poll(cfg.busy_poll_ns, cfg.adaptive_poll);
  }
  std::lock_guard lock(_cfg_mu);
  _cfg.worker_cpus = cfg.worker_cpus;
  _cfg.priority = cfg.priority;
  _cfg.busy_poll_ns = cfg.busy_poll_ns;
  _cfg.adaptive_poll = cfg.adaptive_poll;
  return err;
}

std::vector<ExecStats> EventExecutor::stats() const {
  std::vector<ExecStats> out;
  out.reserve(_workers.size());
  for (const auto& worker : _workers) out.push_back(worker->stats());
  return out;
}

std::vector<uint64_t> EventExecutor::epoll_waits() const {
  std::vector<uint64_t> out;
  out.reserve(_workers.size());
  for (const auto& worker : _workers) out.push_back(worker->epoll_waits());
  return out;
}

std::unique_ptr<Executor> make_event_executor(const EventExecutorConfig& cfg) {
  return std::make_unique<EventExecutor>(cfg);
}

}  // namespace exec
