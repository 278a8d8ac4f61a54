// The contract every executor keeps (engine/exec/executor.hpp), one suite run against each
// execution model: bound and poll (the event executor), unbound with one worker per pod and with
// a pod shared by several workers, inline. What only one model does (placement, pinning, the
// inline batch, busy polling) stays in that executor's own test file.
// Real fds and threads; every wait is a condition polled with a deadline, except the checks that
// something does NOT happen, which give it time.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "engine/exec/event/event_executor.hpp"
#include "engine/exec/inline/inline_executor.hpp"
#include "engine/exec/unbound/unbound_executor.hpp"
#include "support/fake_task.hpp"
#include "support/peer_shutdown_check.hpp"

namespace {

using namespace std::chrono_literals;
using test_support::FakeTask;
using test_support::wait_for;

struct Bound {
  static std::unique_ptr<exec::Executor> make() { return std::make_unique<exec::EventExecutor>(exec::EventExecutorConfig{.threads = 2}); }
};
struct Poll {
  static std::unique_ptr<exec::Executor> make() {
    return std::make_unique<exec::EventExecutor>(
        exec::EventExecutorConfig{.threads = 1, .busy_poll_ns = 200'000, .mode = "poll", .thread_prefix = "nvmt-poll"});
  }
};
struct UnboundPodPerCpu {
  static std::unique_ptr<exec::Executor> make() {
    return std::make_unique<exec::UnboundExecutor>(
        exec::UnboundConfig{.threads = 0, .cpus = {}, .scope = sys::AffinityScope::cpu, .strict = true});
  }
};
struct UnboundSharedPod {
  static std::unique_ptr<exec::Executor> make() {
    return std::make_unique<exec::UnboundExecutor>(
        exec::UnboundConfig{.threads = 2, .cpus = {}, .scope = sys::AffinityScope::system, .strict = false});
  }
};
struct Inline {
  static std::unique_ptr<exec::Executor> make() {
    return std::make_unique<exec::InlineExecutor>(exec::InlineConfig{.threads = 0, .cpus = {}, .inline_budget = 8});
  }
};

template <typename Kind>
class ExecutorContract : public ::testing::Test {};
using Kinds = ::testing::Types<Bound, Poll, UnboundPodPerCpu, UnboundSharedPod, Inline>;
TYPED_TEST_SUITE(ExecutorContract, Kinds);

// Attach runs the task once; each byte on its socket runs it again; never two passes at once, and
// the executor marked it ready before every pass an event woke (the queue's wait histogram reads
// that mark; the event executor does not mark the pass attach runs, the others do).
TYPED_TEST(ExecutorContract, RunsOnAttachAndWhenReadable) {
  auto ex = TypeParam::make();
  FakeTask task;
  ex->attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  task.unready_passes = 0;
  for (int i = 1; i <= 5; ++i) {
    task.send();
    ASSERT_TRUE(wait_for([&] { return task.bytes.load() == i; })) << "byte " << i;
  }
  EXPECT_EQ(task.overlaps.load(), 0);
  EXPECT_EQ(task.unready_passes.load(), 0);
  ex->stop();
  EXPECT_EQ(task.retired.load(), 1);
}

// See support/peer_shutdown_check.hpp.
TYPED_TEST(ExecutorContract, TellsTheTaskItsPeerShutDown) {
  FakeTask task;  // outlives the executor, which retires it
  auto ex = TypeParam::make();
  ex->attach(task);
  test_support::expect_peer_shutdown_reaches(task);
}

// Progress::more runs the task again with no event: 50 passes return more, the next idle; events
// still serve it afterwards.
TYPED_TEST(ExecutorContract, MoreRunsAgainWithoutEvents) {
  constexpr int kBudgetPasses = 50;
  FakeTask task;  // outlives the executor, which retires it
  auto ex = TypeParam::make();
  task.more_budget = kBudgetPasses;
  ex->attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= kBudgetPasses + 1; }));
  EXPECT_EQ(task.more_budget.load(), 0);
  task.send();
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() == 1; }));
}

