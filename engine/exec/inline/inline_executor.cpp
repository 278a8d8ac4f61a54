// Inline executor (see inline_executor.hpp).
//
// Slots and run state: engine/exec/slot.hpp (shared with the unbound executor).
//
// The notification thread is the only waiter on the epoll set, so fds are registered
// edge-triggered without EPOLLONESHOT: nothing to re-arm. An edge for a task a worker is
// running turns it pending and the worker runs another pass.
//
// Deferred workers: each has a lock-free MPSC run list and a blocking eventfd. Sleep protocol
// (as in the event executor): the worker sets _sleeping, re-checks the list, then blocks in
// read(); a producer pushes, then reads _sleeping and writes the eventfd only if its push made
// the list non-empty and the worker may sleep. Both pairs are seq_cst.
#include "engine/exec/inline/inline_executor.hpp"

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
#include <latch>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "engine/exec/slot.hpp"
#include "engine/stats/registry.hpp"
#include "engine/system/topology.hpp"

namespace exec {
namespace inline_exec {

namespace {

using slots::claim;
using slots::claim_idle;
using slots::mark_ready;
using slots::note_hangup;
using slots::take_hangup;
using slots::take_pending;

constexpr int kMaxEvents = 64;  // events per notification wait
constexpr unsigned kMaxConsecutivePasses = 8;
constexpr unsigned kMaxThreads = 1024;
constexpr uint32_t kTaskEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
constexpr uint64_t kFdIndexMask = 1;  // epoll tag = Slot* | index into task.fds()

[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "nvmetune inline executor: %s (errno %d)\n", what, errno);
  std::abort();
}

std::system_error sys_error(const char* what) {
  return std::system_error(errno, std::generic_category(), what);
}

thread_local const void* tl_executor = nullptr;  // the executor owning this thread

}  // namespace

struct alignas(64) Slot {
  std::atomic<uint8_t> state{slots::unused};
  std::atomic<bool> release_requested{false};
  std::atomic<uint64_t> pending_ns{0};  // first readiness while running (0 = none)
  std::atomic<bool> hangup{false};      // an event said the peer shut down (slots::note_hangup)
  unsigned index = 0;    // in the SlotTable; task.exec_worker
  unsigned worker = 0;   // deferred worker; written at attach, read by owners
  Task* task = nullptr;  // written under _ctl_mu at attach/detach, read by owners
  Slot* next = nullptr;  // run-list link
  std::function<void(Task&)> handover;  // guarded by _ctl_mu; set before release_requested
};

class SlotTable : public slots::SlotTable<Slot> {};

class RunList : public slots::RunList<Slot> {};

// The sampler's per-thread block plus what only this model counts.
struct ThreadCounters : stats::WorkerStats {
  using stats::WorkerStats::WorkerStats;
  stats::Counter deferrals;  // notification thread only

  ExecStats get() const {
    return {io_work_passes.get(), wakeups.get(), busy_passes.get(), idle_passes.get()};
  }
  void count_pass(const Task& t) {
    io_work_passes.add();
    (t.exec_did_work ? busy_passes : idle_passes).add();
  }
};

// What the notification thread and the workers share: a named, pinned thread.
class PinnedThread {
 public:
  PinnedThread(unsigned index, std::string name, std::string role, std::vector<unsigned> cpus,
               stats::Registry* registry)
      : _counters(index, name), _name(std::move(name)), _role(std::move(role)), _cpus(std::move(cpus)),
        _registry(registry) {}
  virtual ~PinnedThread() { join(); }
  PinnedThread(const PinnedThread&) = delete;
  PinnedThread& operator=(const PinnedThread&) = delete;

  void start(std::latch& started, const void* executor) {
    _thread = std::thread([this, &started, executor] {
      tl_executor = executor;
      pthread_setname_np(pthread_self(), _name.c_str());
      _tid.store(sys::current_tid(), std::memory_order_release);
      _pin_error = sys::pin_current_thread(_cpus);
      const bool ok = _pin_error.empty();
      _counters.set_cpus_allowed(_cpus);
      _counters.tid.store(_tid.load(std::memory_order_relaxed));
      if (ok && _registry) _registry->add_worker(&_counters);
      started.count_down();
      if (ok) loop();
      if (ok && _registry) _registry->remove_worker(&_counters);
    });
  }
  void join() {
    if (_thread.joinable()) _thread.join();
  }
  const std::string& pin_error() const { return _pin_error; }  // after the start latch
  Executor::ThreadInfo info() const {
    // The affinity asked for, not the kernel's: callers compare the two to check pinning.
    return {_tid.load(std::memory_order_acquire), _name, _role, _cpus};
  }
  ExecStats stats() const { return _counters.get(); }

