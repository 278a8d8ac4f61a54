// Unbound executor and CPU topology: real fds (socketpairs, eventfds), real pinned worker
// threads. Every wait is a condition polled with a deadline; no assertion depends on a sleep
// being long enough, except the checks that something does NOT happen, which give it time.
#include "engine/exec/unbound/unbound_executor.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/system/topology.hpp"
#include "support/fake_task.hpp"

namespace {

using exec::Progress;
using exec::UnboundConfig;
using exec::UnboundExecutor;
using sys::AffinityScope;
using namespace std::chrono_literals;
using test_support::settle;
using test_support::tids_of;
using test_support::wait_for;
using TestTask = test_support::FakeTask;

// ---------------------------------------------------------------------------------------------
// Topology

// 16 CPUs: SMT siblings c and c+8 (core c % 8), two cores per last-level cache, two caches per
// NUMA node.
sys::Topology synthetic() {
  std::vector<sys::CpuPlace> cpus;
  for (unsigned c = 0; c < 16; ++c) {
    const unsigned core = c % 8;
    cpus.push_back({c, core, core / 2, core / 4});
  }
  return sys::Topology(cpus);
}

using Pods = std::vector<std::vector<unsigned>>;

TEST(Topology, SyntheticPodsPerScope) {
  const auto topo = synthetic();
  std::vector<unsigned> all;
  for (unsigned c = 0; c < 16; ++c) all.push_back(c);

  Pods cpu_pods;
  for (unsigned c = 0; c < 16; ++c) cpu_pods.push_back({c});
  EXPECT_EQ(topo.pods(AffinityScope::cpu, all), cpu_pods);
  EXPECT_EQ(topo.pods(AffinityScope::smt, all),
            (Pods{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}));
  EXPECT_EQ(topo.pods(AffinityScope::cache, all),
            (Pods{{0, 1, 8, 9}, {2, 3, 10, 11}, {4, 5, 12, 13}, {6, 7, 14, 15}}));
  EXPECT_EQ(topo.pods(AffinityScope::numa, all),
            (Pods{{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}}));
  EXPECT_EQ(topo.pods(AffinityScope::system, all), Pods{all});
}

TEST(Topology, PodsAreCutToTheMaskAndEmptyPodsDropped) {
  const auto topo = synthetic();
  const std::vector<unsigned> mask = {15, 1, 9, 2, 99};  // 99 is not a CPU: left out
  EXPECT_EQ(topo.pods(AffinityScope::cpu, mask), (Pods{{1}, {2}, {9}, {15}}));
  EXPECT_EQ(topo.pods(AffinityScope::smt, mask), (Pods{{1, 9}, {2}, {15}}));
  EXPECT_EQ(topo.pods(AffinityScope::cache, mask), (Pods{{1, 9}, {2}, {15}}));
  EXPECT_EQ(topo.pods(AffinityScope::numa, mask), (Pods{{1, 2, 9}, {15}}));
  EXPECT_EQ(topo.pods(AffinityScope::system, mask), (Pods{{1, 2, 9, 15}}));
  EXPECT_TRUE(topo.pods(AffinityScope::system, {}).empty());
  EXPECT_TRUE(topo.pods(AffinityScope::cache, {99, 100}).empty());
  EXPECT_TRUE(topo.online(15));
  EXPECT_FALSE(topo.online(16));
  EXPECT_EQ(topo.online().size(), 16u);
}

TEST(Topology, ScopeNames) {
  for (auto s : {AffinityScope::cpu, AffinityScope::smt, AffinityScope::cache, AffinityScope::numa,
                 AffinityScope::system})
    EXPECT_EQ(sys::parse_affinity_scope(sys::to_string(s)), s);
  EXPECT_FALSE(sys::parse_affinity_scope("llc").has_value());
  EXPECT_FALSE(sys::parse_affinity_scope("").has_value());
}

TEST(Topology, CpuListParsing) {
  EXPECT_EQ(sys::parse_cpu_list("0-3,6").cpus, (std::vector<unsigned>{0, 1, 2, 3, 6}));
  EXPECT_EQ(sys::parse_cpu_list("6,0-1,1").cpus, (std::vector<unsigned>{0, 1, 6}));
  EXPECT_TRUE(sys::parse_cpu_list("").cpus.empty());
  EXPECT_TRUE(sys::parse_cpu_list("").error.empty());
  for (const char* bad : {"3-1", "a", "1,,2", "1-", "-1", "1 2"})
    EXPECT_FALSE(sys::parse_cpu_list(bad).error.empty()) << bad;
}

// On the machine the test runs on: every scope partitions the online CPUs, and the finer
// scopes nest in the coarser ones.
TEST(Topology, HostPodsPartitionTheOnlineCpus) {
  const auto& host = sys::Topology::host();
  EXPECT_TRUE(host.load_error().empty()) << host.load_error();
  const auto cpus = sys::online_cpus();
  ASSERT_FALSE(cpus.empty());
  for (unsigned c : cpus) EXPECT_TRUE(sys::cpu_online(c));
  EXPECT_FALSE(sys::cpu_online(100000));
  std::string shape;
  size_t previous = 0;
  for (auto s : {AffinityScope::cpu, AffinityScope::smt, AffinityScope::cache, AffinityScope::numa,
                 AffinityScope::system}) {
    const auto pods = sys::pods(s, cpus);
    std::vector<unsigned> seen;
    for (const auto& p : pods) {
      EXPECT_FALSE(p.empty());
      EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
      seen.insert(seen.end(), p.begin(), p.end());
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, cpus) << sys::to_string(s);
    if (previous != 0) {
      EXPECT_LE(pods.size(), previous) << sys::to_string(s);
    }
    previous = pods.size();
    shape += std::string(sys::to_string(s)) + "=" + std::to_string(pods.size()) + " ";
  }
  EXPECT_EQ(sys::pods(AffinityScope::cpu, cpus).size(), cpus.size());
  EXPECT_EQ(sys::pods(AffinityScope::system, cpus), Pods{cpus});
  // A single CPU is a pod of its own at every scope.
  EXPECT_EQ(sys::pods(AffinityScope::system, {cpus.back()}), Pods{{cpus.back()}});
  std::printf("host pods: %s\n", shape.c_str());
}

TEST(Topology, PinThreadAndReadItBack) {
  const auto cpus = sys::online_cpus();
  std::thread t([&] {
    const int tid = sys::current_tid();
    for (unsigned c : cpus) {
      ASSERT_EQ(sys::pin_current_thread({c}), "");
      auto allowed = sys::thread_cpus_allowed(tid);
      ASSERT_EQ(allowed.error, "");
      EXPECT_EQ(allowed.cpus, std::vector<unsigned>{c});
      EXPECT_EQ(sys::thread_affinity(tid).cpus, std::vector<unsigned>{c});
      EXPECT_EQ(unsigned(sched_getcpu()), c);
    }
    ASSERT_EQ(sys::pin_thread(pthread_self(), cpus), "");
    EXPECT_EQ(sys::thread_cpus_allowed(tid).cpus, cpus);
    EXPECT_NE(sys::pin_current_thread({}), "");
    EXPECT_NE(sys::pin_current_thread({CPU_SETSIZE + 1}), "");
    EXPECT_EQ(sys::thread_cpus_allowed(tid).cpus, cpus);  // a refused pin changes nothing
  });
  t.join();
  EXPECT_NE(sys::thread_cpus_allowed(999999999).error, "");
}

TEST(Topology, ThreadPriority) {
  EXPECT_EQ(sys::parse_thread_priority("fifo"), sys::ThreadPriority::fifo);
  EXPECT_FALSE(sys::parse_thread_priority("rt").has_value());
  std::string skip;
  std::thread t([&] {
    const int tid = sys::current_tid();
    std::string err = sys::set_thread_priority(tid, sys::ThreadPriority::nice);
    if (!err.empty()) {
      skip = err;
      return;
    }
    errno = 0;
    EXPECT_EQ(getpriority(PRIO_PROCESS, id_t(tid)), -20);
    ASSERT_EQ(sys::set_thread_priority(tid, sys::ThreadPriority::fifo), "");
    EXPECT_EQ(sched_getscheduler(tid), SCHED_FIFO);
    ASSERT_EQ(sys::set_thread_priority(tid, sys::ThreadPriority::normal), "");
    EXPECT_EQ(sched_getscheduler(tid), SCHED_OTHER);
    EXPECT_EQ(getpriority(PRIO_PROCESS, id_t(tid)), 0);
  });
  t.join();
  if (!skip.empty()) GTEST_SKIP() << "no CAP_SYS_NICE: " << skip;
  EXPECT_NE(sys::set_thread_priority(999999999, sys::ThreadPriority::normal), "");
}

// ---------------------------------------------------------------------------------------------
// Unbound executor: the same behaviour with one worker per pod (edge-triggered) and with
// several workers sharing a pod's epoll set (EPOLLONESHOT and re-arm).

struct Shape {
  const char* name;
  UnboundConfig cfg;
};

void PrintTo(const Shape& shape, std::ostream* os) { *os << shape.name; }

class Unbound : public ::testing::TestWithParam<Shape> {};

const Shape kShapes[] = {
    {"PodPerCpu", {.threads = 0, .cpus = {}, .scope = AffinityScope::cpu, .strict = true}},
    {"SharedPod", {.threads = 2, .cpus = {}, .scope = AffinityScope::system, .strict = false}},
    {"Crowded", {.threads = 4, .cpus = {}, .scope = AffinityScope::system, .strict = false}},
};

INSTANTIATE_TEST_SUITE_P(Shapes, Unbound, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_P(Unbound, RunsOnAttachAndWhenReadable) {
  TestTask task;
  UnboundExecutor ex(GetParam().cfg);
  EXPECT_EQ(ex.name(), "unbound");
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  EXPECT_EQ(task.name().rfind("nvmt-unb/", 0), 0u) << task.name();
  EXPECT_EQ(ex.tasks(), std::vector<exec::Task*>{&task});

  for (int i = 1; i <= 5; ++i) {
    task.send();
    ASSERT_TRUE(wait_for([&] { return task.bytes.load() == i; })) << "byte " << i;
  }
  EXPECT_EQ(task.overlaps.load(), 0);
  EXPECT_EQ(task.unready_passes.load(), 0);
  EXPECT_TRUE(tids_of(ex).count(task.last_tid.load()));
  ex.stop();
  EXPECT_EQ(task.retired.load(), 1);
  EXPECT_TRUE(ex.tasks().empty());
}

// 4 threads hammer schedule() while a writer streams bytes into every socket: io_work never
// overlaps itself, no kick and no byte is lost.
TEST_P(Unbound, NeverConcurrentWhileHammered) {
  constexpr int kTasks = 8;
  constexpr int kHammerThreads = 4;
  std::vector<std::unique_ptr<TestTask>> tasks;  // outlives ex
  UnboundExecutor ex(GetParam().cfg);
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<TestTask>());
    tasks.back()->hook = [](TestTask&) {
      std::atomic<int> spin{0};  // widen the window for an overlap to show
      while (spin.fetch_add(1, std::memory_order_relaxed) < 300) {
      }
    };
    ex.attach(*tasks.back());
  }
  std::atomic<bool> running{true};
  std::vector<long> sent(kTasks, 0);
  std::thread writer([&] {
    while (running.load())
      for (int i = 0; i < kTasks; ++i)
        if (tasks[i]->try_send()) ++sent[i];
  });
  std::vector<std::thread> hammers;
  for (int h = 0; h < kHammerThreads; ++h)
    hammers.emplace_back([&, h] {
      std::mt19937 rng(h);
      while (running.load()) {
        TestTask& t = *tasks[rng() % kTasks];
        t.kicks.fetch_add(1);
        ex.schedule(t);
      }
    });
  std::this_thread::sleep_for(1s);
  running = false;
  for (auto& th : hammers) th.join();
  writer.join();

