// Inline executor: real fds, real pinned threads. The notification thread runs the first,
// budget-limited batch of a ready queue; a deferred worker runs the rest and every kick.
// Every wait is a condition polled with a deadline; only the checks that something does NOT
// happen give it a fixed time.
#include "engine/exec/inline/inline_executor.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
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

#include "engine/exec/unbound/unbound_executor.hpp"
#include "engine/system/topology.hpp"
#include "support/fake_task.hpp"

namespace {

using exec::InlineConfig;
using exec::InlineExecutor;
using exec::Progress;
using namespace std::chrono_literals;
using test_support::settle;
using test_support::tids_of;
using test_support::wait_for;

// The shared fake, counting the passes that ran in the wrong context: a full pass on the
// notification thread, a limited one anywhere else.
struct TestTask : test_support::FakeTask {
  explicit TestTask(exec::Executor* ex = nullptr) : FakeTask(ex) {
    observe_pass = [this](const std::string& thread, bool limited) {
      const bool notify = thread == "nvmt-notify";
      if (notify && !limited) full_passes_on_notify.fetch_add(1);
      if (!notify && limited) limited_passes_off_notify.fetch_add(1);
    };
  }
  std::atomic<int> full_passes_on_notify{0};      // must stay 0
  std::atomic<int> limited_passes_off_notify{0};  // 0 unless an unbound executor runs it
};

InlineConfig config(unsigned budget = 8, unsigned threads = 0) {
  return {.threads = threads, .cpus = {}, .inline_budget = budget};
}

// The first pass too runs in the notification context: a queue's io_uring receive is armed
// there, so the kernel completes it on the notification thread (see attach()).
TEST(Inline, FirstRunAndReadinessInline) {
  TestTask task;
  InlineExecutor ex(config(5));
  EXPECT_EQ(ex.name(), "inline");
  EXPECT_EQ(ex.inline_budget(), 5u);
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  ASSERT_TRUE(settle(task));
  EXPECT_GE(task.limited_passes.load(), 1);
  const int limited_before = task.limited_passes.load();
  // (The socket's first EPOLLOUT edge may have found the first pass running and deferred one.)
  const uint64_t deferrals_before = ex.deferrals();

  for (int i = 1; i <= 5; ++i) {
    task.send();
    ASSERT_TRUE(wait_for([&] { return task.bytes.load() == i; })) << "byte " << i;
    ASSERT_TRUE(settle(task));
    EXPECT_EQ(task.name(), "nvmt-notify");
  }
  EXPECT_GE(task.limited_passes.load(), limited_before + 5);
  EXPECT_EQ(task.last_limit.load(), 5u);
  EXPECT_EQ(task.full_passes_on_notify.load(), 0);
  EXPECT_EQ(task.limited_passes_off_notify.load(), 0);
  EXPECT_EQ(task.overlaps.load(), 0);
  EXPECT_EQ(task.unready_passes.load(), 0);
  EXPECT_EQ(ex.deferrals(), deferrals_before);  // every inline batch finished the work
  ex.stop();
  EXPECT_EQ(task.retired.load(), 1);
}

// The inline batch leaves work: the rest runs on the task's deferred worker.
TEST(Inline, WorkLeftAfterTheInlineBatchIsDeferred) {
  TestTask task;
  InlineExecutor ex(config());
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  ASSERT_TRUE(settle(task));
  task.limited_more = true;
  const int full_before = task.full_passes.load();
  task.send();
  ASSERT_TRUE(wait_for([&] { return task.full_passes.load() > full_before; }));
  ASSERT_TRUE(settle(task));
  EXPECT_EQ(task.name().rfind("nvmt-inl/", 0), 0u) << task.name();
  EXPECT_GE(ex.deferrals(), 1u);
  EXPECT_EQ(task.full_passes_on_notify.load(), 0);
  EXPECT_EQ(task.unready_passes.load(), 0);
  auto stats = ex.stats();
  ASSERT_EQ(stats.size(), ex.threads().size());
  EXPECT_GE(stats[0].io_work_passes, 1u);  // the notification thread's inline passes
}

TEST(Inline, NeverConcurrentWhileHammered) {
  constexpr int kTasks = 8;
  constexpr int kHammerThreads = 4;
  std::vector<std::unique_ptr<TestTask>> tasks;  // outlives ex
  InlineExecutor ex(config(2));
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<TestTask>());
    tasks.back()->hook = [](test_support::FakeTask&) {
      std::atomic<int> spin{0};
      while (spin.fetch_add(1, std::memory_order_relaxed) < 300) {
      }
    };
    if (i % 2 == 1) tasks.back()->limited_more = true;  // half of them always deferred
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
    EXPECT_EQ(t.full_passes_on_notify.load(), 0);
    EXPECT_EQ(t.limited_passes_off_notify.load(), 0);
  }
  uint64_t wakeups = 0;
  for (const auto& s : ex.stats()) wakeups += s.wakeups;
  EXPECT_GT(wakeups, 0u);
  EXPECT_GT(ex.deferrals(), 0u);
  ex.stop();
  for (auto& t : tasks) EXPECT_EQ(t->retired.load(), 1);
}

