// Event executor: real fds (socketpairs, eventfds), real worker threads. Every wait is a
// condition polled with a deadline; no assertion depends on a sleep being long enough.
#include "engine/exec/event/event_executor.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/exec/event/idle_poll_window.hpp"
#include "support/fake_task.hpp"

namespace {

using exec::EventExecutor;
using exec::Progress;
using namespace std::chrono_literals;
using test_support::total_passes;
using test_support::wait_for;
using TestTask = test_support::FakeTask;

TEST(EventExecutor, NameAndFactory) {
  auto ex = exec::make_event_executor({.threads = 1});
  EXPECT_EQ(ex->name(), "event");
  EventExecutor concrete({.threads = 0});
  EXPECT_GE(concrete.worker_count(), 1u);
}

// A queue's owned io_uring defers its completion work only for a worker that spins (poll, a
// fixed period); one that sleeps in epoll_wait (bound) has the kernel run it on the way out
// (IoContext::set_owned).
TEST(EventExecutor, BusyPollsOnlyWithABusyPollPeriod) {
  EXPECT_FALSE(EventExecutor({.threads = 1}).busy_polls());
  EXPECT_TRUE(EventExecutor({.threads = 1, .busy_poll_ns = 1000}).busy_polls());
  // An adaptive window mostly sleeps (it polls only through short gaps): its rings are a sleeper's.
  EXPECT_FALSE(EventExecutor({.threads = 1, .busy_poll_ns = 1000, .adaptive_poll = true}).busy_polls());
}

TEST(EventExecutor, RunsOnAttachAndWhenReadable) {
  TestTask task;
  EventExecutor ex({.threads = 2});
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  EXPECT_EQ(task.name(), "nvmt-ev/" + std::to_string(task.exec_worker));

  for (int i = 1; i <= 5; ++i) {
    task.send();
    ASSERT_TRUE(wait_for([&] { return task.bytes.load() == i; })) << "byte " << i;
  }
  EXPECT_EQ(task.overlaps.load(), 0);
  EXPECT_EQ(task.thread_changes.load(), 0);
  ex.stop();
  EXPECT_EQ(task.retired.load(), 1);
}

// A busy-polling worker spins on epoll, not on its queues: an idle queue is not run (each
// pass of a real queue is a recv() that locks its socket), yet data wakes it at once, and the
// spinning shows as idle passes (the poll mode's CPU split).
TEST(EventExecutor, BusyPollingRunsOnlyQueuesWithWork) {
  TestTask busy, idle;
  // The first pass reports work, so the worker polls for the next 60 s.
  busy.hook = [](TestTask& t) { t.exec_did_work = t.passes.load() == 0; };
  EventExecutor ex({.threads = 1, .busy_poll_ns = 60'000'000'000});
  ex.attach(busy);
  ex.attach(idle);
  ASSERT_TRUE(wait_for([&] { return busy.passes.load() >= 1 && idle.passes.load() >= 1; }));
  ASSERT_TRUE(wait_for([&] { return ex.stats()[0].idle_passes >= 10'000; })) << "the worker does not spin";
  EXPECT_LE(idle.passes.load(), 2) << "an idle queue was run without an event";
  EXPECT_LE(busy.passes.load(), 2);
  for (int i = 1; i <= 3; ++i) {
    idle.send();
    ASSERT_TRUE(wait_for([&] { return idle.bytes.load() == i; })) << "byte " << i;
  }
  EXPECT_LE(idle.passes.load(), 2 + 3 * 2);  // a pass per byte (and one for a late edge)
}

// The spin is timed, not inferred from pass counts (stats::cpu_split): a worker polling with
// nothing to do accounts nearly all the wall time it spun, and one that sleeps none of it.
TEST(EventExecutor, IdlePollTimeIsMeasuredWhileSpinningOnly) {
  auto spin_over = [](EventExecutor& ex, std::chrono::milliseconds window) {
    const uint64_t before = ex.stats()[0].idle_poll_ns;
    std::this_thread::sleep_for(window);
    return ex.stats()[0].idle_poll_ns - before;
  };
  {
    TestTask task;
    task.hook = [](TestTask& t) { t.exec_did_work = t.passes.load() == 0; };  // then polls 60 s
    EventExecutor ex({.threads = 1, .busy_poll_ns = 60'000'000'000});
    ex.attach(task);
    ASSERT_TRUE(wait_for([&] { return ex.stats()[0].idle_passes >= 1'000; })) << "the worker does not spin";
    const uint64_t spun = spin_over(ex, 300ms);
    // Wall time, so preemption on a loaded machine does not shrink it; a pass's own edges
    // (the first and last iteration of the window) are all it may miss.
    EXPECT_GE(spun, 250'000'000u) << "a spinning worker accounted " << spun << " ns of 300 ms";
    EXPECT_LE(spun, 400'000'000u);
  }
  {
    // Polling and never idle: every wait is non-blocking, yet none of it is spin.
    TestTask task;
    task.more_budget = 1'000'000'000;
    task.hook = [](TestTask& t) { t.exec_did_work = true; };
    EventExecutor ex({.threads = 1, .busy_poll_ns = 60'000'000'000});
    ex.attach(task);
    ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1'000; }));
    EXPECT_LT(spin_over(ex, 200ms), 1'000'000u) << "passes that worked were accounted as spin";
    task.more_budget = 0;
  }
  {
    TestTask task;
    EventExecutor ex({.threads = 1});  // bound with no idle poll: sleeps between events
    ex.attach(task);
    ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
    EXPECT_EQ(spin_over(ex, 200ms), 0u) << "a sleeping worker accounted spin";
    for (int i = 1; i <= 3; ++i) {
      task.send();
      ASSERT_TRUE(wait_for([&] { return task.bytes.load() == i; }));
    }
    EXPECT_EQ(ex.stats()[0].idle_poll_ns, 0u) << "passes woken by events are not spin";
  }
}

// A queue that polls in memory (io_uring) runs on every polling pass, events or not, and a
// worker with only such queues asks epoll rarely: that syscall would cost more than the poll.
TEST(EventExecutor, BusyPollingRunsInMemoryPollersEveryPass) {
  TestTask task;
  task.in_memory = true;
  task.hook = [](TestTask& t) { t.exec_did_work = t.passes.load() == 0; };
  EventExecutor ex({.threads = 1, .busy_poll_ns = 60'000'000'000});
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 20'000; })) << "not run without events";
  const auto passes = static_cast<uint64_t>(task.passes.load());
  EXPECT_LT(ex.epoll_waits()[0], passes / 8) << "epoll asked on most passes";
  task.send();
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() == 1; }));
}

// The adaptive poll window (idle_poll_window.hpp), rule by rule.
TEST(IdlePollWindow, OpensToCoverAMissedGapAndShutsAfterOneLongerThanTheCeiling) {
  constexpr uint64_t us = 1000, ceiling = 50 * us;
  exec::event::IdlePollWindow w;
  EXPECT_EQ(w.window_ns(ceiling, true), 0u) << "polls before it has seen a gap";
  EXPECT_EQ(w.window_ns(ceiling, false), ceiling) << "fixed: always the ceiling";
  w.on_work(20 * us, ceiling);
  EXPECT_EQ(w.window_ns(ceiling, true), 30 * us) << "a missed gap under the ceiling opens 1.5x of it";
  w.on_work(25 * us, ceiling);
  EXPECT_EQ(w.window_ns(ceiling, true), 30 * us) << "a gap the poll caught changes nothing";
  w.on_work(40 * us, ceiling);
  EXPECT_EQ(w.window_ns(ceiling, true), ceiling) << "never past the ceiling";
  EXPECT_EQ(w.window_ns(10 * us, true), 10 * us) << "a lower ceiling applies at once";
  w.on_work(ceiling + 1, ceiling);
  EXPECT_EQ(w.window_ns(ceiling, true), 0u) << "a gap longer than any poll shuts it";
  w.on_work(1 * us, ceiling);
  EXPECT_EQ(w.window_ns(ceiling, true), exec::event::IdlePollWindow::kMinNs) << "a tiny gap opens the minimum";
}

// An adaptive worker polls after work only when the gaps between commands are shorter than its
// ceiling; a lone command, or one after a long quiet spell, leaves it asleep. The spinning is
// read from the idle passes, which only a polling worker makes.
TEST(EventExecutor, AdaptivePollSpinsOnlyWhileGapsAreShorterThanTheCeiling) {
  constexpr uint64_t ceiling_ns = 250'000'000;
  auto spins_over = [](const EventExecutor& ex, std::chrono::milliseconds window) {
    const uint64_t before = ex.stats()[0].idle_passes;
    std::this_thread::sleep_for(window);
    return ex.stats()[0].idle_passes - before;
  };
  TestTask task;
  task.bytes_are_work = true;
  EventExecutor ex({.threads = 1, .busy_poll_ns = ceiling_ns, .adaptive_poll = true});
  ex.attach(task);
  ASSERT_TRUE(wait_for([&] { return task.passes.load() >= 1; }));
  task.send();
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() == 1; }));
  EXPECT_EQ(spins_over(ex, 60ms), 0u) << "polled after a lone command";
  std::this_thread::sleep_for(40ms);
  task.send();  // ~100 ms after the first: the window opens to ~150 ms
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() == 2; }));
  EXPECT_GT(spins_over(ex, 60ms), 10u) << "slept between commands that came closer than the ceiling";
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(spins_over(ex, 60ms), 0u) << "still polling past the window";
  task.send();  // ~420 ms after the last: longer than the ceiling, the window shuts
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() == 3; }));
  EXPECT_EQ(spins_over(ex, 60ms), 0u) << "polled after a gap longer than the ceiling";

  // The same lone command with a fixed period spins (what the first check would see if the
  // window did not adapt).
  TestTask fixed_task;
  fixed_task.bytes_are_work = true;
  EventExecutor fixed({.threads = 1, .busy_poll_ns = ceiling_ns});
  fixed.attach(fixed_task);
  ASSERT_TRUE(wait_for([&] { return fixed_task.passes.load() >= 1; }));
  fixed_task.send();
  ASSERT_TRUE(wait_for([&] { return fixed_task.bytes.load() == 1; }));
  EXPECT_GT(spins_over(fixed, 60ms), 10u);
}

TEST(EventExecutor, ScheduleFromManyThreadsNeverOverlaps) {
  constexpr int kTasks = 32;
  constexpr int kHammerThreads = 4;
  EventExecutor* exp = nullptr;
  std::vector<std::unique_ptr<TestTask>> tasks;
  std::atomic<bool> hammering{false};  // set once all are attached: schedule() needs attach
  auto ex = std::make_unique<EventExecutor>(exec::EventExecutorConfig{.threads = 2});
  exp = ex.get();
  for (int i = 0; i < kTasks; ++i) tasks.push_back(std::make_unique<TestTask>(exp));
  for (int i = 0; i < kTasks; ++i) {
    TestTask* peer = tasks[(i + 1) % kTasks].get();
    tasks[i]->hook = [&hammering, exp, peer](TestTask&) {
      std::atomic<int> spin{0};  // widen the window for an overlap to show
      while (spin.fetch_add(1, std::memory_order_relaxed) < 200) {
      }
      // Kicks from worker threads too: local when the peer shares the worker, remote otherwise.
      if (hammering.load()) exp->schedule(*peer);
    };
    ex->attach(*tasks[i]);
  }

  hammering = true;
  for (auto& t : tasks) ex->schedule(*t);  // start the worker-to-worker kick chains
  std::vector<std::thread> hammers;
  for (int h = 0; h < kHammerThreads; ++h) {
    hammers.emplace_back([&, h] {
      std::mt19937 rng(h);
      auto until = std::chrono::steady_clock::now() + 1s;
      while (std::chrono::steady_clock::now() < until) {
        TestTask& t = *tasks[rng() % kTasks];
        t.kicks.fetch_add(1);
        ex->schedule(t);
      }
    });
  }
  for (auto& th : hammers) th.join();
  hammering = false;

  // No lost kick: every task ran after its last schedule().
  for (auto& t : tasks) {
    ASSERT_TRUE(wait_for([&] { return t->observed_kicks.load() == t->kicks.load(); }));
    EXPECT_EQ(t->overlaps.load(), 0);
    EXPECT_EQ(t->thread_changes.load(), 0);
    EXPECT_EQ(t->name(), "nvmt-ev/" + std::to_string(t->exec_worker));
  }
  auto stats = ex->stats();
  ASSERT_EQ(stats.size(), 2u);
  uint64_t wakeups = 0;
  for (const auto& s : stats) {
    EXPECT_GT(s.io_work_passes, 0u);
    wakeups += s.wakeups;
  }
  EXPECT_GT(wakeups, 0u);
  for (uint64_t w : ex->epoll_waits()) EXPECT_GT(w, 0u);
  ex->stop();
  for (auto& t : tasks) EXPECT_EQ(t->retired.load(), 1);
}

// A kick pushed to the remote list while the task is running, then the task closes: the
// executor must drop the dying (and here deleted) task from the list and keep the other kicks.
TEST(EventExecutor, CloseWithPendingRemoteKick) {
  std::atomic<int> retired{0};
  std::atomic<bool> armed{false};
  std::atomic<bool> running{false};
  std::atomic<bool> release{false};
  EventExecutor ex({.threads = 1});
  auto* dying = new TestTask;
  dying->delete_on_retire = true;
  dying->retire_counter = &retired;
  dying->hook = [&](TestTask&) {  // once armed, hold the worker inside io_work
    if (!armed.load()) return;
    running = true;
    while (!release.load()) std::this_thread::yield();
  };
  TestTask other;
  ex.attach(*dying);
  ex.attach(other);
  ASSERT_TRUE(wait_for([&] { return dying->passes.load() >= 1 && other.passes.load() >= 1; }));
  const int other_passes = other.passes.load();

  armed = true;
  ex.schedule(*dying);
  ASSERT_TRUE(wait_for([&] { return running.load(); }));
  dying->send('c');     // the held pass drains it after the hook and returns closed
  ex.schedule(*dying);  // onto the remote list: the worker is busy in this very io_work
  ex.schedule(other);
  release = true;  // from here on nobody schedules dying

  ASSERT_TRUE(wait_for([&] { return retired.load() == 1; }));
  ASSERT_TRUE(wait_for([&] { return other.passes.load() > other_passes; }));
  other.send();
  ASSERT_TRUE(wait_for([&] { return other.bytes.load() == 1; }));
  ex.stop();
  EXPECT_EQ(retired.load(), 1);
  EXPECT_EQ(other.retired.load(), 1);
}

// Issue 33: a kick that races with the closing pass (the accept thread's handshake timer firing as
// the queue closes on its own) landed on the remote list after detach had emptied it, and the
// next iteration ran io_work on the retired, freed task: SIGSEGV in run_task, "double free".
// Here the kick is made from another thread inside retire(), after the lists were emptied and
// before the owner lets the task go: it must be dropped, never run. Deterministic: the push is
// complete when retire() returns, so the worker's next iteration would take it.
TEST(EventExecutor, KickRacingWithTheCloseNeverRunsTheRetiredTask) {
  EventExecutor ex({.threads = 1});
  TestTask probe;
  std::atomic<int> passes_at_retire{-1};
  struct Kicker : TestTask {
    EventExecutor* ex = nullptr;
    std::atomic<int>* passes_at_retire = nullptr;
    void retire() override {
      passes_at_retire->store(passes.load());
      std::thread([this] { ex->schedule(*this); }).join();
      TestTask::retire();
    }
  } dying;
  dying.ex = &ex;
  dying.passes_at_retire = &passes_at_retire;
  ex.attach(dying);
  ex.attach(probe);
  ASSERT_TRUE(wait_for([&] { return dying.passes.load() >= 1 && probe.passes.load() >= 1; }));
  dying.send('c');
  ASSERT_TRUE(wait_for([&] { return dying.retired.load() == 1; }));
  // The probe's byte is collected after the kick's push: once it ran, so would the kicked task.
  probe.send();
  ASSERT_TRUE(wait_for([&] { return probe.bytes.load() == 1; }));
  EXPECT_EQ(dying.passes.load(), passes_at_retire.load()) << "io_work ran on a retired task";
  ex.stop();
  EXPECT_EQ(dying.retired.load(), 1);
}

// Three kicks gathered into one batch, the first task closes: the two behind it still run.
// (Detaching once erased the closed task from the batch being iterated, which slid the next
// task under the loop's iterator; its token was already spent, so its kick was lost: issue 15,
// the middle of three expiring handshakes that never closed.)
TEST(EventExecutor, TasksBehindAClosingTaskInOneBatchStillRun) {
  std::atomic<bool> armed{false}, holding{false}, let_go{false};
  EventExecutor ex({.threads = 1});
  TestTask blocker, closing, second, third;
  blocker.hook = [&](TestTask&) {  // once armed, hold the worker while the kicks pile up
    if (!armed.load()) return;
    holding = true;
    while (!let_go.load()) std::this_thread::yield();
  };
  for (TestTask* t : {&blocker, &closing, &second, &third}) ex.attach(*t);
  ASSERT_TRUE(wait_for([&] {
    return blocker.passes.load() >= 1 && closing.passes.load() >= 1 && second.passes.load() >= 1 &&
           third.passes.load() >= 1;
  }));
  ASSERT_TRUE(wait_for([&] { return closing.in_progress.load() == false; }));
  const int second_passes = second.passes.load(), third_passes = third.passes.load();
  armed = true;
  ex.schedule(blocker);
  ASSERT_TRUE(wait_for([&] { return holding.load(); }));
  armed = false;
  closing.send('c');
  ex.schedule(closing);
  ex.schedule(second);
  ex.schedule(third);
  let_go = true;
  ASSERT_TRUE(wait_for([&] { return closing.retired.load() == 1; }));
  EXPECT_TRUE(wait_for([&] { return second.passes.load() > second_passes; })) << "the kick behind the closed task was lost";
  EXPECT_TRUE(wait_for([&] { return third.passes.load() > third_passes; }));
  ex.stop();
}

TEST(EventExecutor, Attach200FromSeveralThreadsSpreadsRoundRobin) {
  constexpr int kTasks = 200;
  constexpr unsigned kWorkers = 4;
  constexpr int kAttachers = 4;
  std::vector<std::unique_ptr<TestTask>> tasks;
  for (int i = 0; i < kTasks; ++i) tasks.push_back(std::make_unique<TestTask>());
  EventExecutor ex({.threads = kWorkers});
  std::vector<std::thread> attachers;
  for (int a = 0; a < kAttachers; ++a)
    attachers.emplace_back([&, a] {
      for (int i = a; i < kTasks; i += kAttachers) ex.attach(*tasks[i]);
    });
  for (auto& th : attachers) th.join();

  std::vector<int> per_worker(kWorkers, 0);
  for (auto& t : tasks) {
    ASSERT_TRUE(wait_for([&] { return t->passes.load() >= 1; }));
    ASSERT_GE(t->exec_worker, 0);
    ASSERT_LT(t->exec_worker, int(kWorkers));
    ++per_worker[t->exec_worker];
    EXPECT_EQ(t->name(), "nvmt-ev/" + std::to_string(t->exec_worker));
  }
  for (int n : per_worker) EXPECT_EQ(n, kTasks / int(kWorkers));
  for (auto& t : tasks) t->send();
  for (auto& t : tasks) ASSERT_TRUE(wait_for([&] { return t->bytes.load() == 1; }));
  EXPECT_GE(total_passes(ex), uint64_t(2 * kTasks));
  ex.stop();
  for (auto& t : tasks) EXPECT_EQ(t->retired.load(), 1);
}

}  // namespace
