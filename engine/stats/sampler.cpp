#include "engine/stats/sampler.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <utility>

namespace stats {

namespace {

constexpr std::chrono::nanoseconds min_interval = std::chrono::milliseconds(1);

uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Whole small /proc file into buf (NUL-terminated); false if it cannot be read.
bool read_proc(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

uint64_t minus(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }

WorkerRow worker_delta(const WorkerRow& now, const WorkerRow* before) {
  WorkerRow d = now;
  if (before == nullptr) return d;
  d.io_work_passes = minus(now.io_work_passes, before->io_work_passes);
  d.busy_passes = minus(now.busy_passes, before->busy_passes);
  d.idle_passes = minus(now.idle_passes, before->idle_passes);
  d.idle_poll_ns = minus(now.idle_poll_ns, before->idle_poll_ns);
  d.wakeups = minus(now.wakeups, before->wakeups);
  return d;
}

}  // namespace

uint64_t thread_cpu_ns(int tid) {
  if (tid <= 0) return 0;
  char path[64], buf[1024];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  if (read_proc(path, buf, sizeof buf)) return std::strtoull(buf, nullptr, 10);
  // No schedstat (CONFIG_SCHED_INFO off): utime + stime, fields 14 and 15 of stat, counted
  // from after the ")" closing the command name (which may itself hold spaces or parens).
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  if (!read_proc(path, buf, sizeof buf)) return 0;
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  ++p;
  for (int field = 3; field < 14 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return 0;
  char* end = nullptr;
  uint64_t ticks = std::strtoull(p, &end, 10);
  ticks += std::strtoull(end, nullptr, 10);
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? ticks * (1'000'000'000ull / static_cast<uint64_t>(hz)) : 0;
}

Sampler::Sampler(Registry& registry, std::chrono::nanoseconds interval)
    : _registry(registry), _interval(std::max(interval, min_interval)) {
  _thread = std::thread([this] { run(); });
}

Sampler::~Sampler() { stop(); }

void Sampler::set_interval(std::chrono::nanoseconds interval) {
  std::lock_guard lock(_mu);
  _interval = std::max(interval, min_interval);
  _cv.notify_all();
}

std::chrono::nanoseconds Sampler::interval() const {
  std::lock_guard lock(_mu);
  return _interval;
}

void Sampler::set_mode(std::string mode) {
  std::lock_guard lock(_mu);
  _mode = std::move(mode);
}

uint64_t Sampler::subscribe(SnapshotSink sink) {
  std::lock_guard lock(_mu);
  uint64_t id = _next_sink++;
  _sinks.push_back(std::make_shared<Callback<SnapshotSink>>(Callback<SnapshotSink>{id, std::move(sink)}));
  return id;
}

void Sampler::unsubscribe(uint64_t id) { remove(_sinks, id); }

uint64_t Sampler::add_provider(SnapshotProvider provider) {
  std::lock_guard lock(_mu);
  uint64_t id = _next_sink++;
  _providers.push_back(
      std::make_shared<Callback<SnapshotProvider>>(Callback<SnapshotProvider>{id, std::move(provider)}));
  return id;
}

void Sampler::remove_provider(uint64_t id) { remove(_providers, id); }

template <class Fn>
void Sampler::remove(Callbacks<Fn>& list, uint64_t id) {
  {
    std::lock_guard lock(_mu);
    auto it = std::find_if(list.begin(), list.end(), [id](const auto& s) { return s->id == id; });
    if (it == list.end()) return;
    (*it)->removed = true;
    list.erase(it);
  }
  // Wait out a dispatch that may be calling it right now (it checks `removed` per callback).
  if (!on_sampler_thread()) std::lock_guard wait(_dispatch_mu);
}

Snapshot Sampler::last() const {
  std::lock_guard lock(_mu);
  return _last;
}

void Sampler::stop() {
  {
    std::lock_guard lock(_mu);
    _stop = true;
    _cv.notify_all();
  }
  if (on_sampler_thread()) return;
  std::lock_guard join(_join_mu);
  if (_thread.joinable()) _thread.join();
}

void Sampler::run() {
  _thread_id.store(std::this_thread::get_id());
  _tid.store(static_cast<int>(syscall(SYS_gettid)));
  pthread_setname_np(pthread_self(), "nvmt-sampler");

  Baseline prev = take_baseline();
  auto start = std::chrono::steady_clock::now();  // scheduled start of the running interval
  for (;;) {
    std::chrono::steady_clock::time_point deadline;
    {
      std::unique_lock lock(_mu);
      for (;;) {
        if (_stop) return;
        deadline = start + _interval;  // re-read: set_interval() takes effect at once
        if (std::chrono::steady_clock::now() >= deadline) break;
        _cv.wait_until(lock, deadline);
      }
    }
    Baseline now = take_baseline();
    Snapshot snap = close_interval(prev, now);
    call_each(_providers, snap);
    {
      std::lock_guard lock(_mu);
      snap.seq = ++_seq;
      snap.mode = _mode;
      _last = snap;
    }
    call_each(_sinks, std::as_const(snap));
    prev = std::move(now);
    // Fixed cadence without drift; after a stall of more than an interval, restart from now
    // rather than closing a burst of tiny intervals.
    auto after = std::chrono::steady_clock::now();
    start = after - deadline >= interval() ? after : deadline;
  }
}

Sampler::Baseline Sampler::take_baseline() const {
  Baseline b;
  b.steady_ns = steady_ns();
  b.collection = _registry.collect();
  b.total = b.collection.total();
  for (const WorkerSample& w : b.collection.workers) {
    if (w.row.tid > 0) b.cpu_ns[{w.source, w.row.tid}] = thread_cpu_ns(w.row.tid);
  }
  return b;
}

Snapshot Sampler::close_interval(const Baseline& before, const Baseline& now) {
  Snapshot s;
  s.time_ns = realtime_ns();
  s.interval_ns = now.steady_ns - before.steady_ns;

  std::unordered_map<uint64_t, const QueueRow*> prev_queues;
  for (const QueueSample& q : before.collection.queues) prev_queues[q.source] = &q.row;
  static const QueueRow zero;
  s.queues.reserve(now.collection.queues.size());
  for (const QueueSample& q : now.collection.queues) {
    auto it = prev_queues.find(q.source);
    s.queues.push_back(difference(q.row, it == prev_queues.end() ? zero : *it->second));
  }
  s.total = difference(now.total, before.total);

  std::unordered_map<uint64_t, const WorkerRow*> prev_workers;
  for (const WorkerSample& w : before.collection.workers) prev_workers[w.source] = &w.row;
  s.workers.reserve(now.collection.workers.size());
  for (const WorkerSample& w : now.collection.workers) {
    auto it = prev_workers.find(w.source);
    WorkerRow row = worker_delta(w.row, it == prev_workers.end() ? nullptr : it->second);
    auto key = std::make_pair(w.source, w.row.tid);
    auto cpu_now = now.cpu_ns.find(key);
    auto cpu_before = before.cpu_ns.find(key);
    if (cpu_now != now.cpu_ns.end()) {
      // A thread first seen in this interval started in it: all its CPU time is the interval's.
      row.cpu_ns = minus(cpu_now->second, cpu_before == before.cpu_ns.end() ? 0 : cpu_before->second);
    }
    s.workers.push_back(std::move(row));
  }
  return s;
}

template <class Fn, class Arg>
void Sampler::call_each(const Callbacks<Fn>& list, Arg& s) {
  Callbacks<Fn> callbacks;
  {
    std::lock_guard lock(_mu);
    callbacks = list;
  }
  std::lock_guard calling(_dispatch_mu);
  for (const auto& cb : callbacks) {
    {
      std::lock_guard lock(_mu);
      if (cb->removed) continue;
    }
    try {
      cb->fn(s);
    } catch (...) {
      _sink_errors.fetch_add(1);
    }
  }
}

}  // namespace stats