TEST(Inline, ClosedInlineOrOnAWorkerRetiresOnce) {
  TestTask inline_close, worker_close, probe;
  InlineExecutor ex(config());
  for (TestTask* t : {&inline_close, &worker_close, &probe}) ex.attach(*t);
  ASSERT_TRUE(wait_for([&] {
    return inline_close.passes.load() >= 1 && worker_close.passes.load() >= 1 && probe.passes.load() >= 1;
  }));
  ASSERT_TRUE(settle(inline_close));
  inline_close.send('c');  // read by the notification thread's batch
  ASSERT_TRUE(wait_for([&] { return inline_close.retired.load() == 1; }));
  EXPECT_EQ(inline_close.name(), "nvmt-notify");

  worker_close.more_budget = 1 << 30;  // busy on its worker from the next kick on
  ex.schedule(worker_close);
  ASSERT_TRUE(wait_for([&] { return worker_close.passes.load() > 5; }));
  worker_close.send('c');
  ASSERT_TRUE(wait_for([&] { return worker_close.retired.load() == 1; }));
  EXPECT_EQ(worker_close.name().rfind("nvmt-inl/", 0), 0u);

  const int a = inline_close.passes.load(), b = worker_close.passes.load();
  inline_close.send();
  worker_close.send();
  probe.send();
  ASSERT_TRUE(wait_for([&] { return probe.bytes.load() == 1; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(inline_close.passes.load(), a);
  EXPECT_EQ(worker_close.passes.load(), b);
  EXPECT_EQ(ex.tasks(), std::vector<exec::Task*>{&probe});
  ex.stop();
  EXPECT_EQ(inline_close.retired.load(), 1);
  EXPECT_EQ(worker_close.retired.load(), 1);
  EXPECT_EQ(probe.retired.load(), 1);
}

TEST(Inline, CloseWithPendingKick) {
  std::atomic<int> retired{0};
  std::atomic<bool> armed{false}, running{false}, release{false};
  TestTask other;
  InlineExecutor ex(config());
  auto* dying = new TestTask;
  dying->delete_on_retire = true;
  dying->retire_counter = &retired;
  dying->hook = [&](test_support::FakeTask&) {
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
  dying->send('c');  // an edge for the notification thread too: it marks the task pending
  ex.schedule(*dying);
  ex.schedule(other);
  release = true;
  ASSERT_TRUE(wait_for([&] { return retired.load() == 1; }));
  other.send();
  ASSERT_TRUE(wait_for([&] { return other.bytes.load() == 1; }));
  ex.stop();
  EXPECT_EQ(retired.load(), 1);
  EXPECT_EQ(other.retired.load(), 1);
}

// The task fills its socket and returns idle at EAGAIN: the EPOLLOUT edge brings it back.
TEST(Inline, BlockedSenderResumesWhenWritable) {
  constexpr long kTotal = 8l << 20;
  TestTask task;
  InlineExecutor ex(config());
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
  ASSERT_TRUE(settle(task));
}

// Holds a pass (on the worker, or the notification thread's batch), releases the task, checks
// the handover comes once, after that pass, on the thread that ran it, and that the old
// executor never runs the task again; then it runs on a second inline executor.
void release_while_busy(bool inline_pass) {
  std::atomic<bool> hold{false}, in_pass{false}, let_go{false};
  std::atomic<int> handovers{0};
  std::atomic<bool> in_progress_at_handover{true};
  std::string handover_thread;
  TestTask task;
  auto ex1 = std::make_unique<InlineExecutor>(config());
  InlineExecutor ex2(config());
  task.hook = [&](test_support::FakeTask&) {
    if (!hold.load()) return;
    in_pass = true;
    while (!let_go.load()) std::this_thread::yield();
  };
  ex1->attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  ASSERT_TRUE(settle(task));
  hold = true;
  if (inline_pass)
    task.send();
  else
    ex1->schedule(task);
  ASSERT_TRUE(wait_for([&] { return in_pass.load(); }));
  hold = false;
  EXPECT_EQ(task.name(), inline_pass ? "nvmt-notify" : "nvmt-inl/0");

  ex1->release(task, [&](exec::Task& t) {
    auto& tt = static_cast<TestTask&>(t);
    in_progress_at_handover = tt.in_progress.load();
    tt.moved_out = true;
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    handover_thread = name;
    handovers.fetch_add(1);
  });
  EXPECT_EQ(handovers.load(), 0);
  ex1->schedule(task);
  task.send();
  let_go = true;
  ASSERT_TRUE(wait_for([&] { return handovers.load() == 1; }));
  EXPECT_FALSE(in_progress_at_handover.load());
  EXPECT_EQ(handover_thread, task.name());

  ex1->schedule(task);
  task.send();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(task.passes_while_moved.load(), 0);
  EXPECT_TRUE(ex1->tasks().empty());

  const long bytes_before = task.bytes.load();
  task.moved_out = false;
  ex2.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() > bytes_before; }));
  EXPECT_TRUE(tids_of(ex2).count(task.last_tid.load()));
  ex1->stop();
  EXPECT_EQ(task.retired.load(), 0);
  ex1.reset();
  ex2.stop();
  EXPECT_EQ(task.retired.load(), 1);
  EXPECT_EQ(handovers.load(), 1);
  EXPECT_EQ(task.overlaps.load(), 0);
}

TEST(Inline, ReleaseWhileBusyOnTheWorker) { release_while_busy(false); }

TEST(Inline, ReleaseDuringTheInlineBatch) { release_while_busy(true); }

TEST(Inline, ReleaseIdleHandsOverOnTheCallingThread) {
  InlineExecutor ex(config());
  TestTask task;
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  ASSERT_TRUE(settle(task));
  int handover_tid = 0;
  ex.release(task, [&](exec::Task&) { handover_tid = sys::current_tid(); });
  EXPECT_EQ(handover_tid, sys::current_tid());
  EXPECT_TRUE(ex.tasks().empty());
  ex.stop();
  EXPECT_EQ(task.retired.load(), 0);
}

// Live switching between models under load: tasks move back and forth between an unbound and
// an inline executor while a writer streams bytes and a kicker kicks through the task's
// current executor (under the task's lock, as the TCP queue does). Never concurrent, never run
// by an executor that let it go, nothing lost.
TEST(Inline, MovesBetweenModelsUnderLoad) {
  constexpr int kTasks = 4;
  constexpr int kMoves = 60;
  struct Moving {
    std::unique_ptr<TestTask> task = std::make_unique<TestTask>();
    std::mutex mu;
    exec::Executor* current = nullptr;  // guarded by mu
    std::atomic<int> handovers{0};
    std::atomic<int> wrong_executor{0};
  };
  std::vector<std::unique_ptr<Moving>> moving;  // outlive the executors
  for (int i = 0; i < kTasks; ++i) moving.push_back(std::make_unique<Moving>());
  exec::UnboundExecutor unb({.threads = 2, .cpus = {}, .scope = sys::AffinityScope::system, .strict = false});
  InlineExecutor inl(config(1));
  const std::set<int> unb_tids = tids_of(unb), inl_tids = tids_of(inl);
  std::atomic<exec::Executor*> runs_on[kTasks];
  for (int i = 0; i < kTasks; ++i) {
    Moving& m = *moving[i];
    runs_on[i] = i % 2 ? static_cast<exec::Executor*>(&unb) : &inl;
    m.task->hook = [&, i](test_support::FakeTask&) {
      const std::set<int>& ok = runs_on[i].load() == &unb ? unb_tids : inl_tids;
      if (!ok.count(sys::current_tid())) moving[i]->wrong_executor.fetch_add(1);
    };
    std::lock_guard lock(m.mu);
    m.current = runs_on[i];
    m.current->attach(*m.task);
  }
  std::atomic<bool> running{true};
  std::vector<long> sent(kTasks, 0);
  std::thread writer([&] {
    while (running.load())
      for (int i = 0; i < kTasks; ++i)
        if (moving[i]->task->try_send()) ++sent[i];
  });
  std::thread kicker([&] {
    std::mt19937 rng(7);
    while (running.load()) {
      Moving& m = *moving[rng() % kTasks];
      std::lock_guard lock(m.mu);
      m.task->kicks.fetch_add(1);
      m.current->schedule(*m.task);
    }
  });
  std::mt19937 rng(11);
  for (int move = 0; move < kMoves; ++move) {
    const int i = int(rng() % kTasks);
    Moving& m = *moving[i];
    const int before = m.handovers.load();
    exec::Executor* from;
    {
      std::lock_guard lock(m.mu);
      from = m.current;
    }
    from->release(*m.task, [&, i](exec::Task& t) {
      Moving& mm = *moving[i];
      std::lock_guard lock(mm.mu);
      exec::Executor* to = mm.current == &unb ? static_cast<exec::Executor*>(&inl) : &unb;
      mm.current = to;
      runs_on[i] = to;
      mm.handovers.fetch_add(1);
      to->attach(t);
    });
    ASSERT_TRUE(wait_for([&] { return m.handovers.load() == before + 1; })) << "move " << move;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 5));
  }
  running = false;
  writer.join();
  kicker.join();
  int total_moves = 0;
  for (int i = 0; i < kTasks; ++i) {
    Moving& m = *moving[i];
    {
      std::lock_guard lock(m.mu);  // a last kick: every dropped kick is covered
      m.task->kicks.fetch_add(1);
      m.current->schedule(*m.task);
    }
    ASSERT_TRUE(wait_for([&] { return m.task->bytes.load() == sent[i]; }))
        << "task " << i << " got " << m.task->bytes.load() << " of " << sent[i];
    ASSERT_TRUE(wait_for([&] { return m.task->observed_kicks.load() == m.task->kicks.load(); }));
    EXPECT_EQ(m.task->overlaps.load(), 0);
    EXPECT_EQ(m.wrong_executor.load(), 0) << i;
    total_moves += m.handovers.load();
  }
  EXPECT_EQ(total_moves, kMoves);
  unb.stop();
  inl.stop();
  for (auto& m : moving) EXPECT_EQ(m->task->retired.load(), 1);
}

