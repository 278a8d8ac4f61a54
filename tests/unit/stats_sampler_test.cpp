// Registry, sampler and event log: real QueueStats/WorkerStats blocks written by a test thread,
// the sampler at 50 ms. Every wait is a condition polled with a deadline; no assertion depends
// on the machine being fast (the intervals' lengths are checked loosely).
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/stats/cpu_split.hpp"
#include "engine/stats/event_log.hpp"
#include "engine/stats/registry.hpp"
#include "engine/stats/sampler.hpp"

namespace {

using namespace std::chrono_literals;
using stats::QueueStats;
using stats::Registry;
using stats::Sampler;
using stats::Snapshot;
using stats::WorkerStats;

template <typename Pred>
bool wait_for(Pred pred, std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

int gettid_now() { return static_cast<int>(syscall(SYS_gettid)); }

// Keeps every snapshot a sink saw.
struct Recorder {
  std::mutex mu;
  std::vector<Snapshot> snaps;
  stats::SnapshotSink sink() {
    return [this](const Snapshot& s) {
      std::lock_guard lock(mu);
      snaps.push_back(s);
    };
  }
  size_t size() {
    std::lock_guard lock(mu);
    return snaps.size();
  }
  std::vector<Snapshot> copy() {
    std::lock_guard lock(mu);
    return snaps;
  }
};

// What a writer put into one queue, to compare with the sum of the intervals.
struct Written {
  uint64_t commands = 0, read_bytes = 0, write_bytes = 0, pdus_rx = 0, pdus_tx = 0, latency_sum = 0;
};

void write_one(QueueStats& q, Written& w, uint64_t n) {
  q.commands.add();
  q.read_bytes.add(4096);
  q.pdus_rx.add(2);
  q.pdus_tx.add();
  uint64_t lat = 10'000 + (n % 97) * 1000;
  q.make_latency().read_latency.record(lat);
  q.make_latency().queue_wait.record(lat / 10);
  ++w.commands;
  w.read_bytes += 4096;
  w.pdus_rx += 2;
  ++w.pdus_tx;
  w.latency_sum += lat;
}

void expect_sequence(const std::vector<Snapshot>& snaps) {
  for (size_t i = 0; i < snaps.size(); ++i) {
    EXPECT_EQ(snaps[i].seq, snaps.front().seq + i);
    if (i > 0) {
      EXPECT_GE(snaps[i].time_ns, snaps[i - 1].time_ns);
    }
    EXPECT_GT(snaps[i].interval_ns, 0u);
  }
}

// ---- Sampler: deltas

TEST(Sampler, IntervalDeltasSumToWhatWasRecorded) {
  Registry reg;
  constexpr int nq = 3;
  std::vector<std::unique_ptr<QueueStats>> qs;
  for (int i = 0; i < nq; ++i) {
    qs.push_back(std::make_unique<QueueStats>());
    qs.back()->set_identity({.queue_id = 100u + static_cast<uint64_t>(i), .qid = static_cast<uint16_t>(i + 1),
                             .cntlid = 7, .subnqn = "nqn.test:s", .peer = "10.0.0.1:4420"});
    qs.back()->worker.store(0);
    reg.add_queue(qs.back().get());
  }
  WorkerStats worker(0, "nvmt-w0");
  worker.set_cpus_allowed({0});
  reg.add_worker(&worker);

  Sampler sampler(reg, 50ms);
  sampler.set_mode("bound");
  Recorder rec;
  sampler.subscribe(rec.sink());
  ASSERT_TRUE(wait_for([&] { return rec.size() >= 1; }));  // baseline taken before any write

  std::vector<Written> written(nq);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    worker.tid.store(gettid_now());
    worker.queues.store(nq);
    uint64_t n = 0;
    while (!stop.load()) {
      worker.wakeups.add();
      for (int i = 0; i < nq; ++i) {
        for (int k = 0; k <= i; ++k) write_one(*qs[i], written[i], n++);
        worker.io_work_passes.add();
        worker.busy_passes.add();
      }
      std::this_thread::sleep_for(50us);
    }
  });
  size_t at_start = rec.size();
  ASSERT_TRUE(wait_for([&] { return rec.size() >= at_start + 8; }));
  stop.store(true);
  writer.join();
  size_t at_stop = rec.size();
  ASSERT_TRUE(wait_for([&] { return rec.size() >= at_stop + 2; }));  // the tail is in
  sampler.stop();