 protected:
  virtual void loop() = 0;
  ThreadCounters _counters;

 private:
  const std::string _name;
  const std::string _role;
  const std::vector<unsigned> _cpus;
  std::atomic<int> _tid{0};
  std::string _pin_error;
  stats::Registry* _registry;
  std::thread _thread;
};

class Notifier final : public PinnedThread {
 public:
  Notifier(InlineExecutor& ex, std::vector<unsigned> cpus, stats::Registry* registry)
      : PinnedThread(0, "nvmt-notify", "notify", std::move(cpus), registry), _ex(ex) {
    _evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (_evfd < 0) throw sys_error("eventfd");
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;  // never read: each write is an edge
    ev.data.u64 = 0;
    if (epoll_ctl(_ex._epfd, EPOLL_CTL_ADD, _evfd, &ev) < 0) {
      auto err = sys_error("epoll_ctl(eventfd)");
      close(_evfd);
      throw err;
    }
  }
  ~Notifier() override {
    join();
    close(_evfd);
  }
  void wake() {
    const uint64_t one = 1;
    if (write(_evfd, &one, sizeof one) < 0 && errno != EAGAIN) fatal("eventfd write");
  }
  uint64_t deferrals() const { return _counters.deferrals.get(); }
  // Any thread; s is owned (running) by the caller, who hands it to the notification thread.
  void push(Slot& s) {
    if (_run.push(s)) wake();  // the first push after a take writes the edge the loop waits for
  }

 private:
  void loop() override;
  void run_inline(Slot& s);

  InlineExecutor& _ex;
  alignas(64) RunList _run;
  int _evfd = -1;
};

class Worker final : public PinnedThread {
 public:
  Worker(InlineExecutor& ex, unsigned index, std::string name, std::vector<unsigned> cpus,
         stats::Registry* registry)
      : PinnedThread(index, std::move(name), "deferred", std::move(cpus), registry), _ex(ex) {
    _evfd = eventfd(0, EFD_CLOEXEC);  // blocking: the worker sleeps in read()
    if (_evfd < 0) throw sys_error("eventfd");
  }
  ~Worker() override {
    join();
    close(_evfd);
  }
  // Any thread; s is owned (running) by the caller, who hands it over.
  void push(Slot& s) {
    if (_run.push(s) && _sleeping.load(std::memory_order_seq_cst)) wake();
  }
  void wake() {
    const uint64_t one = 1;
    if (write(_evfd, &one, sizeof one) < 0 && errno != EAGAIN) fatal("eventfd write");
  }

 private:
  void loop() override;
  void sleep();
  void run_owned(Slot& s);

  InlineExecutor& _ex;
  alignas(64) RunList _run;
  std::atomic<bool> _sleeping{false};
  int _evfd = -1;
};

void Notifier::loop() {
  std::array<epoll_event, kMaxEvents> events;
  while (!_ex._stopping.load(std::memory_order_acquire)) {
    int n = epoll_wait(_ex._epfd, events.data(), kMaxEvents, -1);
    if (n < 0) {
      if (errno != EINTR) fatal("epoll_wait");
      n = 0;
    }
    _counters.wakeups.add();
    // Newly attached queues first: an fd's first edge, taken after, then finds them idle and
    // runs another inline batch rather than deferring to a worker.
    for (Slot* s = _run.take_all(); s != nullptr;) {
      Slot* next = s->next;  // run_inline may hand s to a worker, which links it anew
      run_inline(*s);
      s = next;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == 0) continue;  // the control eventfd: stop, or the run list above
      Slot& s = *reinterpret_cast<Slot*>(tag & ~kFdIndexMask);
      note_hangup(s, events[i].events);
      if (claim(s)) run_inline(s);
    }
  }
}