TEST(Inline, ThreadsArePinned) {
  const auto cpus = sys::online_cpus();
  InlineExecutor ex({.threads = unsigned(cpus.size()) + 1, .cpus = cpus, .inline_budget = 8});
  const auto threads = ex.threads();
  ASSERT_EQ(threads.size(), cpus.size() + 2);
  EXPECT_EQ(threads[0].name, "nvmt-notify");
  EXPECT_EQ(threads[0].role, "notify");
  EXPECT_EQ(sys::thread_cpus_allowed(threads[0].tid).cpus, cpus);
  for (size_t i = 1; i < threads.size(); ++i) {
    const unsigned cpu = cpus[(i - 1) % cpus.size()];
    EXPECT_EQ(threads[i].name, "nvmt-inl/" + std::to_string(i - 1));
    EXPECT_EQ(threads[i].role, "deferred");
    EXPECT_EQ(threads[i].cpus, std::vector<unsigned>{cpu});
    EXPECT_EQ(sys::thread_cpus_allowed(threads[i].tid).cpus, std::vector<unsigned>{cpu});
  }
  if (cpus.size() >= 2) {  // a one-CPU mask confines the notification thread too
    InlineExecutor one({.threads = 0, .cpus = {cpus[1]}, .inline_budget = 8});
    for (const auto& t : one.threads())
      EXPECT_EQ(sys::thread_cpus_allowed(t.tid).cpus, std::vector<unsigned>{cpus[1]}) << t.name;
  }
}