  for (int i = 0; i < kTasks; ++i) {
    TestTask& t = *tasks[i];
    ASSERT_TRUE(wait_for([&] { return t.bytes.load() == sent[i]; }))
        << "task " << i << " got " << t.bytes.load() << " of " << sent[i];
    ASSERT_TRUE(wait_for([&] { return t.observed_kicks.load() == t.kicks.load(); })) << i;
    EXPECT_EQ(t.overlaps.load(), 0);
    EXPECT_EQ(t.unready_passes.load(), 0);
    EXPECT_GT(sent[i], 0);
  }
  uint64_t passes = 0, idle = 0, wakeups = 0;
  for (const auto& s : ex.stats()) {
    passes += s.io_work_passes;
    idle += s.idle_passes;
    wakeups += s.wakeups;
  }
  EXPECT_GT(passes, 0u);
  EXPECT_EQ(idle, passes);  // TestTask never sets exec_did_work
  EXPECT_GT(wakeups, 0u);
  ex.stop();
  for (auto& t : tasks) EXPECT_EQ(t->retired.load(), 1);
}

// A kick lands while the task runs its last pass, which returns closed: the task is retired
// (and here deleted) once, the pending mark dies with it, other tasks keep running.
TEST_P(Unbound, CloseWithPendingKick) {
  std::atomic<int> retired{0};
  std::atomic<bool> armed{false}, running{false}, release{false};
  TestTask other;
  UnboundExecutor ex(GetParam().cfg);
  auto* dying = new TestTask;
  dying->delete_on_retire = true;
  dying->retire_counter = &retired;
  dying->hook = [&](TestTask&) {
    if (!armed.load()) return;
    running = true;
    while (!release.load()) std::this_thread::yield();
  };
  ex.attach(*dying);
  ex.attach(other);
  ASSERT_TRUE(wait_for([&] { return dying->passes.load() >= 1 && other.passes.load() >= 1; }));
  armed = true;
  ex.schedule(*dying);
  ASSERT_TRUE(wait_for([&] { return running.load(); }));
  dying->send('c');
  ex.schedule(*dying);  // pending: the task is running
  ex.schedule(other);
  release = true;
  ASSERT_TRUE(wait_for([&] { return retired.load() == 1; }));
  other.send();
  ASSERT_TRUE(wait_for([&] { return other.bytes.load() == 1; }));
  ex.stop();
  EXPECT_EQ(retired.load(), 1);
  EXPECT_EQ(other.retired.load(), 1);
}