  std::vector<Snapshot> snaps = rec.copy();
  expect_sequence(snaps);
  std::map<uint64_t, Written> seen;
  std::map<uint64_t, uint64_t> hist_count, hist_sum, wait_count;
  uint64_t total_commands = 0, total_hist = 0, passes = 0, wakeups = 0, cpu_ns = 0;
  for (const Snapshot& s : snaps) {
    EXPECT_EQ(s.mode, "bound");
    ASSERT_EQ(s.queues.size(), static_cast<size_t>(nq));
    uint64_t cmds = 0;
    for (const auto& q : s.queues) {
      EXPECT_EQ(q.subnqn, "nqn.test:s");
      EXPECT_EQ(q.cntlid, 7);
      EXPECT_EQ(q.qid, q.queue_id - 99);
      EXPECT_EQ(q.worker, 0);
      seen[q.queue_id].commands += q.commands;
      seen[q.queue_id].read_bytes += q.read_bytes;
      seen[q.queue_id].pdus_rx += q.pdus_rx;
      seen[q.queue_id].pdus_tx += q.pdus_tx;
      hist_count[q.queue_id] += q.read_latency.count;
      hist_sum[q.queue_id] += q.read_latency.sum_ns;
      wait_count[q.queue_id] += q.queue_wait.count;
      cmds += q.commands;
    }
    // (Within one interval a counter and a histogram may disagree by the samples written while
    // collect() ran between them; only the sums over all intervals are exact.)
    EXPECT_EQ(s.total.commands, cmds);
    total_commands += s.total.commands;
    total_hist += s.total.read_latency.count;
    ASSERT_EQ(s.workers.size(), 1u);
    EXPECT_EQ(s.workers[0].name, "nvmt-w0");
    EXPECT_EQ(s.workers[0].cpus_allowed, std::vector<unsigned>{0});
    passes += s.workers[0].io_work_passes;
    wakeups += s.workers[0].wakeups;
    cpu_ns += s.workers[0].cpu_ns;
  }
  // 50 ms nominal. One interval may be short after a stall (the cadence catches up), so the
  // check is on the mean, loosely: loaded machines and sanitizers are slow.
  uint64_t span = 0;
  for (const Snapshot& s : snaps) span += s.interval_ns;
  EXPECT_GT(span / snaps.size(), 25'000'000u);
  EXPECT_LT(span / snaps.size(), 1'000'000'000u);
  uint64_t grand = 0;
  for (int i = 0; i < nq; ++i) {
    uint64_t id = 100u + static_cast<uint64_t>(i);
    EXPECT_EQ(seen[id].commands, written[i].commands) << id;
    EXPECT_EQ(seen[id].read_bytes, written[i].read_bytes) << id;
    EXPECT_EQ(seen[id].pdus_rx, written[i].pdus_rx) << id;
    EXPECT_EQ(seen[id].pdus_tx, written[i].pdus_tx) << id;
    EXPECT_EQ(hist_count[id], written[i].commands) << id;
    EXPECT_EQ(hist_sum[id], written[i].latency_sum) << id;
    EXPECT_EQ(wait_count[id], written[i].commands) << id;
    grand += written[i].commands;
  }
  EXPECT_GT(grand, 0u);
  EXPECT_EQ(total_commands, grand);
  EXPECT_EQ(total_hist, grand);
  EXPECT_EQ(passes, worker.io_work_passes.get());
  EXPECT_EQ(wakeups, worker.wakeups.get());
  EXPECT_GT(cpu_ns, 0u);  // the writer ran: the kernel saw it on a CPU
  EXPECT_EQ(sampler.last().seq, snaps.back().seq);
}

TEST(Sampler, UnregisteringMidRunKeepsTotalsMonotonicAndComplete) {
  Registry reg;
  constexpr int nq = 4;
  std::vector<std::unique_ptr<QueueStats>> qs;
  for (int i = 0; i < nq; ++i) {
    qs.push_back(std::make_unique<QueueStats>());
    qs.back()->set_identity({.queue_id = static_cast<uint64_t>(i + 1)});
    reg.add_queue(qs.back().get());
  }
  Sampler sampler(reg, 50ms);
  Recorder rec;
  sampler.subscribe(rec.sink());
  ASSERT_TRUE(wait_for([&] { return rec.size() >= 1; }));

  std::vector<Written> written(nq);
  std::atomic<bool> stop{false}, removed{false};
  std::thread writer([&] {
    uint64_t n = 0;
    auto remove_at = std::chrono::steady_clock::now() + 250ms;
    while (!stop.load()) {
      for (int i = 0; i < nq; ++i) {
        if (i == 1 && removed.load()) continue;
        write_one(*qs[i], written[i], n++);
      }
      // The queue's owner retires it after its last write, as a TcpQueue would.
      if (!removed.load() && std::chrono::steady_clock::now() >= remove_at) {
        reg.remove_queue(qs[1].get());
        removed.store(true);
      }
      std::this_thread::sleep_for(50us);
    }
  });
  // Meanwhile: the registry's totals never go backwards, before, across and after the removal.
  uint64_t last_cmds = 0, last_count = 0;
  auto until = std::chrono::steady_clock::now() + 600ms;
  while (std::chrono::steady_clock::now() < until || !removed.load()) {
    stats::QueueRow t = reg.collect().total();
    ASSERT_GE(t.commands, last_cmds);
    ASSERT_GE(t.read_latency.count, last_count);
    last_cmds = t.commands;
    last_count = t.read_latency.count;
    std::this_thread::sleep_for(2ms);
  }
  stop.store(true);
  writer.join();
  size_t at_stop = rec.size();
  ASSERT_TRUE(wait_for([&] { return rec.size() >= at_stop + 2; }));
  sampler.stop();

  EXPECT_EQ(reg.queue_count(), 3u);
  std::vector<Snapshot> snaps = rec.copy();
  expect_sequence(snaps);
  uint64_t total = 0, total_hist = 0, q2_rows = 0;
  bool gone = false;
  for (const Snapshot& s : snaps) {
    total += s.total.commands;
    total_hist += s.total.read_latency.count;
    bool has_q2 = false;
    for (const auto& q : s.queues) has_q2 |= q.queue_id == 2;
    if (has_q2) {
      EXPECT_FALSE(gone) << "queue 2 came back";
      ++q2_rows;
    }
    gone |= !has_q2 && q2_rows > 0;
  }
  EXPECT_TRUE(gone);
  uint64_t grand = 0;
  for (const Written& w : written) grand += w.commands;
  EXPECT_EQ(total, grand);  // the removed queue's last interval is in the totals
  EXPECT_EQ(total_hist, grand);
  stats::Collection c = reg.collect();
  EXPECT_EQ(c.retired.commands, written[1].commands);
  EXPECT_EQ(c.total().commands, grand);
}

TEST(Registry, IgnoresDuplicatesAndUnknownBlocksAndOrdersRows) {
  Registry reg;
  QueueStats a, b;
  a.set_identity({.queue_id = 9});
  b.set_identity({.queue_id = 3});
  reg.add_queue(&a);
  reg.add_queue(&a);
  reg.add_queue(&b);
  EXPECT_EQ(reg.queue_count(), 2u);
  QueueStats stranger;
  reg.remove_queue(&stranger);
  EXPECT_EQ(reg.queue_count(), 2u);
  stats::Collection c = reg.collect();
  ASSERT_EQ(c.queues.size(), 2u);
  EXPECT_EQ(c.queues[0].row.queue_id, 3u);
  EXPECT_EQ(c.queues[1].row.queue_id, 9u);
  EXPECT_NE(c.queues[0].source, c.queues[1].source);

  WorkerStats w1(1, "b"), w0(0, "a");
  reg.add_worker(&w1);
  reg.add_worker(&w0);
  c = reg.collect();
  ASSERT_EQ(c.workers.size(), 2u);
  EXPECT_EQ(c.workers[0].row.name, "a");
  EXPECT_EQ(c.workers[1].row.index, 1u);
  reg.remove_worker(&w1);
  EXPECT_EQ(reg.worker_count(), 1u);
}

TEST(Sampler, WorkerReplacedByANewThreadIsNotNegative) {
  // A mode change replaces workers: same index, new block and thread. Pairing by source keeps
  // the new worker's first interval from being "new cumulative - old cumulative".
  Registry reg;
  auto old_worker = std::make_unique<WorkerStats>(0, "old");
  for (int i = 0; i < 1000; ++i) old_worker->io_work_passes.add();
  reg.add_worker(old_worker.get());
  Sampler sampler(reg, 50ms);
  Recorder rec;
  sampler.subscribe(rec.sink());
  ASSERT_TRUE(wait_for([&] { return rec.size() >= 1; }));
  reg.remove_worker(old_worker.get());
  WorkerStats fresh(0, "new");
  for (int i = 0; i < 5; ++i) fresh.io_work_passes.add();
  reg.add_worker(&fresh);
  size_t n = rec.size();
  ASSERT_TRUE(wait_for([&] { return rec.size() >= n + 2; }));
  sampler.stop();
  uint64_t passes = 0;
  for (const Snapshot& s : rec.copy()) {
    for (const auto& w : s.workers) {
      if (w.name == "new") passes += w.io_work_passes;
    }
  }
  EXPECT_EQ(passes, 5u);
}

// ---- Sampler: sinks, interval, thread

TEST(Sampler, EverySinkOncePerInterval) {
  Registry reg;
  Sampler sampler(reg, 50ms);
  Recorder a, b;
  sampler.subscribe(a.sink());
  sampler.subscribe(b.sink());
  ASSERT_TRUE(wait_for([&] { return a.size() >= 5 && b.size() >= 5; }));
  sampler.stop();
  std::vector<Snapshot> sa = a.copy(), sb = b.copy();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].seq, i + 1);
    EXPECT_EQ(sb[i].seq, i + 1);
  }
  // Stopped means stopped.
  size_t n = a.size();
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(a.size(), n);
  sampler.stop();  // idempotent
}