// Threads hammer schedule() while a writer streams bytes into every socket: io_work never
// overlaps itself, and no kick and no byte is lost (each task runs after its last kick).
TYPED_TEST(ExecutorContract, NeverConcurrentAndNothingLostWhileHammered) {
  constexpr int kTasks = 16, kKickers = 3;
  auto ex = TypeParam::make();
  std::vector<std::unique_ptr<FakeTask>> tasks;
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<FakeTask>());
    tasks.back()->hook = [](FakeTask&) {  // widen the window for an overlap to show
      std::atomic<int> spin{0};
      while (spin.fetch_add(1, std::memory_order_relaxed) < 200) {
      }
    };
    ex->attach(*tasks.back());
  }
  std::atomic<long> sent{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kKickers; ++k)
    threads.emplace_back([&, k] {
      std::mt19937 rng(k);
      const auto until = std::chrono::steady_clock::now() + 500ms;
      while (std::chrono::steady_clock::now() < until) {
        FakeTask& t = *tasks[rng() % kTasks];
        t.kicks.fetch_add(1);
        ex->schedule(t);
      }
    });
  threads.emplace_back([&] {
    for (int round = 0; round < 200; ++round)
      for (auto& t : tasks)
        if (t->try_send()) sent.fetch_add(1);
  });
  for (auto& th : threads) th.join();
  long received = 0;
  ASSERT_TRUE(wait_for([&] {
    received = 0;
    for (auto& t : tasks) received += t->bytes.load();
    return received == sent.load();
  })) << received << " of " << sent.load() << " bytes";
  for (auto& t : tasks) {
    ASSERT_TRUE(wait_for([&] { return t->observed_kicks.load() == t->kicks.load(); })) << "a kick was lost";
    EXPECT_EQ(t->overlaps.load(), 0);
  }
  ex->stop();
  for (auto& t : tasks) EXPECT_EQ(t->retired.load(), 1);
}