// The task fills its socket and returns idle at EAGAIN: it must run again when the socket turns
// writable (EPOLLOUT armed only while it is not, in pods with several workers).
TEST_P(Unbound, BlockedSenderResumesWhenWritable) {
  constexpr long kTotal = 8l << 20;  // far more than the socket buffers hold
  TestTask task;
  UnboundExecutor ex(GetParam().cfg);
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  ASSERT_TRUE(settle(task));
  task.to_send = kTotal;
  ex.schedule(task);
  long got = 0;
  ASSERT_TRUE(wait_for([&] {
    got += task.read_peer();
    return got == kTotal;
  }, 30s)) << got << " of " << kTotal;
  ASSERT_TRUE(settle(task));  // and no spinning afterwards: the pass count comes to rest
  EXPECT_EQ(task.overlaps.load(), 0);
}

// The peer drains the socket after the pass hit EAGAIN but before the executor re-arms the
// fds: the writable edge has passed already. The task must still be woken (one-shot pods once
// asked poll() at re-arm time, found the socket writable, armed no EPOLLOUT and lost it).
TEST_P(Unbound, SenderDrainedBeforeRearmStillResumes) {
  constexpr long kTotal = 1l << 20;
  TestTask task;
  std::atomic<long> drained{0};
  std::atomic<int> drains{0};
  task.after_send = [&](TestTask& t) {
    if (t.to_send.load() > 0 && drains.load() < 3) {  // blocked: empty the socket behind its back
      drains.fetch_add(1);
      drained.fetch_add(t.read_peer());
    }
  };
  UnboundExecutor ex(GetParam().cfg);
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  ASSERT_TRUE(settle(task));
  task.to_send = kTotal;
  ex.schedule(task);
  // Nobody else reads yet: each further drain needs the wake-up the previous one left behind.
  ASSERT_TRUE(wait_for([&] { return drains.load() == 3; })) << drains.load() << " drains";
  long got = 0;
  ASSERT_TRUE(wait_for([&] {
    got += task.read_peer();
    return got + drained.load() == kTotal;
  }, 20s)) << got + drained.load() << " of " << kTotal;
  ASSERT_TRUE(settle(task));
}