TEST(Sampler, UnsubscribeFromInsideASink) {
  Registry reg;
  Sampler sampler(reg, 10s);  // no interval closes before the ids are known
  std::atomic<int> a_calls{0}, b_calls{0}, c_calls{0};
  uint64_t a = 0, c = 0;
  // a unsubscribes itself on its second call; b unsubscribes c (subscribed after b) on its
  // first call, so c is never called.
  a = sampler.subscribe([&](const Snapshot&) {
    if (++a_calls == 2) sampler.unsubscribe(a);
  });
  sampler.subscribe([&](const Snapshot&) {
    if (++b_calls == 1) sampler.unsubscribe(c);
  });
  c = sampler.subscribe([&](const Snapshot&) { ++c_calls; });
  sampler.set_interval(20ms);
  ASSERT_TRUE(wait_for([&] { return b_calls.load() >= 6; }));
  sampler.stop();
  EXPECT_EQ(a_calls.load(), 2);
  EXPECT_EQ(c_calls.load(), 0);
}

TEST(Sampler, UnsubscribeFromAnotherThreadWaitsForARunningSink) {
  Registry reg;
  Sampler sampler(reg, 20ms);
  std::atomic<bool> inside{false}, finished{false};
  std::atomic<int> calls{0};
  uint64_t id = sampler.subscribe([&](const Snapshot&) {
    ++calls;
    inside.store(true);
    std::this_thread::sleep_for(100ms);
    finished.store(true);
  });
  ASSERT_TRUE(wait_for([&] { return inside.load(); }));
  sampler.unsubscribe(id);
  EXPECT_TRUE(finished.load());  // returned only once the call in progress was over
  int n = calls.load();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(calls.load(), n);
  sampler.unsubscribe(id);    // unknown now: ignored
  sampler.unsubscribe(4242);  // never known: ignored
}