// The notification thread owns s: first batch here, the rest on the deferred worker.
void Notifier::run_inline(Slot& s) {
  if (s.release_requested.load(std::memory_order_acquire)) return _ex.honour_release(s);
  Task& t = *s.task;
  take_hangup(s, t);
  const Progress p = t.io_work_limited(_ex._budget);
  _counters.count_pass(t);
  if (p == Progress::closed) return _ex.retire_closed(s);
  if (s.release_requested.load(std::memory_order_acquire)) return _ex.honour_release(s);
  const uint8_t prev = s.state.exchange(slots::running, std::memory_order_acq_rel);
  if (prev == slots::pending) take_pending(s, t);
  if (p == Progress::more) mark_ready(t, monotonic_ns());
  if (p == Progress::idle && prev != slots::pending) {
    uint8_t running = slots::running;
    if (s.state.compare_exchange_strong(running, slots::idle, std::memory_order_seq_cst)) {
      // No longer ours; a release that raced in is honoured by whoever claims next.
      if (s.release_requested.load(std::memory_order_seq_cst) && claim_idle(s))
        _ex.honour_release(s);
      return;
    }
    take_pending(s, t);
  }
  _counters.deferrals.add();
  _ex.defer(s);
}

// Stops even with work queued (busy tasks requeue forever): stop() retires every task.
void Worker::loop() {
  while (!_ex._stopping.load(std::memory_order_seq_cst)) {
    Slot* list = _run.take_all();
    if (list == nullptr) {
      sleep();
      continue;
    }
    while (list != nullptr) {
      Slot* next = list->next;  // run_owned may push it again
      run_owned(*list);
      list = next;
    }
  }
}

void Worker::sleep() {
  _sleeping.store(true, std::memory_order_seq_cst);
  if (_run.empty() && !_ex._stopping.load(std::memory_order_seq_cst)) {
    uint64_t value;
    if (read(_evfd, &value, sizeof value) < 0 && errno != EINTR) fatal("eventfd read");
    _counters.wakeups.add();
  }
  _sleeping.store(false, std::memory_order_relaxed);
}

// The worker owns s: full passes until idle, at most kMaxConsecutivePasses before a requeue.
void Worker::run_owned(Slot& s) {
  Task& t = *s.task;
  for (unsigned pass = 1;; ++pass) {
    if (s.release_requested.load(std::memory_order_acquire)) return _ex.honour_release(s);
    take_hangup(s, t);
    const Progress p = t.io_work();
    _counters.count_pass(t);
    if (p == Progress::closed) return _ex.retire_closed(s);
    if (s.release_requested.load(std::memory_order_acquire)) return _ex.honour_release(s);
    const uint8_t prev = s.state.exchange(slots::running, std::memory_order_acq_rel);
    if (prev == slots::pending) take_pending(s, t);
    if (p == Progress::more) mark_ready(t, monotonic_ns());
    if (p == Progress::more || prev == slots::pending) {
      if (pass < kMaxConsecutivePasses) continue;
      _ex.defer(s);  // to the back of its worker's list (this one, or the slot's if reused)
      return;
    }
    uint8_t running = slots::running;
    if (s.state.compare_exchange_strong(running, slots::idle, std::memory_order_seq_cst)) {
      if (s.release_requested.load(std::memory_order_seq_cst) && claim_idle(s))
        _ex.honour_release(s);
      return;
    }
    take_pending(s, t);
  }
}

}  // namespace inline_exec

using inline_exec::Slot;

namespace {

std::vector<unsigned> effective_mask(const std::vector<unsigned>& cpus) {
  std::vector<unsigned> mask = cpus.empty() ? sys::online_cpus() : cpus;
  std::sort(mask.begin(), mask.end());
  mask.erase(std::unique(mask.begin(), mask.end()), mask.end());
  return mask;
}

}  // namespace

std::string InlineExecutor::check(const InlineConfig& cfg) {
  for (unsigned cpu : cfg.cpus)
    if (!sys::cpu_online(cpu)) return "cpus: CPU " + std::to_string(cpu) + " is not online";
  if (effective_mask(cfg.cpus).empty()) return "cpus: no online CPU";
  if (cfg.threads > inline_exec::kMaxThreads)
    return "threads: at most " + std::to_string(inline_exec::kMaxThreads);
  if (cfg.inline_budget == 0) return "inline_budget: must be at least 1";
  return {};
}

