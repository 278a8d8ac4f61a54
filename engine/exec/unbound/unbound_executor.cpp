// Unbound executor (see unbound_executor.hpp).
//
// Slots and run state: engine/exec/slot.hpp (shared with the inline executor). task.exec_worker
// holds the slot index. After kMaxConsecutivePasses the owner pushes the slot back on the pod's
// run list (still running) so others get a turn.
//
// Readiness. A pod with one worker registers fds edge-triggered (nobody else could take an
// event). A pod with several workers registers them EPOLLONESHOT, so a running task's fds wake
// no sibling; the owner re-arms the fds that fired with EPOLL_CTL_MOD before going idle.
// EPOLLOUT is armed only while the task says its last pass was stopped by a full socket
// (Task::exec_tx_blocked): EPOLL_CTL_MOD reports current readiness, so a writable socket armed
// for EPOLLOUT fires at once. That is what a blocked sender needs (the peer may have drained the
// socket between the EAGAIN and the re-arm; asking poll() then, as we once did, lost that
// wake-up), and what an idle task must not get (it would spin).
//
// Run list (attach, kicks, requeues): per pod, a lock-free stack of slots. Any worker takes it
// whole with one exchange (no ABA); in a shared pod it keeps the oldest slot and pushes the rest
// back, so idle siblings get them. Whoever makes the list non-empty writes the pod eventfd
// unless it is itself a worker of the pod (it looks at the list before it blocks again). The
// eventfd is registered edge-triggered and never read: every write is a new edge that wakes one
// waiter. EPOLLEXCLUSIVE is not used: it balances wake-ups across several epoll sets watching
// one fd, and a pod has one set.
#include "engine/exec/unbound/unbound_executor.hpp"

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