// A pass that returns closed retires the task once; readiness on its socket afterwards runs
// nothing (checked once a task behind it has run for its own byte); stop() does not retire it again.
TYPED_TEST(ExecutorContract, ClosedRetiresOnceAndIsNeverRunAgain) {
  auto ex = TypeParam::make();
  FakeTask closing, probe;
  ex->attach(closing);
  ex->attach(probe);
  ASSERT_TRUE(wait_for([&] { return closing.passes.load() >= 1 && probe.passes.load() >= 1; }));
  closing.send('c');
  ASSERT_TRUE(wait_for([&] { return closing.retired.load() == 1; }));
  const int passes_at_close = closing.passes.load();
  closing.send();
  probe.send();
  ASSERT_TRUE(wait_for([&] { return probe.bytes.load() == 1; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(closing.passes.load(), passes_at_close);
  ex->stop();
  EXPECT_EQ(closing.retired.load(), 1);
  EXPECT_EQ(probe.retired.load(), 1);
}

// An fd watched from inside io_work (the backend's completion eventfd): already signalled, the
// pass after watch_fd consumes it; later signals arrive through the executor alone.
TYPED_TEST(ExecutorContract, WatchFdAddedLaterTriggersIoWork) {
  const int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  auto ex = TypeParam::make();
  FakeTask task(ex.get());
  ex->attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  const uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, sizeof one), ssize_t(sizeof one));
  task.watch_request = efd;
  ex->schedule(task);
  ASSERT_TRUE(wait_for([&] { return task.eventfd_sum.load() == 1; }));
  for (uint64_t i = 2; i <= 4; ++i) {
    ASSERT_EQ(write(efd, &one, sizeof one), ssize_t(sizeof one));
    ASSERT_TRUE(wait_for([&] { return task.eventfd_sum.load() == i; })) << i;
  }
  ex->stop();
  EXPECT_EQ(task.retired.load(), 1);
  close(efd);
}

// stop() with queues attached, some busy forever: each retired exactly once, stop idempotent; a
// task attached after stop is retired at once and never run. The destructor stops too.
TYPED_TEST(ExecutorContract, StopRetiresEveryTaskOnce) {
  constexpr int kTasks = 10;
  std::vector<std::unique_ptr<FakeTask>> tasks;
  for (int i = 0; i < kTasks; ++i) tasks.push_back(std::make_unique<FakeTask>());
  auto ex = TypeParam::make();
  for (int i = 0; i < kTasks; ++i) {
    if (i % 3 == 0) tasks[i]->more_budget = 1 << 30;  // busy forever
    ex->attach(*tasks[i]);
  }
  ASSERT_TRUE(wait_for([&] {
    for (auto& t : tasks)
      if (t->passes.load() < 1) return false;
    return true;
  }));
  ex->stop();
  ex->stop();
  for (auto& t : tasks) EXPECT_EQ(t->retired.load(), 1);
  FakeTask late;
  ex->attach(late);
  EXPECT_EQ(late.retired.load(), 1);
  EXPECT_EQ(late.passes.load(), 0);

  FakeTask a, b;
  {
    auto scoped = TypeParam::make();
    scoped->attach(a);
    scoped->attach(b);
  }
  EXPECT_EQ(a.retired.load(), 1);
  EXPECT_EQ(b.retired.load(), 1);
}

// Live switching (issue 15 defect 4): tasks move back and forth between two executors of the kind
// while threads kick them through a guarded executor pointer, as TcpQueue::kick does. Each
// handover comes once, the executor that let a task go never runs it again, and no kick is lost
// (one dropped during the handover is covered by the pass attach() runs).
TYPED_TEST(ExecutorContract, MovesBetweenExecutorsWithoutLosingKicks) {
  constexpr int kTasks = 8, kKickers = 2, kRounds = 100;
  struct Moving {
    FakeTask task;
    std::mutex mu;  // guards ex: a kick never races the pointer swap
    exec::Executor* ex = nullptr;
    void kick() {
      task.kicks.fetch_add(1);
      std::lock_guard lk(mu);
      ex->schedule(task);
    }
  };
  auto a = TypeParam::make();
  auto b = TypeParam::make();
  std::vector<std::unique_ptr<Moving>> tasks;
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<Moving>());
    tasks.back()->ex = a.get();
    a->attach(tasks.back()->task);
  }
  for (auto& m : tasks) ASSERT_TRUE(wait_for([&] { return m->task.passes.load() >= 1; }));
  std::atomic<bool> kicking{true};
  std::vector<std::thread> kickers;
  for (int k = 0; k < kKickers; ++k)
    kickers.emplace_back([&, k] {
      std::mt19937 rng(k);
      while (kicking.load()) tasks[rng() % kTasks]->kick();
    });
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> moved{0}, handovers{0};
    for (auto& m : tasks) {
      exec::Executor* from = m->ex;
      exec::Executor* to = from == a.get() ? b.get() : a.get();
      Moving* mp = m.get();
      from->release(m->task, [mp, to, &moved, &handovers](exec::Task&) {
        handovers.fetch_add(1);
        mp->task.moved_out = true;  // no pass may run until attach
        {
          std::lock_guard lk(mp->mu);
          mp->ex = to;
          mp->task.moved_out = false;
        }
        // Outside the kick's lock: kicks reach the new executor while attach() places the
        // task. They must be dropped until it is placed, then land on its slot (unbound and
        // inline once cleared the handover token first and read a half-written placement).
        to->attach(mp->task);
        moved.fetch_add(1);
      });
    }
    ASSERT_TRUE(wait_for([&] { return moved.load() == kTasks; })) << "round " << round;
    EXPECT_EQ(handovers.load(), kTasks);
  }
  kicking = false;
  for (auto& th : kickers) th.join();
  for (auto& m : tasks) {
    ASSERT_TRUE(wait_for([&] { return m->task.observed_kicks.load() == m->task.kicks.load(); }))
        << "lost kick: " << m->task.kicks.load() << " kicks, last pass saw " << m->task.observed_kicks.load();
    EXPECT_EQ(m->task.overlaps.load(), 0);
    EXPECT_EQ(m->task.passes_while_moved.load(), 0);
  }
  a->stop();
  b->stop();
  for (auto& m : tasks) EXPECT_EQ(m->task.retired.load(), 1);
}

}  // namespace