InlineExecutor::InlineExecutor(const InlineConfig& cfg)
    : _budget(cfg.inline_budget), _slots(std::make_unique<inline_exec::SlotTable>()) {
  if (std::string err = check(cfg); !err.empty()) throw std::invalid_argument(err);
  _mask = effective_mask(cfg.cpus);
  _epfd = epoll_create1(EPOLL_CLOEXEC);
  if (_epfd < 0) throw inline_exec::sys_error("epoll_create1");
  try {
    _notifier = std::make_unique<inline_exec::Notifier>(*this, _mask, cfg.registry);
    const unsigned n = cfg.threads != 0 ? cfg.threads : unsigned(_mask.size());
    _worker_of_cpu.assign(_mask.back() + 1, -1);
    for (unsigned i = 0; i < n; ++i) {
      const unsigned cpu = _mask[i % _mask.size()];
      if (_worker_of_cpu[cpu] < 0) _worker_of_cpu[cpu] = int(i);
      _workers.push_back(
          std::make_unique<inline_exec::Worker>(*this, i + 1, "nvmt-inl/" + std::to_string(i),
                                                std::vector<unsigned>{cpu}, cfg.registry));
    }
    start_threads();
  } catch (...) {
    _workers.clear();
    _notifier.reset();
    close(_epfd);
    throw;
  }
}

void InlineExecutor::start_threads() {
  std::latch started(std::ptrdiff_t(_workers.size() + 1));
  try {
    _notifier->start(started, this);
    for (auto& w : _workers) w->start(started, this);
  } catch (...) {
    _stopping.store(true, std::memory_order_seq_cst);
    _notifier->wake();
    for (auto& w : _workers) w->wake();
    _notifier->join();
    for (auto& w : _workers) w->join();
    throw;
  }
  started.wait();
  std::string err = _notifier->pin_error();
  for (auto& w : _workers)
    if (err.empty()) err = w->pin_error();
  if (!err.empty()) {
    stop();
    throw std::invalid_argument("cpus: " + err);
  }
}

InlineExecutor::~InlineExecutor() {
  stop();
  _notifier.reset();
  _workers.clear();
  close(_epfd);
}

Slot& InlineExecutor::slot_of(Task& task) const {
  Slot* s = _slots->find(task.exec_worker);
  assert(s != nullptr && "task not attached to this executor");
  return *s;
}

unsigned InlineExecutor::pick_worker(const Task& task) {
  const int cpu = task.incoming_cpu();
  if (cpu >= 0 && size_t(cpu) < _worker_of_cpu.size() && _worker_of_cpu[size_t(cpu)] >= 0)
    return unsigned(_worker_of_cpu[size_t(cpu)]);
  return _next_worker.fetch_add(1, std::memory_order_relaxed) % unsigned(_workers.size());
}

void InlineExecutor::defer(Slot& s) { _workers[s.worker]->push(s); }

void InlineExecutor::watch(Slot& s, unsigned index, int fd) {
  epoll_event ev{};
  ev.events = inline_exec::kTaskEvents;
  ev.data.u64 = reinterpret_cast<uintptr_t>(&s) | index;
  if (epoll_ctl(_epfd, EPOLL_CTL_ADD, fd, &ev) == 0) return;
  if (errno == EEXIST && epoll_ctl(_epfd, EPOLL_CTL_MOD, fd, &ev) == 0) return;
  std::fprintf(stderr, "nvmetune inline executor: cannot watch fd %d (errno %d)\n", fd, errno);
}

// Errors are harmless: fds listed twice, never watched, or already closed.
void InlineExecutor::unwatch(const Task& task) {
  for (int fd : task.fds())
    if (fd >= 0) epoll_ctl(_epfd, EPOLL_CTL_DEL, fd, nullptr);
}

void InlineExecutor::attach(Task& task) {
  std::unique_lock lock(_ctl_mu);
  if (_stopped) {
    lock.unlock();
    task.retire();
    return;
  }
  task.exec_level_rearm = false;
  Slot& s = _slots->allocate();
  s.task = &task;
  s.hangup.store(false, std::memory_order_relaxed);  // a reused slot: its last task's
  s.worker = pick_worker(task);
  s.pending_ns.store(0, std::memory_order_relaxed);
  s.release_requested.store(false, std::memory_order_relaxed);
  task.exec_worker = int(s.index);
  _attached.push_back(&task);
  s.state.store(slots::running, std::memory_order_release);  // ours: it runs once
  // Last, and released: a kick that sees the task accepted sees its slot (unbound's attach).
  task.exec_scheduled.store(false, std::memory_order_release);
  const auto fds = task.fds();
  for (unsigned i = 0; i < fds.size(); ++i)
    if (fds[i] >= 0) watch(s, i, fds[i]);
  inline_exec::mark_ready(task, monotonic_ns());
  // The first pass runs in the notification context, like every batch that starts on an event.
  // It matters for the io_uring mechanism: a shared ring completes a multishot receive by task
  // work on the thread that armed it, so arming it here lets the notification thread be woken
  // once per arrival, as epoll would, instead of a worker first and then the notifier. Arming
  // it from the worker measured 0.80-0.94x the IOPS (README, io_mechanism).
  _notifier->push(s);
}