// Holds the task inside io_work, releases it, and checks the handover comes once, after that
// pass returned, and that the old executor never runs it again; then it runs on a second one.
TEST_P(Unbound, ReleaseWhileBusyHandsOverAfterThePass) {
  std::atomic<bool> hold{false}, in_pass{false}, let_go{false};
  std::atomic<int> handovers{0};
  std::atomic<bool> in_progress_at_handover{true};
  std::atomic<int> passes_at_handover{-1};
  auto ex1 = std::make_unique<UnboundExecutor>(GetParam().cfg);
  UnboundExecutor ex2(GetParam().cfg);
  TestTask task;
  task.hook = [&](TestTask&) {
    if (!hold.load()) return;
    in_pass = true;
    while (!let_go.load()) std::this_thread::yield();
  };
  ex1->attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  hold = true;
  ex1->schedule(task);
  ASSERT_TRUE(wait_for([&] { return in_pass.load(); }));
  hold = false;

  ex1->release(task, [&](exec::Task& t) {
    auto& tt = static_cast<TestTask&>(t);
    in_progress_at_handover = tt.in_progress.load();
    passes_at_handover = tt.passes.load();
    tt.moved_out = true;
    EXPECT_TRUE(t.exec_scheduled.load());
    handovers.fetch_add(1);
  });
  EXPECT_EQ(handovers.load(), 0);  // the task is inside io_work: not yet
  ex1->schedule(task);             // pending: one more pass would be due, but release wins
  task.send();
  let_go = true;
  ASSERT_TRUE(wait_for([&] { return handovers.load() == 1; }));
  EXPECT_FALSE(in_progress_at_handover.load());
  EXPECT_EQ(passes_at_handover.load(), task.passes.load());

  // Nothing on the old executor any more: kicks dropped, readiness unseen.
  ex1->schedule(task);
  task.send();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(task.passes_while_moved.load(), 0);
  EXPECT_EQ(ex1->tasks(), std::vector<exec::Task*>{});

  task.moved_out = false;
  const int passes_before = task.passes.load();
  ex2.attach(task);
  EXPECT_FALSE(task.exec_scheduled.load());
  ASSERT_TRUE(wait_for([&] { return task.passes.load() > passes_before && task.bytes.load() == 2; }));
  EXPECT_TRUE(tids_of(ex2).count(task.last_tid.load()));
  task.send();
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() == 3; }));
  ex1->stop();
  EXPECT_EQ(task.retired.load(), 0);  // not ex1's any more
  ex1.reset();
  ex2.stop();
  EXPECT_EQ(task.retired.load(), 1);
  EXPECT_EQ(handovers.load(), 1);
  EXPECT_EQ(task.overlaps.load(), 0);
}