TEST(Inline, DeferredToTheWorkerOfTheIncomingCpu) {
  const auto cpus = sys::online_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  TestTask task;
  task.cpu = int(cpus[1]);
  task.more_budget = 20;
  InlineExecutor ex({.threads = 0, .cpus = cpus, .inline_budget = 8});
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 21; }));
  ASSERT_TRUE(settle(task));  // (an inline pass may come last: the socket's first EPOLLOUT edge)
  std::lock_guard lock(task.name_mu);
  EXPECT_EQ(task.full_pass_name, "nvmt-inl/1");
  EXPECT_EQ(task.full_pass_cpu, int(cpus[1]));
}

TEST(Inline, RefusesBadConfigurations) {
  EXPECT_NE(InlineExecutor::check({.threads = 0, .cpus = {}, .inline_budget = 0}).find("inline_budget"),
            std::string::npos);
  EXPECT_NE(InlineExecutor::check({.threads = 0, .cpus = {100000}, .inline_budget = 8}).find("cpus"),
            std::string::npos);
  EXPECT_THROW(InlineExecutor({.threads = 0, .cpus = {100000}, .inline_budget = 8}), std::invalid_argument);
  EXPECT_EQ(InlineExecutor::check({}), "");
  auto ex = exec::make_inline_executor({});
  EXPECT_EQ(ex->name(), "inline");
  EXPECT_EQ(ex->threads().size(), sys::online_cpus().size() + 1);
}

}  // namespace