void InlineExecutor::schedule(Task& task) {
  if (task.exec_scheduled.load(std::memory_order_acquire)) return;  // released: dropped
  Slot* s = _slots->find(task.exec_worker);
  if (s != nullptr && inline_exec::claim(*s)) defer(*s);
}

void InlineExecutor::watch_fd(Task& task, int fd) {
  Slot& s = slot_of(task);
  const auto fds = task.fds();
  watch(s, fds[0] == fd ? 0 : 1, fd);
  uint8_t running = slots::running;  // run once more: an edge may have passed already
  s.state.compare_exchange_strong(running, slots::pending, std::memory_order_acq_rel);
}

bool InlineExecutor::detach(Slot& s, Task& task, std::function<void(Task&)>* handover) {
  unwatch(task);
  std::lock_guard lock(_ctl_mu);
  const bool attached = std::erase(_attached, &task) > 0;
  if (handover != nullptr) *handover = std::move(s.handover);
  s.handover = nullptr;
  s.release_requested.store(false, std::memory_order_relaxed);
  s.task = nullptr;
  s.state.store(slots::unused, std::memory_order_release);
  _slots->free(s);
  return attached;
}

void InlineExecutor::retire_closed(Slot& s) {
  Task& task = *s.task;
  if (detach(s, task, nullptr)) task.retire();
}

void InlineExecutor::honour_release(Slot& s) {
  if (!s.release_requested.load(std::memory_order_acquire)) {
    defer(s);  // claimed for a release honoured before the slot was reused: a plain extra pass
    return;
  }
  Task& task = *s.task;
  task.exec_scheduled.store(true, std::memory_order_release);
  std::function<void(Task&)> handover;
  if (detach(s, task, &handover) && handover) handover(task);
}

void InlineExecutor::release(Task& task, std::function<void(Task&)> handover) {
  Slot* s = _slots->find(task.exec_worker);
  {
    std::lock_guard lock(_ctl_mu);
    if (_stopped || s == nullptr || s->task != &task ||
        s->release_requested.load(std::memory_order_relaxed))
      return;
    s->handover = std::move(handover);
    s->release_requested.store(true, std::memory_order_seq_cst);
  }
  if (inline_exec::claim_idle(*s)) honour_release(*s);
}

void InlineExecutor::stop() {
  std::lock_guard stop_lock(_stop_mu);
  if (inline_exec::tl_executor == this) inline_exec::fatal("stop() called from an executor thread");
  {
    std::lock_guard lock(_ctl_mu);
    if (_stopped) return;
    _stopped = true;
  }
  _stopping.store(true, std::memory_order_seq_cst);
  _notifier->wake();
  for (auto& w : _workers) w->wake();
  _notifier->join();
  for (auto& w : _workers) w->join();
  std::vector<Task*> tasks;
  {
    std::lock_guard lock(_ctl_mu);
    tasks.swap(_attached);
    for (Task* t : tasks) {
      Slot& s = slot_of(*t);
      s.handover = nullptr;  // a release still pending is dropped: the task retires here
      s.task = nullptr;
      s.state.store(slots::unused, std::memory_order_relaxed);
    }
  }
  for (Task* t : tasks) t->retire();
}

std::vector<Task*> InlineExecutor::tasks() const {
  std::lock_guard lock(_ctl_mu);
  return _attached;
}

std::vector<Executor::ThreadInfo> InlineExecutor::threads() const {
  std::vector<ThreadInfo> out{_notifier->info()};
  for (const auto& w : _workers) out.push_back(w->info());
  return out;
}

std::vector<ExecStats> InlineExecutor::stats() const {
  std::vector<ExecStats> out{_notifier->stats()};
  for (const auto& w : _workers) out.push_back(w->stats());
  return out;
}

uint64_t InlineExecutor::deferrals() const { return _notifier->deferrals(); }

std::unique_ptr<Executor> make_inline_executor(const InlineConfig& cfg) {
  return std::make_unique<InlineExecutor>(cfg);
}

}  // namespace exec