// Shared pods hand an idle task over at once, on the caller; a pod of one worker keeps the task
// on that worker to the end (its queue may own an io_uring bound to it), handover included.
TEST_P(Unbound, ReleaseIdleHandsOverOnTheCallingThreadOrTheTasksWorker) {
  UnboundExecutor ex(GetParam().cfg);
  TestTask task;
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  ASSERT_TRUE(settle(task));
  std::atomic<int> handover_tid{0};
  ex.release(task, [&](exec::Task&) { handover_tid = sys::current_tid(); });
  if (ex.keeps_tasks_on_one_thread()) {
    ASSERT_TRUE(wait_for([&] { return handover_tid.load() != 0; }));
    EXPECT_EQ(handover_tid.load(), task.last_tid.load());
    EXPECT_TRUE(tids_of(ex).count(handover_tid.load()));
  } else {
    EXPECT_EQ(handover_tid.load(), sys::current_tid());
  }
  EXPECT_EQ(ex.keeps_tasks_on_one_thread(), std::string(GetParam().name) == "PodPerCpu");
  EXPECT_TRUE(ex.tasks().empty());
  ex.release(task, [&](exec::Task&) { ADD_FAILURE() << "second handover"; });  // not attached
  ex.stop();
  EXPECT_EQ(task.retired.load(), 0);
}

