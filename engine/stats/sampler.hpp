#pragma once
// stats::Sampler: a thread ("nvmt-sampler") that closes a statistics interval every
// `interval`: it collects the registry, turns cumulative values into the interval's deltas,
// adds each worker's CPU time from the kernel, and hands the Snapshot to every sink.
// It only reads the data path's atomics (and takes the registry's control-path mutex): a slow
// sink delays the next snapshot, never an I/O.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/stats/registry.hpp"
#include "engine/stats/snapshot.hpp"

namespace stats {

using SnapshotSink = std::function<void(const Snapshot&)>;
// Adds what the engine does not measure itself (eBPF probes) to a snapshot before the sinks see
// it, so outside data shares the interval, the time axis and the store with the engine's.
using SnapshotProvider = std::function<void(Snapshot&)>;

// Nanoseconds thread tid of this process has run on a CPU: /proc/self/task/TID/schedstat's
// first field, else utime+stime from .../stat (clock-tick resolution). 0 if the thread is gone.
uint64_t thread_cpu_ns(int tid);

class Sampler {
 public:
  static constexpr std::chrono::milliseconds default_interval{1000};

  // Starts the thread; the first snapshot comes one interval later. `registry` must outlive
  // the sampler.
  explicit Sampler(Registry& registry, std::chrono::nanoseconds interval = default_interval);
  ~Sampler();  // stop()
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Takes effect at once: the running interval ends `interval` after it began (or now, if
  // that is already past). Zero or negative intervals are raised to 1 ms.
  void set_interval(std::chrono::nanoseconds interval);
  std::chrono::nanoseconds interval() const;
  // The execution model reported in the snapshots from the next one on (its value when an
  // interval closes, so an interval with a switch reports the new mode).
  void set_mode(std::string mode);

  // Sinks run on the sampler thread, in subscription order, once per interval, each with the
  // same Snapshot. They must not block for long (they delay the next interval). A sink
  // subscribed from inside a sink is called from the next interval on.
  uint64_t subscribe(SnapshotSink sink);
  // After unsubscribe(id) returns the sink is never called again. From another thread it
  // waits for a sink call in progress (so do not call it while holding something a sink
  // waits for); from inside a sink (this one or another) it does not wait, the current
  // sink call simply finishes. Unknown ids are ignored.
  void unsubscribe(uint64_t id);

  // Providers run on the sampler thread at each interval's close, in the order added, before
  // any sink; the same rules as sinks (short, exceptions caught and counted). After
  // remove_provider(id) returns the provider is never called again (same waiting rule as
  // unsubscribe). The engine knows nothing of who provides: whoever owns both installs it.
  uint64_t add_provider(SnapshotProvider provider);
  void remove_provider(uint64_t id);

  // The last closed interval (seq 0 before the first one).
  Snapshot last() const;
  // gettid() of the sampler thread (for Engine::threads()).
  int tid() const { return _tid.load(); }
  // Exceptions thrown by sinks (caught and counted; the sampler goes on).
  uint64_t sink_errors() const { return _sink_errors.load(); }

  // Stops and joins the thread. Idempotent. From inside a sink it only asks the thread to
  // stop after this interval (the destructor joins).
  void stop();

 private:
  template <class Fn>
  struct Callback {
    uint64_t id;
    Fn fn;
    bool removed = false;  // guarded by _mu
  };
  template <class Fn>
  using Callbacks = std::vector<std::shared_ptr<Callback<Fn>>>;
  struct Baseline {
    Collection collection;
    QueueRow total;  // collection.total(), summed once: a baseline closes one interval and opens the next
    uint64_t steady_ns = 0;
    std::map<std::pair<uint64_t, int>, uint64_t> cpu_ns;  // (source, tid) -> CPU time
  };

  void run();
  Baseline take_baseline() const;
  Snapshot close_interval(const Baseline& before, const Baseline& now);
  template <class Fn>
  void remove(Callbacks<Fn>& list, uint64_t id);
  // Calls each callback of list (a copy taken under _mu) with s, skipping removed ones.
  template <class Fn, class Arg>
  void call_each(const Callbacks<Fn>& list, Arg& s);
  bool on_sampler_thread() const { return std::this_thread::get_id() == _thread_id.load(); }

  Registry& _registry;
  mutable std::mutex _mu;  // everything below up to _thread
  std::condition_variable _cv;
  std::chrono::nanoseconds _interval;
  std::string _mode;
  bool _stop = false;
  uint64_t _next_sink = 1;
  Callbacks<SnapshotSink> _sinks;
  Callbacks<SnapshotProvider> _providers;
  Snapshot _last;
  uint64_t _seq = 0;

  std::mutex _dispatch_mu;  // held by the sampler thread while calling sinks
  std::atomic<int> _tid{0};
  std::atomic<std::thread::id> _thread_id{};
  std::mutex _join_mu;  // one stop() joins
  std::atomic<uint64_t> _sink_errors{0};
  std::thread _thread;
};

}  // namespace stats