namespace exec {
namespace unbound {

namespace {

using slots::claim;
using slots::claim_idle;
using slots::mark_ready;
using slots::note_hangup;
using slots::take_hangup;
using slots::take_pending;

constexpr int kEventsPerWaitAlone = 32;   // the only worker of its pod takes many at once
constexpr int kEventsPerWaitShared = 4;   // leave the rest to idle siblings
constexpr unsigned kMaxConsecutivePasses = 8;
constexpr unsigned kMaxThreads = 1024;
constexpr uint32_t kEdgeEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
constexpr uint32_t kOneshotEvents = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
constexpr uint64_t kFdIndexMask = 1;      // epoll tag = Slot* | index into task.fds()

[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "nvmetune unbound executor: %s (errno %d)\n", what, errno);
  std::abort();
}

std::system_error sys_error(const char* what) {
  return std::system_error(errno, std::generic_category(), what);
}

}  // namespace

struct alignas(64) Slot {
  std::atomic<uint8_t> state{slots::unused};
  std::atomic<uint8_t> disarmed{0};  // oneshot pods: bit i = fds()[i] fired, needs a re-arm
  std::atomic<bool> release_requested{false};
  std::atomic<uint64_t> pending_ns{0};  // first readiness while running (0 = none)
  std::atomic<bool> hangup{false};      // an event said the peer shut down (slots::note_hangup)
  uint8_t armed_out = 0;   // owner only: bit i = fds()[i] armed with EPOLLOUT
  unsigned index = 0;      // in the SlotTable; task.exec_worker
  unsigned pod = 0;        // written at attach, read by owners
  Task* task = nullptr;    // written under _ctl_mu at attach/detach, read by owners
  Slot* next = nullptr;    // run-list link
  std::function<void(Task&)> handover;  // guarded by _ctl_mu; set before release_requested
};

class SlotTable : public slots::SlotTable<Slot> {};

class RunList : public slots::RunList<Slot> {};

namespace {

thread_local const void* tl_pod = nullptr;        // the Pod whose worker this thread is
thread_local const void* tl_executor = nullptr;   // the executor owning this worker thread

}  // namespace

class Pod;

class Worker {
 public:
  Worker(UnboundExecutor& ex, Pod& pod, unsigned index, std::string name, std::vector<unsigned> start_cpus,
         std::vector<unsigned> cpus, stats::Registry* registry)
      : _ex(ex), _pod(pod), _name(std::move(name)), _start_cpus(std::move(start_cpus)),
        _cpus(std::move(cpus)), _counters(index, _name), _registry(registry) {
    _batch.reserve(kEventsPerWaitAlone);
  }
  ~Worker() { join(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start(std::latch& started) { _thread = std::thread([this, &started] { run(started); }); }
  void join() {
    if (_thread.joinable()) _thread.join();
  }
  // Valid once the worker counted down the start latch.
  const std::string& pin_error() const { return _pin_error; }
  Executor::ThreadInfo info() const {
    // The affinity asked for, not the kernel's: callers compare the two to check pinning.
    return {_tid.load(std::memory_order_acquire), _name, "worker", _cpus};
  }
  ExecStats stats() const {
    return {_counters.io_work_passes.get(), _counters.wakeups.get(), _counters.busy_passes.get(),
            _counters.idle_passes.get()};
  }

 private:
  void run(std::latch& started);
  void loop();
  void collect(const epoll_event& ev);
  void run_owned(Slot& s);
  bool go_idle(Slot& s, Task& t);

  UnboundExecutor& _ex;
  Pod& _pod;
  const std::string _name;
  const std::vector<unsigned> _start_cpus;  // the pod: where the worker starts
  const std::vector<unsigned> _cpus;        // where it may run (pod when strict, else mask)
  std::atomic<int> _tid{0};
  std::string _pin_error;
  std::vector<Slot*> _batch;  // worker thread only: slots claimed from this wait's events
  std::thread _thread;
  stats::WorkerStats _counters;  // written by this worker only; read by the sampler
  stats::Registry* _registry;
};

class Pod {
 public:
  explicit Pod(unsigned workers) : _shared(workers > 1) {
    _epfd = epoll_create1(EPOLL_CLOEXEC);
    if (_epfd < 0) throw sys_error("epoll_create1");
    _evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (_evfd < 0) {
      auto err = sys_error("eventfd");
      close(_epfd);
      throw err;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;  // never read: each write is an edge (see the top)
    ev.data.u64 = 0;
    if (epoll_ctl(_epfd, EPOLL_CTL_ADD, _evfd, &ev) < 0) {
      auto err = sys_error("epoll_ctl(eventfd)");
      close(_evfd);
      close(_epfd);
      throw err;
    }
  }
  ~Pod() {
    workers.clear();  // joins
    close(_evfd);
    close(_epfd);
  }
  Pod(const Pod&) = delete;
  Pod& operator=(const Pod&) = delete;

  int epfd() const { return _epfd; }
  bool shared() const { return _shared; }
  bool on_worker() const { return tl_pod == this; }
  bool run_empty() const { return _run.empty(); }

  void wake() {
    const uint64_t one = 1;
    if (write(_evfd, &one, sizeof one) < 0 && errno != EAGAIN) fatal("eventfd write");
  }
  // s is owned (running). Wakes a worker unless the caller is one of ours (it looks at the list
  // before it blocks).
  void push(Slot& s) {
    if (_run.push(s) && !on_worker()) wake();
  }
  // Worker: the run list's slots to run now, oldest first (one in a shared pod, the rest pushed
  // back for the siblings).
  Slot* take() {
    Slot* list = _run.take_all();
    if (list == nullptr || !_shared) return list;
    Slot* rest = list->next;
    list->next = nullptr;
    bool was_empty = false;
    while (rest != nullptr) {
      Slot* next = rest->next;
      was_empty |= _run.push(*rest);
      rest = next;
    }
    if (was_empty) wake();
    return list;
  }

  void watch(Slot& s, unsigned index, int fd) {
    epoll_event ev{};
    ev.events = _shared ? kOneshotEvents : kEdgeEvents;
    ev.data.u64 = reinterpret_cast<uintptr_t>(&s) | index;
    s.armed_out &= uint8_t(~(1u << index));
    if (epoll_ctl(_epfd, EPOLL_CTL_ADD, fd, &ev) == 0) return;
    if (errno == EEXIST && epoll_ctl(_epfd, EPOLL_CTL_MOD, fd, &ev) == 0) return;
    std::fprintf(stderr, "nvmetune unbound executor: cannot watch fd %d (errno %d)\n", fd, errno);
  }
  void watch_all(Slot& s, const Task& t) {
    const auto fds = t.fds();
    for (unsigned i = 0; i < fds.size(); ++i)
      if (fds[i] >= 0) watch(s, i, fds[i]);
  }
  // Errors are harmless: fds listed twice, never watched, or already closed.
  void unwatch(const Task& t) {
    for (int fd : t.fds())
      if (fd >= 0) epoll_ctl(_epfd, EPOLL_CTL_DEL, fd, nullptr);
  }
  void rearm(Slot& s, const Task& t);

  std::vector<std::unique_ptr<Worker>> workers;

 private:
  RunList _run;
  const bool _shared;
  int _epfd = -1;
  int _evfd = -1;
};

// Oneshot pods, owner only, before the task goes idle (see the top).
void Pod::rearm(Slot& s, const Task& t) {
  if (!_shared) return;
  const uint8_t fired = s.disarmed.exchange(0, std::memory_order_acq_rel);
  const auto fds = t.fds();
  for (unsigned i = 0; i < fds.size(); ++i) {
    if (fds[i] < 0) continue;
    const uint8_t bit = uint8_t(1u << i);
    // Only the socket (fds[0]) is written to; the completion eventfd never blocks a sender.
    const bool want_out = i == 0 && t.exec_tx_blocked;
    if (!(fired & bit) && want_out == bool(s.armed_out & bit)) continue;  // armed as wanted
    epoll_event ev{};
    ev.events = kOneshotEvents | (want_out ? EPOLLOUT : 0u);
    ev.data.u64 = reinterpret_cast<uintptr_t>(&s) | i;
    if (epoll_ctl(_epfd, EPOLL_CTL_MOD, fds[i], &ev) == 0)
      s.armed_out = want_out ? uint8_t(s.armed_out | bit) : uint8_t(s.armed_out & ~bit);
  }
}

void Worker::run(std::latch& started) {
  tl_pod = &_pod;
  tl_executor = &_ex;
  pthread_setname_np(pthread_self(), _name.c_str());
  _tid.store(sys::current_tid(), std::memory_order_release);
  // Start on the pod's CPUs, then widen to the mask when not strict: like the kernel's
  // non-strict unbound workers, it begins in its pod and may later run anywhere in the mask.
  _pin_error = sys::pin_current_thread(_start_cpus);
  if (_pin_error.empty() && _cpus != _start_cpus) _pin_error = sys::pin_current_thread(_cpus);
  const bool ok = _pin_error.empty();
  _counters.set_cpus_allowed(_cpus);
  _counters.tid.store(_tid.load(std::memory_order_relaxed));
  if (ok && _registry) _registry->add_worker(&_counters);
  started.count_down();
  if (ok) loop();
  if (ok && _registry) _registry->remove_worker(&_counters);
  // Pass the stop on to the next worker blocked on this pod's epoll set.
  _pod.wake();
}

void Worker::loop() {
  std::array<epoll_event, kEventsPerWaitAlone> events;
  const int max_events = _pod.shared() ? kEventsPerWaitShared : kEventsPerWaitAlone;
  while (!_ex._stopping.load(std::memory_order_acquire)) {
    const bool queued = !_pod.run_empty();
    int n = epoll_wait(_pod.epfd(), events.data(), max_events, queued ? 0 : -1);
    if (n < 0) {
      if (errno != EINTR) fatal("epoll_wait");
      n = 0;
    }
    if (!queued) _counters.wakeups.add();
    _batch.clear();
    for (int i = 0; i < n; ++i) collect(events[i]);
    for (Slot* s : _batch) run_owned(*s);
    for (Slot* s = _pod.take(); s != nullptr;) {
      Slot* next = s->next;  // run_owned may push s again
      run_owned(*s);
      s = next;
    }
  }
}

void Worker::collect(const epoll_event& ev) {
  const uint64_t tag = ev.data.u64;
  if (tag == 0) return;  // the pod eventfd: the run list is looked at anyway
  Slot& s = *reinterpret_cast<Slot*>(tag & ~kFdIndexMask);
  if (_pod.shared()) s.disarmed.fetch_or(uint8_t(1u << (tag & kFdIndexMask)), std::memory_order_acq_rel);
  note_hangup(s, ev.events);
  if (claim(s)) _batch.push_back(&s);
}

// The calling worker owns s (running or pending).
void Worker::run_owned(Slot& s) {
  Task& t = *s.task;
  for (unsigned pass = 1;; ++pass) {
    if (s.release_requested.load(std::memory_order_acquire)) return _ex.honour_release(s);
    take_hangup(s, t);
    const Progress p = t.io_work();
    _counters.io_work_passes.add();
    (t.exec_did_work ? _counters.busy_passes : _counters.idle_passes).add();
    if (p == Progress::closed) return _ex.retire_closed(s);
    if (s.release_requested.load(std::memory_order_acquire)) return _ex.honour_release(s);
    const uint8_t prev = s.state.exchange(slots::running, std::memory_order_acq_rel);
    if (prev == slots::pending) take_pending(s, t);
    if (p == Progress::more) mark_ready(t, monotonic_ns());
    if (p == Progress::more || prev == slots::pending) {
      if (pass < kMaxConsecutivePasses) continue;
      _ex._pods[s.pod]->push(s);  // still owned: whoever takes it next runs it
      return;
    }
    if (go_idle(s, t)) return;
    take_pending(s, t);  // readiness arrived while re-arming: still ours
  }
}

// Re-arms and leaves s idle; false when it turned pending meanwhile (the caller runs again).
bool Worker::go_idle(Slot& s, Task& t) {
  _ex._pods[s.pod]->rearm(s, t);
  uint8_t running = slots::running;
  if (!s.state.compare_exchange_strong(running, slots::idle, std::memory_order_seq_cst)) return false;
  // The task is no longer ours: only the slot may be looked at. A release that raced with the
  // exchange above is honoured by whoever claims the slot next, here if nobody else does.
  if (s.release_requested.load(std::memory_order_seq_cst) && claim_idle(s)) _ex.honour_release(s);
  return true;
}

namespace {

// threads < pods: merge neighbours (topology order keeps them close) into `threads` groups.
std::vector<std::vector<unsigned>> merge_pods(const std::vector<std::vector<unsigned>>& pods,
                                              unsigned threads) {
  std::vector<std::vector<unsigned>> out(threads);
  for (size_t i = 0; i < pods.size(); ++i) {
    auto& group = out[i * threads / pods.size()];
    group.insert(group.end(), pods[i].begin(), pods[i].end());
  }
  for (auto& g : out) std::sort(g.begin(), g.end());
  return out;
}

// One worker per pod, the rest to the pod with the fewest workers per CPU (first on ties).
std::vector<unsigned> split_workers(const std::vector<std::vector<unsigned>>& pods,
                                    unsigned threads) {
  std::vector<unsigned> count(pods.size(), 1);
  for (unsigned left = threads - unsigned(pods.size()); left > 0; --left) {
    size_t best = 0;
    for (size_t i = 1; i < pods.size(); ++i)
      if (uint64_t(count[i]) * pods[best].size() < uint64_t(count[best]) * pods[i].size()) best = i;
    ++count[best];
  }
  return count;
}

std::vector<unsigned> effective_mask(const std::vector<unsigned>& cpus) {
  std::vector<unsigned> mask = cpus.empty() ? sys::online_cpus() : cpus;
  std::sort(mask.begin(), mask.end());
  mask.erase(std::unique(mask.begin(), mask.end()), mask.end());
  return mask;
}

}  // namespace
}  // namespace unbound

using unbound::Slot;

std::string UnboundExecutor::check(const UnboundConfig& cfg) {
  for (unsigned cpu : cfg.cpus)
    if (!sys::cpu_online(cpu)) return "cpus: CPU " + std::to_string(cpu) + " is not online";
  const auto mask = unbound::effective_mask(cfg.cpus);
  if (mask.empty()) return "cpus: no online CPU";
  if (sys::pods(cfg.scope, mask).empty()) return "cpus: no CPU of the mask is in the topology";
  if (cfg.threads > unbound::kMaxThreads)
    return "threads: at most " + std::to_string(unbound::kMaxThreads);
  return {};
}

UnboundExecutor::UnboundExecutor(const UnboundConfig& cfg)
    : _slots(std::make_unique<unbound::SlotTable>()) {
  if (std::string err = check(cfg); !err.empty()) throw std::invalid_argument(err);
  const auto mask = unbound::effective_mask(cfg.cpus);
  _pod_cpus = sys::pods(cfg.scope, mask);
  const unsigned threads = cfg.threads != 0 ? cfg.threads : unsigned(mask.size());
  if (threads < _pod_cpus.size()) _pod_cpus = unbound::merge_pods(_pod_cpus, threads);
  const auto counts = unbound::split_workers(_pod_cpus, threads);

  _pod_of_cpu.assign(mask.back() + 1, -1);
  for (size_t p = 0; p < _pod_cpus.size(); ++p)
    for (unsigned cpu : _pod_cpus[p]) _pod_of_cpu[cpu] = int(p);
  unsigned worker_index = 0;
  for (size_t p = 0; p < _pod_cpus.size(); ++p) {
    auto pod = std::make_unique<unbound::Pod>(counts[p]);
    for (unsigned w = 0; w < counts[p]; ++w) {
      const std::string name = "nvmt-unb/" + std::to_string(p) + "." + std::to_string(w);
      pod->workers.push_back(std::make_unique<unbound::Worker>(
          *this, *pod, worker_index++, name, _pod_cpus[p], cfg.strict ? _pod_cpus[p] : mask, cfg.registry));
    }
    _pods.push_back(std::move(pod));
  }
  start_workers(threads);
}

void UnboundExecutor::start_workers(unsigned threads) {
  std::latch started(threads);
  try {
    for (auto& pod : _pods)
      for (auto& w : pod->workers) w->start(started);
  } catch (...) {
    _stopping.store(true, std::memory_order_release);
    for (auto& pod : _pods) pod->wake();
    for (auto& pod : _pods) pod->workers.clear();
    throw;
  }
  started.wait();
  for (auto& pod : _pods)
    for (auto& w : pod->workers)
      if (!w->pin_error().empty()) {
        const std::string err = w->pin_error();
        stop();
        throw std::invalid_argument("cpus: " + err);
      }
}

UnboundExecutor::~UnboundExecutor() { stop(); }

Slot& UnboundExecutor::slot_of(Task& task) const {
  Slot* s = _slots->find(task.exec_worker);
  assert(s != nullptr && "task not attached to this executor");
  return *s;
}

unsigned UnboundExecutor::pick_pod(const Task& task) {
  const int cpu = task.incoming_cpu();
  if (cpu >= 0 && size_t(cpu) < _pod_of_cpu.size() && _pod_of_cpu[size_t(cpu)] >= 0)
    return unsigned(_pod_of_cpu[size_t(cpu)]);
  return _next_pod.fetch_add(1, std::memory_order_relaxed) % unsigned(_pods.size());
}

void UnboundExecutor::attach(Task& task) {
  std::unique_lock lock(_ctl_mu);
  if (_stopped) {
    lock.unlock();
    task.retire();
    return;
  }
  Slot& s = _slots->allocate();
  s.task = &task;
  s.hangup.store(false, std::memory_order_relaxed);  // a reused slot: its last task's
  s.pod = pick_pod(task);
  s.disarmed.store(0, std::memory_order_relaxed);
  s.pending_ns.store(0, std::memory_order_relaxed);
  s.release_requested.store(false, std::memory_order_relaxed);
  s.armed_out = 0;
  task.exec_worker = int(s.index);
  task.exec_level_rearm = _pods[s.pod]->shared();
  _attached.push_back(&task);
  s.state.store(slots::running, std::memory_order_release);  // ours: it runs once
  // Last, and released: a kick from another thread (schedule() needs no lock) that sees the
  // task accepted must also see its slot. Cleared first, a kick could read the exec_worker of
  // the executor the task came from and claim whatever slot has that index here.
  task.exec_scheduled.store(false, std::memory_order_release);
  unbound::Pod& pod = *_pods[s.pod];
  pod.watch_all(s, task);
  unbound::mark_ready(task, monotonic_ns());
  pod.push(s);
}

void UnboundExecutor::schedule(Task& task) {
  // Released to another executor: dropped (see Executor::release).
  if (task.exec_scheduled.load(std::memory_order_acquire)) return;
  Slot* s = _slots->find(task.exec_worker);
  if (s != nullptr && unbound::claim(*s)) _pods[s->pod]->push(*s);
}

void UnboundExecutor::watch_fd(Task& task, int fd) {
  Slot& s = slot_of(task);
  const auto fds = task.fds();
  const unsigned index = fds[0] == fd ? 0 : 1;
  _pods[s.pod]->watch(s, index, fd);
  // Run once more: the fd may have been signalled before it was watched.
  uint8_t running = slots::running;
  s.state.compare_exchange_strong(running, slots::pending, std::memory_order_acq_rel);
}

// Owner only. Removes the task from its pod's epoll set and from _attached and frees the slot.
// Returns false when stop() took the task first (stop retires it).
bool UnboundExecutor::detach(Slot& s, Task& task, std::function<void(Task&)>* handover) {
  _pods[s.pod]->unwatch(task);
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

// io_work returned closed. A release that raced with the close is dropped with the task.
void UnboundExecutor::retire_closed(Slot& s) {
  Task& task = *s.task;
  if (detach(s, task, nullptr)) task.retire();
}

// Owner only.
void UnboundExecutor::honour_release(Slot& s) {
  if (!s.release_requested.load(std::memory_order_acquire)) {
    // Claimed for a release another owner honoured before the slot was reused: this is now
    // someone else's task and a plain extra pass.
    _pods[s.pod]->push(s);
    return;
  }
  Task& task = *s.task;
  task.exec_scheduled.store(true, std::memory_order_release);  // kicks racing the move drop
  std::function<void(Task&)> handover;
  if (detach(s, task, &handover) && handover) handover(task);
}

void UnboundExecutor::release(Task& task, std::function<void(Task&)> handover) {
  Slot* s = _slots->find(task.exec_worker);
  {
    std::lock_guard lock(_ctl_mu);
    if (_stopped || s == nullptr || s->task != &task ||
        s->release_requested.load(std::memory_order_relaxed))
      return;  // not attached here (closed, moved on, stopped) or already being released
    s->handover = std::move(handover);
    s->release_requested.store(true, std::memory_order_seq_cst);
  }
  if (!unbound::claim_idle(*s)) return;  // its owner honours it after the pass
  // A pod's only worker may own the task's io_uring: the handover must run there.
  if (_pods[s->pod]->shared())
    honour_release(*s);
  else
    _pods[s->pod]->push(*s);
}

bool UnboundExecutor::keeps_tasks_on_one_thread() const {
  return std::none_of(_pods.begin(), _pods.end(), [](const auto& pod) { return pod->shared(); });
}

void UnboundExecutor::stop() {
  std::lock_guard stop_lock(_stop_mu);
  if (unbound::tl_executor == this) unbound::fatal("stop() called from a worker thread");
  {
    std::lock_guard lock(_ctl_mu);
    if (_stopped) return;
    _stopped = true;
  }
  _stopping.store(true, std::memory_order_release);
  for (auto& pod : _pods) pod->wake();
  for (auto& pod : _pods)
    for (auto& w : pod->workers) w->join();
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

std::vector<Task*> UnboundExecutor::tasks() const {
  std::lock_guard lock(_ctl_mu);
  return _attached;
}

std::vector<Executor::ThreadInfo> UnboundExecutor::threads() const {
  std::vector<ThreadInfo> out;
  for (const auto& pod : _pods)
    for (const auto& w : pod->workers) out.push_back(w->info());
  return out;
}

std::vector<ExecStats> UnboundExecutor::stats() const {
  std::vector<ExecStats> out;
  for (const auto& pod : _pods)
    for (const auto& w : pod->workers) out.push_back(w->stats());
  return out;
}

std::unique_ptr<Executor> make_unbound_executor(const UnboundConfig& cfg) {
  return std::make_unique<UnboundExecutor>(cfg);
}

}  // namespace exec