TEST(Sampler, ThrowingSinkDoesNotStopTheOthers) {
  Registry reg;
  Sampler sampler(reg, 20ms);
  Recorder rec;
  sampler.subscribe([](const Snapshot&) { throw std::runtime_error("sink failed"); });
  sampler.subscribe(rec.sink());
  ASSERT_TRUE(wait_for([&] { return rec.size() >= 3; }));
  EXPECT_GE(sampler.sink_errors(), 3u);
}

TEST(Sampler, SetIntervalTakesEffectLive) {
  Registry reg;
  Sampler sampler(reg, 10s);
  Recorder rec;
  sampler.subscribe(rec.sink());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rec.size(), 0u);
  sampler.set_interval(30ms);
  EXPECT_EQ(sampler.interval(), 30ms);
  ASSERT_TRUE(wait_for([&] { return rec.size() >= 3; }, 5s));
  sampler.set_interval(0ms);  // raised to the minimum, not a busy loop of zero-length intervals
  EXPECT_EQ(sampler.interval(), 1ms);
}

TEST(Sampler, ThreadIsNamedAndStopFromASinkDoesNotDeadlock) {
  Registry reg;
  auto sampler = std::make_unique<Sampler>(reg, 20ms);
  ASSERT_TRUE(wait_for([&] { return sampler->tid() != 0; }));
  std::ifstream comm("/proc/self/task/" + std::to_string(sampler->tid()) + "/comm");
  std::string name;
  std::getline(comm, name);
  EXPECT_EQ(name, "nvmt-sampler");

  std::atomic<int> calls{0};
  Sampler* raw = sampler.get();
  sampler->subscribe([&calls, raw](const Snapshot&) {
    ++calls;
    raw->stop();
  });
  ASSERT_TRUE(wait_for([&] { return calls.load() >= 1; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(calls.load(), 1);
  sampler.reset();  // joins
}

TEST(Sampler, ThreadCpuTimeFromTheKernel) {
  int tid = gettid_now();
  uint64_t before = stats::thread_cpu_ns(tid);
  auto until = std::chrono::steady_clock::now() + 30ms;
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  uint64_t after = stats::thread_cpu_ns(tid);
  EXPECT_GT(before, 0u);
  EXPECT_GT(after, before);
  EXPECT_EQ(stats::thread_cpu_ns(0), 0u);
  EXPECT_EQ(stats::thread_cpu_ns(999'999'999), 0u);
}

// ---- Event log

// The split of a worker's interval: the measured spin (capped by the CPU time), the rest of the
// CPU busy, the rest of the interval asleep; pass counts no longer decide it.
TEST(CpuSplit, MeasuredSpinCappedByCpuTimeRestBusyAndAsleep) {
  stats::WorkerRow w;
  w.cpu_ns = 800;
  w.idle_poll_ns = 300;
  w.busy_passes = 1;
  w.idle_passes = 1'000;  // many cheap empty passes: they do not make the CPU idle
  auto s = stats::cpu_split(w, 1'000);
  EXPECT_EQ(s.idle_poll_ns, 300u);
  EXPECT_EQ(s.busy_ns, 500u);
  EXPECT_EQ(s.sleep_ns, 200u);
  w.idle_poll_ns = 5'000;  // wall time spun while preempted: never more than the CPU time
  s = stats::cpu_split(w, 1'000);
  EXPECT_EQ(s.idle_poll_ns, 800u);
  EXPECT_EQ(s.busy_ns, 0u);
  w.idle_poll_ns = 0;  // a worker that never polls (unbound, inline)
  s = stats::cpu_split(w, 1'000);
  EXPECT_EQ(s.busy_ns, 800u);
  EXPECT_EQ(s.idle_poll_ns, 0u);
}

TEST(EventLog, NumbersTimesAndReturnsInOrder) {
  stats::EventLog log;
  stats::Event a = log.append("threading", R"({"mode":"poll"})");
  stats::Event b = log.append("budgets", R"({"recv_pdus":16})");
  stats::Event c = log.append("connect", R"({"qid":1})");
  EXPECT_EQ(a.seq, 1u);
  EXPECT_EQ(b.seq, 2u);
  EXPECT_EQ(c.seq, 3u);
  EXPECT_GT(a.time_ns, 1'600'000'000'000'000'000);  // CLOCK_REALTIME, not monotonic
  EXPECT_LE(a.time_ns, b.time_ns);
  EXPECT_LE(b.time_ns, c.time_ns);
  std::vector<stats::Event> all = log.since(0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].kind, "threading");
  EXPECT_EQ(all[1].detail_json, R"({"recv_pdus":16})");
  EXPECT_EQ(all[2].seq, 3u);
  std::vector<stats::Event> after2 = log.since(2);
  ASSERT_EQ(after2.size(), 1u);
  EXPECT_EQ(after2[0].kind, "connect");
  EXPECT_TRUE(log.since(3).empty());
  EXPECT_TRUE(log.since(100).empty());
  EXPECT_EQ(log.since(0, 2).size(), 2u);
  EXPECT_EQ(log.last_seq(), 3u);
}

TEST(EventLog, BoundedRingKeepsTheNewest) {
  stats::EventLog log(100);
  for (int i = 0; i < 250; ++i) log.append("e", "{}");
  EXPECT_EQ(log.size(), 100u);
  EXPECT_EQ(log.capacity(), 100u);
  std::vector<stats::Event> all = log.since(0);
  ASSERT_EQ(all.size(), 100u);
  EXPECT_EQ(all.front().seq, 151u);
  EXPECT_EQ(all.back().seq, 250u);
  std::vector<stats::Event> some = log.since(0, 10);
  ASSERT_EQ(some.size(), 10u);
  EXPECT_EQ(some.back().seq, 160u);
  std::vector<stats::Event> tail = log.since(200, 1000);
  ASSERT_EQ(tail.size(), 50u);
  EXPECT_EQ(tail.front().seq, 201u);
  EXPECT_EQ(stats::EventLog().capacity(), 10'000u);
}

TEST(EventLog, SubscribersSeeEveryEventOnceInOrderAcrossThreads) {
  stats::EventLog log(50);  // smaller than the event count: delivery does not depend on the ring
  std::mutex mu;
  std::vector<uint64_t> seen;
  log.subscribe([&](const stats::Event& e) {
    std::lock_guard lock(mu);
    seen.push_back(e.seq);
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) log.append("e", "{}");
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), 4000u);
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i + 1);
}

TEST(EventLog, AppendAndUnsubscribeFromInsideASubscriber) {
  stats::EventLog log;
  std::vector<std::string> order;
  uint64_t self = 0;
  self = log.subscribe([&](const stats::Event& e) {
    order.push_back("a:" + e.kind);
    if (e.kind == "first") log.append("nested", "{}");  // delivered after "first" is done
    if (e.kind == "nested") log.unsubscribe(self);
  });
  log.subscribe([&](const stats::Event& e) { order.push_back("b:" + e.kind); });
  log.append("first", "{}");
  log.append("third", "{}");
  std::vector<std::string> want = {"a:first", "b:first", "a:nested", "b:nested", "b:third"};
  EXPECT_EQ(order, want);
  EXPECT_EQ(log.last_seq(), 3u);

  // A throwing subscriber is counted, the others still get the event.
  log.subscribe([](const stats::Event&) { throw std::runtime_error("x"); });
  log.append("fourth", "{}");
  EXPECT_EQ(order.back(), "b:fourth");
  EXPECT_EQ(log.sink_errors(), 1u);
}

// Providers (probes/ installs one) fill each snapshot before any sink sees it, with the
// interval's own data; a removed provider is never called again; a throwing one is counted.
TEST(Sampler, ProvidersFillTheSnapshotBeforeTheSinks) {
  Registry reg;
  Sampler sampler(reg, 20ms);
  std::atomic<uint64_t> calls{0};
  const uint64_t id = sampler.add_provider([&calls](Snapshot& s) {
    const uint64_t n = ++calls;
    s.probes.push_back({"runqlat", "", {}});
    s.probe_counters.push_back({"offcpu_ns", "tid=1", n});
  });
  sampler.add_provider([](Snapshot&) { throw std::runtime_error("provider failed"); });
  Recorder sink;
  sampler.subscribe(sink.sink());
  ASSERT_TRUE(wait_for([&] { return sink.size() >= 3; }));
  const size_t seen = sink.size();  // all of these were provided for
  sampler.remove_provider(id);
  const uint64_t after_removal = calls.load();
  ASSERT_TRUE(wait_for([&] { return sink.size() >= seen + 3; }));
  sampler.stop();
  EXPECT_EQ(calls.load(), after_removal);
  const std::vector<Snapshot> snaps = sink.copy();
  for (size_t i = 0; i < seen; ++i) {
    ASSERT_EQ(snaps[i].probes.size(), 1u);
    EXPECT_EQ(snaps[i].probes[0].source, "runqlat");
    ASSERT_EQ(snaps[i].probe_counters.size(), 1u);
    EXPECT_EQ(snaps[i].probe_counters[0].value, i + 1);  // one call per interval, in order
  }
  EXPECT_TRUE(snaps.back().probes.empty());
  EXPECT_EQ(sampler.last().seq, snaps.back().seq);
  EXPECT_GE(sampler.sink_errors(), snaps.size());
}

}  // namespace
