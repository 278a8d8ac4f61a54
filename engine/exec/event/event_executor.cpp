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

#include "engine/exec/event/task_mpsc.hpp"

namespace exec {
namespace event {

namespace {

constexpr int kMaxEvents = 64;  // epoll events taken per wait
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
  std::atomic<uint64_t> io_work_passes{0};
  std::atomic<uint64_t> wakeups{0};
  std::atomic<uint64_t> epoll_waits{0};
};

inline void bump(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

class Worker {
 public:
  explicit Worker(unsigned index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start() { _thread = std::thread([this] { run(); }); }
  void join() {
    if (_thread.joinable()) _thread.join();
  }
  bool on_this_thread() const;

  // Any thread (control path). enqueue_attach returns false once the worker is stopping.
  bool enqueue_attach(Task& task);
  void request_stop();
  // Any thread other than this worker; task.exec_scheduled already set by the caller.
  void push_remote(Task& task) {
    if (_remote.push(task) && _sleeping.load(std::memory_order_seq_cst)) wake();
  }
  // This worker only; task.exec_scheduled already set by the caller.
  void push_local(Task& task) { _kicked.push_back(&task); }
  void watch(Task& task, int fd);

  ExecStats stats() const {
    return {_counters.io_work_passes.load(std::memory_order_relaxed),
            _counters.wakeups.load(std::memory_order_relaxed)};
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
  void shutdown();
  void add_fd(Task& task, int fd);
  void register_task(Task& task);
  void unregister_task(Task& task);
  void reserve_lists();
  void wake();
  void drain_eventfd();

  // Touched by producers: kept on its own cache line.
  alignas(64) TaskMpsc _remote;
  std::atomic<bool> _sleeping{false};

  // Control path.
  alignas(64) std::mutex _ctl_mu;
  std::vector<Task*> _ctl_attach;  // guarded by _ctl_mu
  bool _ctl_stop = false;          // guarded by _ctl_mu
  std::atomic<bool> _ctl_pending{false};

  // Set at construction, then read-only (producers write to _evfd).
  alignas(64) const unsigned _index;
  int _epfd = -1;
  int _evfd = -1;

  // Worker thread only.
  std::vector<Task*> _tasks;   // attached to this worker
  std::vector<Task*> _ready;   // returned more: run before the next blocking wait
  std::vector<Task*> _kicked;  // scheduled from this thread (exec_scheduled set)
  std::vector<Task*> _batch;   // this iteration's run list, in arrival order
  std::vector<Task*> _sorted;  // _batch sorted and unique, to run each task once
  std::vector<uint8_t> _ran;   // parallel to _sorted
  std::thread _thread;

  WorkerCounters _counters;
};

namespace {
thread_local const Worker* tl_worker = nullptr;
}

bool Worker::on_this_thread() const { return tl_worker == this; }

Worker::Worker(unsigned index) : _index(index) {
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
  if (read(_evfd, &count, sizeof count) == sizeof count) bump(_counters.wakeups);
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
  char name[16];
  std::snprintf(name, sizeof name, "nvmt-ev/%u", _index);
  pthread_setname_np(pthread_self(), name);

  std::array<epoll_event, kMaxEvents> events;
  for (;;) {
    int n = wait_events(events.data());
    gather(events.data(), n);
    if (_ctl_pending.load(std::memory_order_relaxed) && !take_control()) break;
    run_batch();
  }
  shutdown();
  tl_worker = nullptr;
}

int Worker::wait_events(epoll_event* events) {
  int timeout = 0;
  if (_ready.empty() && _kicked.empty()) {
    _sleeping.store(true, std::memory_order_seq_cst);
    if (_remote.empty()) timeout = -1;
  }
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
// kicks in FIFO order, then tasks with epoll events.
void Worker::gather(const epoll_event* events, int n) {
  _batch.clear();
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
    if (task == nullptr)
      drain_eventfd();
    else
      _batch.push_back(task);
  }
}

// Takes attaches (registered and added to this iteration's batch: they run once) and the stop
// request. Returns false when the worker must stop; tasks received with it are retired unrun.
bool Worker::take_control() {
  std::vector<Task*> incoming;
  bool stop;
  {
    std::lock_guard lock(_ctl_mu);
    _ctl_pending.store(false, std::memory_order_relaxed);
    incoming.swap(_ctl_attach);
    stop = _ctl_stop;
  }
  for (Task* task : incoming) {
    _tasks.push_back(task);
    if (stop) continue;
    register_task(*task);
    _batch.push_back(task);
  }
  reserve_lists();
  return !stop;
}

// A task is listed at most once in _ready (it runs once per iteration) and once in _kicked or
// _remote (the exec_scheduled token), so _batch holds at most 2 per task plus the epoll events.
// Reserving on attach keeps push_back allocation-free on the data path.
void Worker::reserve_lists() {
  const size_t per_round = 2 * _tasks.size() + kMaxEvents + kListSlack;
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
  bump(_counters.io_work_passes);
  switch (task.io_work()) {
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

// The task's io_work returned closed. The lead's protocol: no thread calls schedule(task) after
// that io_work returned, but a schedule() that completed just before may have pushed the task
// onto _remote (or _kicked). The task may be freed by retire(), so first empty _remote: drop the
// dying task, move the others to _kicked (still holding their token; they run next iteration).
void Worker::detach(Task& task) {
  unregister_task(task);
  for (Task* t = _remote.take_all(); t != nullptr;) {
    Task* next = t->exec_next;
    if (t != &task) _kicked.push_back(t);
    t = next;
  }
  std::erase(_ready, &task);
  std::erase(_kicked, &task);
  std::erase(_tasks, &task);
  task.retire();  // may delete the task: never touch it again
}

// Stop: every attached task is retired, whether or not it has work pending.
void Worker::shutdown() {
  (void)_remote.take_all();
  _ready.clear();
  _kicked.clear();
  _batch.clear();
  std::vector<Task*> tasks;
  tasks.swap(_tasks);
  for (Task* task : tasks) {
    unregister_task(*task);
    task->retire();
  }
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

EventExecutor::EventExecutor(const EventExecutorConfig& cfg) {
  unsigned n = cfg.threads != 0 ? cfg.threads : std::thread::hardware_concurrency();
  if (n == 0) n = 1;
  _workers.reserve(n);
  for (unsigned i = 0; i < n; ++i) _workers.push_back(std::make_unique<event::Worker>(i));
  for (auto& worker : _workers) worker->start();
}

EventExecutor::~EventExecutor() { stop(); }

void EventExecutor::attach(Task& task) {
  unsigned index = _next_worker.fetch_add(1, std::memory_order_relaxed) % _workers.size();
  task.exec_worker = static_cast<int>(index);
  if (!_workers[index]->enqueue_attach(task)) task.retire();  // already stopped
}

void EventExecutor::schedule(Task& task) {
  assert(task.exec_worker >= 0 && size_t(task.exec_worker) < _workers.size() &&
         "schedule() before attach()");
  if (task.exec_scheduled.exchange(true, std::memory_order_acq_rel)) return;  // already pending
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