TEST_P(Unbound, ManyAttachesFromSeveralThreads) {
  constexpr int kTasks = 300;  // more than one slot chunk
  constexpr int kAttachers = 4;
  std::vector<std::unique_ptr<TestTask>> tasks;
  for (int i = 0; i < kTasks; ++i) tasks.push_back(std::make_unique<TestTask>());
  UnboundExecutor ex(GetParam().cfg);
  std::vector<std::thread> attachers;
  for (int a = 0; a < kAttachers; ++a)
    attachers.emplace_back([&, a] {
      for (int i = a; i < kTasks; i += kAttachers) ex.attach(*tasks[i]);
    });
  for (auto& th : attachers) th.join();
  EXPECT_EQ(ex.tasks().size(), size_t(kTasks));
  for (auto& t : tasks) t->send();
  for (auto& t : tasks) ASSERT_TRUE(wait_for([&] { return t->bytes.load() == 1; }));
  // Close half; their slots are reused by new attachments.
  for (int i = 0; i < kTasks; i += 2) tasks[i]->send('c');
  for (int i = 0; i < kTasks; i += 2) ASSERT_TRUE(wait_for([&] { return tasks[i]->retired.load() == 1; }));
  std::vector<std::unique_ptr<TestTask>> fresh;
  for (int i = 0; i < kTasks / 2; ++i) {
    fresh.push_back(std::make_unique<TestTask>());
    ex.attach(*fresh.back());
  }
  for (auto& t : fresh) t->send();
  for (auto& t : fresh) ASSERT_TRUE(wait_for([&] { return t->bytes.load() == 1; }));
  ex.stop();
  for (auto& t : tasks) EXPECT_EQ(t->retired.load(), 1);
  for (auto& t : fresh) EXPECT_EQ(t->retired.load(), 1);
  for (auto& t : tasks) EXPECT_EQ(t->overlaps.load(), 0);
}

// ---------------------------------------------------------------------------------------------
// Shapes, pinning and placement on this machine (at least 2 CPUs for the per-CPU checks).

std::vector<unsigned> two_cpus() {
  auto cpus = sys::online_cpus();
  if (cpus.size() > 2) cpus.resize(2);
  return cpus;
}

TEST(UnboundShape, StrictWorkersArePinnedToTheirPod) {
  const auto cpus = two_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  UnboundExecutor ex({.threads = 0, .cpus = cpus, .scope = AffinityScope::cpu, .strict = true});
  ASSERT_EQ(ex.pod_cpus(), (Pods{{cpus[0]}, {cpus[1]}}));
  const auto threads = ex.threads();
  ASSERT_EQ(threads.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ(threads[p].name, "nvmt-unb/" + std::to_string(p) + ".0");
    EXPECT_EQ(threads[p].role, "worker");
    EXPECT_EQ(threads[p].cpus, std::vector<unsigned>{cpus[p]});
    EXPECT_EQ(sys::thread_cpus_allowed(threads[p].tid).cpus, std::vector<unsigned>{cpus[p]});
  }
}

TEST(UnboundShape, NonStrictWorkersMayRunAnywhereInTheMask) {
  const auto cpus = two_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  UnboundExecutor ex({.threads = 0, .cpus = cpus, .scope = AffinityScope::cpu, .strict = false});
  for (const auto& t : ex.threads()) {
    EXPECT_EQ(t.cpus, cpus);
    EXPECT_EQ(sys::thread_cpus_allowed(t.tid).cpus, cpus) << t.name;
  }
  // A one-CPU mask confines every worker, strict or not.
  UnboundExecutor one({.threads = 3, .cpus = {cpus[1]}, .scope = AffinityScope::system, .strict = false});
  ASSERT_EQ(one.threads().size(), 3u);
  for (const auto& t : one.threads())
    EXPECT_EQ(sys::thread_cpus_allowed(t.tid).cpus, std::vector<unsigned>{cpus[1]}) << t.name;
}

TEST(UnboundShape, WorkersSplitOverPodsAndPodsMergeWhenFewerThreads) {
  const auto cpus = two_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  {
    UnboundExecutor ex({.threads = 1, .cpus = cpus, .scope = AffinityScope::cpu, .strict = true});
    EXPECT_EQ(ex.pod_cpus(), Pods{cpus});  // two pods merged into one
    ASSERT_EQ(ex.threads().size(), 1u);
    EXPECT_EQ(ex.threads()[0].name, "nvmt-unb/0.0");
    EXPECT_EQ(sys::thread_cpus_allowed(ex.threads()[0].tid).cpus, cpus);
  }
  {
    UnboundExecutor ex({.threads = 3, .cpus = cpus, .scope = AffinityScope::cpu, .strict = true});
    EXPECT_EQ(ex.pod_cpus(), (Pods{{cpus[0]}, {cpus[1]}}));
    std::vector<std::string> names;
    for (const auto& t : ex.threads()) names.push_back(t.name);
    EXPECT_EQ(names, (std::vector<std::string>{"nvmt-unb/0.0", "nvmt-unb/0.1", "nvmt-unb/1.0"}));
    EXPECT_EQ(ex.stats().size(), 3u);
  }
}

TEST(UnboundShape, TaskRunsInThePodOfItsIncomingCpu) {
  const auto cpus = two_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  std::vector<std::unique_ptr<TestTask>> tasks;  // outlives ex
  UnboundExecutor ex({.threads = 0, .cpus = cpus, .scope = AffinityScope::cpu, .strict = true});
  for (size_t p : {1u, 0u}) {
    TestTask task;
    task.cpu = int(cpus[p]);
    ex.attach(task);
    for (int i = 1; i <= 3; ++i) {
      task.send();
      ASSERT_TRUE(wait_for([&] { return task.bytes.load() == i; }));
      EXPECT_EQ(task.name(), "nvmt-unb/" + std::to_string(p) + ".0");
      EXPECT_EQ(task.last_cpu.load(), int(cpus[p]));
    }
    ex.release(task, [](exec::Task&) {});
    ASSERT_TRUE(wait_for([&] { return ex.tasks().empty(); }));
  }
  // Unknown or outside the mask: round-robin over the pods.
  std::set<std::string> names;
  for (int i = 0; i < 4; ++i) {
    tasks.push_back(std::make_unique<TestTask>());
    tasks.back()->cpu = i % 2 == 0 ? -1 : 100000;
    ex.attach(*tasks.back());
  }
  for (auto& t : tasks) {
    ASSERT_TRUE(wait_for([&] { return t->passes.load() >= 1; }));
    names.insert(t->name());
  }
  EXPECT_EQ(names, (std::set<std::string>{"nvmt-unb/0.0", "nvmt-unb/1.0"}));
}

TEST(UnboundShape, RefusesBadConfigurations) {
  UnboundConfig offline{.threads = 0, .cpus = {100000}, .scope = AffinityScope::cache, .strict = false};
  EXPECT_NE(UnboundExecutor::check(offline).find("cpus"), std::string::npos);
  try {
    UnboundExecutor ex(offline);
    ADD_FAILURE() << "constructed with an offline CPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("100000"), std::string::npos) << e.what();
  }
  EXPECT_NE(UnboundExecutor::check({.threads = 100000}).find("threads"), std::string::npos);
  EXPECT_EQ(UnboundExecutor::check({}), "");
  auto ex = exec::make_unbound_executor({});
  EXPECT_EQ(ex->name(), "unbound");
  EXPECT_EQ(ex->threads().size(), sys::online_cpus().size());
}

}  // namespace
