// Execution models under load: each mode serves write-verify I/O from several queues, and the
// mode, thread count and CPU masks change every 100-200 ms while hosts run I/O, with no
// command lost, no connection reset and no data corrupted. Also: engine threads are really
// pinned where the configuration says, and poll threads stop burning CPU once idle.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "engine/control/engine.hpp"
#include "engine/control/executor_factory.hpp"
#include "engine/system/topology.hpp"
#include "engine/initiator/initiator.hpp"
#include "support/engine_config.hpp"

namespace {

using namespace std::chrono_literals;
constexpr const char* nqn = "nqn.2026-12.io.nvmetune:switch";
constexpr uint32_t block = 512;

control::Config make_config() {
  auto c = test_support::one_namespace_config(nqn, {.kind = "ram", .size_bytes = 64ull << 20}, block);
  c.threading.mode = "bound";
  return c;
}

// One queue's closed-loop write → read → verify workload over its own LBA region.
struct Worker {
  std::unique_ptr<initiator::TcpQueue> q;
  uint64_t region_lba = 0;
  uint32_t slots = 16;
  uint32_t io_blocks = 8;  // 4 KiB
  std::vector<uint8_t> wbuf, rbuf;
  std::vector<uint8_t> phase;  // per slot: 0 idle, 1 writing, 2 reading
  std::vector<uint32_t> gen;
  uint64_t submitted = 0, completed = 0, errors = 0, mismatches = 0, verified = 0;
  std::atomic<bool>* stop = nullptr;

  struct Ctx {
    Worker* w;
    uint32_t slot;
  };
  std::vector<Ctx> ctx;

  std::span<uint8_t> wslot(uint32_t s) { return {wbuf.data() + s * io_blocks * block, io_blocks * block}; }
  std::span<uint8_t> rslot(uint32_t s) { return {rbuf.data() + s * io_blocks * block, io_blocks * block}; }
  uint64_t lba(uint32_t s) const { return region_lba + uint64_t{s} * io_blocks; }

  void fill(uint32_t s) {
    auto b = wslot(s);
    const uint32_t g = ++gen[s];
    for (size_t i = 0; i < b.size(); i += 4) {
      const uint32_t v = g * 2654435761u ^ static_cast<uint32_t>(i) ^ (s << 20);
      std::memcpy(b.data() + i, &v, 4);
    }
  }

  bool submit_write(uint32_t s) {
    fill(s);
    initiator::Io io{initiator::Op::write, 1, lba(s), static_cast<uint16_t>(io_blocks - 1), wslot(s), false,
                     {&Worker::on_done, &ctx[s]}};
    if (!q->submit(io)) return false;
    phase[s] = 1;
    ++submitted;
    return true;
  }
  bool submit_read(uint32_t s) {
    initiator::Io io{initiator::Op::read, 1, lba(s), static_cast<uint16_t>(io_blocks - 1), rslot(s), false,
                     {&Worker::on_done, &ctx[s]}};
    if (!q->submit(io)) return false;
    phase[s] = 2;
    ++submitted;
    return true;
  }

  static void on_done(void* p, const initiator::Completion& c) {
    auto* x = static_cast<Ctx*>(p);
    Worker& w = *x->w;
    ++w.completed;
    if (!c.status.ok() || c.aborted) {
      ++w.errors;
      w.phase[x->slot] = 0;
      return;
    }
    if (w.phase[x->slot] == 1) {
      w.submit_read(x->slot);
      return;
    }
    if (std::memcmp(w.rslot(x->slot).data(), w.wslot(x->slot).data(), w.io_blocks * block) != 0) ++w.mismatches;
    ++w.verified;
    w.phase[x->slot] = 0;
    if (!w.stop->load()) w.submit_write(x->slot);
  }

  void start() {
    wbuf.assign(size_t{slots} * io_blocks * block, 0);
    rbuf.assign(wbuf.size(), 0);
    phase.assign(slots, 0);
    gen.assign(slots, 0);
    for (uint32_t s = 0; s < slots; ++s) ctx.push_back({this, s});
    for (uint32_t s = 0; s < slots; ++s) submit_write(s);
  }
  bool idle() const {
    return std::all_of(phase.begin(), phase.end(), [](uint8_t p) { return p == 0; });
  }
};

struct Rig {
  engine::Engine eng{make_config()};
  std::unique_ptr<initiator::Controller> ctrl;
  std::vector<Worker> workers;

  // halfway: called once half the I/O queues are connected (to change what later ones get).
  void start(unsigned queues, const std::function<void()>& halfway = {}) {
    auto errs = eng.start();
    ASSERT_TRUE(errs.empty()) << errs.front().path << ": " << errs.front().message;
    initiator::Target t;
    t.port = eng.listeners().at(0).port;
    t.subnqn = nqn;
    t.kato_ms = 0;
    auto c = initiator::Controller::connect(t);
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    ctrl = std::move(c.value());
    workers.resize(queues);
    for (unsigned i = 0; i < queues; ++i) {
      if (i == queues / 2 && halfway) halfway();
      auto q = ctrl->create_io_queue(32);
      ASSERT_TRUE(q.ok()) << q.error().to_string();
      workers[i].q = std::move(q.value());
      workers[i].region_lba = uint64_t{i} * 4096;
    }
  }

  // Drives every queue until stop is set and all slots finished.
  void run(std::atomic<bool>& stop) {
    for (auto& w : workers) {
      w.stop = &stop;
      w.start();
    }
    for (;;) {
      bool all_idle = true;
      for (auto& w : workers) {
        if (w.q->state() == initiator::TcpQueue::State::failed) continue;
        w.q->poll();
        all_idle = all_idle && w.idle();
      }
      if (stop.load() && all_idle) break;
    }
  }

  // Drives every queue for d, then until all slots finished.
  void run_for(std::chrono::milliseconds d) {
    std::atomic<bool> stop{false};
    std::thread timer([&] {
      std::this_thread::sleep_for(d);
      stop = true;
    });
    run(stop);
    timer.join();
  }

  void check_clean() {
    for (size_t i = 0; i < workers.size(); ++i) {
      auto& w = workers[i];
      EXPECT_NE(w.q->state(), initiator::TcpQueue::State::failed) << "queue " << i << ": " << w.q->error().to_string();
      EXPECT_EQ(w.errors, 0u) << "queue " << i;
      EXPECT_EQ(w.mismatches, 0u) << "queue " << i;
      EXPECT_EQ(w.submitted, w.completed) << "queue " << i;
      EXPECT_GT(w.verified, 0u) << "queue " << i;
    }
  }
};

control::ThreadingConfig mode(const std::string& m, std::vector<unsigned> cpus = {}, unsigned threads = 0) {
  control::ThreadingConfig t;
  t.mode = m;
  t.cpus = std::move(cpus);
  t.threads = threads;
  t.idle_poll_us = 2000;
  return t;
}

std::vector<control::ThreadingConfig> all_modes() {
  std::vector<control::ThreadingConfig> out;
  for (const char* m : {"bound", "unbound", "poll", "inline"}) {
    std::string err;
    if (control::make_executor(mode(m), err)) out.push_back(mode(m));
    else ADD_FAILURE() << "execution model " << m << " cannot be built: " << err;
  }
  return out;
}

void expect_pinned(engine::Engine& eng) {
  for (const auto& t : eng.threads()) {
    if (t.cpus.empty()) continue;
    EXPECT_EQ(sys::thread_cpus_allowed(t.tid).cpus, t.cpus) << t.name << " (tid " << t.tid << ")";
  }
}

uint64_t thread_cpu_ns(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  uint64_t ns = 0;
  f >> ns;
  return ns;
}

// CPU time the thread uses over the next window of wall time.
uint64_t cpu_ns_over(int tid, std::chrono::milliseconds window) {
  const uint64_t a = thread_cpu_ns(tid);
  std::this_thread::sleep_for(window);
  return thread_cpu_ns(tid) - a;
}

TEST(ExecutionModels, EachModeServesWriteVerifyFromSeveralQueues) {
  for (const char* mechanism : {"epoll", "io_uring"})
  for (auto m : all_modes()) {
    m.io_mechanism = mechanism;
    SCOPED_TRACE(m.mode + " with " + mechanism);
    Rig rig;
    rig.eng.set_log_sink([](engine::LogLevel, std::string_view) {});
    ASSERT_TRUE(rig.eng.set_threading(m).empty());
    rig.eng.set_sample_interval_ms(100);
    rig.start(4);
    rig.run_for(700ms);
    rig.check_clean();
    EXPECT_EQ(rig.eng.threading().mode, m.mode);
    for (const auto& q : rig.eng.last_snapshot().queues) {
      if (q.qid > 0) {
        EXPECT_EQ(q.io_mechanism, mechanism) << "queue " << q.qid;
      }
    }
    expect_pinned(rig.eng);
  }
}

TEST(ExecutionModels, LiveSwitchStressLosesNothing) {
  const auto modes = all_modes();
  ASSERT_GE(modes.size(), 2u) << "need two execution models to switch between";
  const auto cpus = sys::allowed_cpus();
  Rig rig;
  // Half the queues receive through epoll, half through io_uring (a queue keeps the mechanism
  // it was accepted with), so both survive every switch.
  rig.start(8, [&] {
    auto t = rig.eng.threading();
    t.io_mechanism = "io_uring";
    ASSERT_TRUE(rig.eng.set_threading(t).empty());
  });
  const auto connects_before = rig.eng.stats().connects;
  rig.eng.set_sample_interval_ms(100);
  std::this_thread::sleep_for(300ms);
  unsigned on_uring = 0;
  for (const auto& q : rig.eng.last_snapshot().queues) on_uring += q.qid > 0 && q.io_mechanism == "io_uring";
  ASSERT_EQ(on_uring, 4u) << "half the I/O queues must receive through io_uring";
  std::atomic<bool> stop{false};
  unsigned changes = 0;
  std::vector<std::string> failures;
  const auto seconds = std::getenv("NVMETUNE_SWITCH_SECONDS") ? std::atoi(std::getenv("NVMETUNE_SWITCH_SECONDS")) : 60;
  std::thread changer([&] {
    std::mt19937 rng(42);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
      auto t = modes[rng() % modes.size()];
      t.io_mechanism = rng() % 2 ? "io_uring" : "epoll";
      // A random non-empty subset of the CPUs, sometimes all of them (empty = all).
      if (rng() % 3) {
        for (unsigned c : cpus)
          if (rng() % 2) t.cpus.push_back(c);
      }
      if (t.mode != "bound") t.threads = 1 + rng() % 2;
      if (t.mode == "unbound") {
        static constexpr const char* scopes[] = {"cpu", "smt", "cache", "numa", "system"};
        t.affinity_scope = scopes[rng() % 5];
        t.strict = rng() % 2;
      }
      if (t.mode == "inline") t.inline_budget = 1 + rng() % 16;
      auto errs = rig.eng.set_threading(t);
      if (!errs.empty()) failures.push_back(t.mode + ": " + errs.front().path + ": " + errs.front().message);
      for (const auto& th : rig.eng.threads())
        if (!th.cpus.empty() && sys::thread_cpus_allowed(th.tid).cpus != th.cpus)
          failures.push_back(th.name + " not pinned as configured after switching to " + t.mode);
      ++changes;
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 100));
    }
    stop = true;
  });
  rig.run(stop);
  changer.join();
  for (auto& f : failures) ADD_FAILURE() << f;
  rig.check_clean();
  EXPECT_GT(changes, static_cast<unsigned>(seconds) * 2);  // every 100-200 ms, slower on a loaded machine
  const auto st = rig.eng.stats();
  EXPECT_EQ(st.connects, connects_before) << "a host had to reconnect";
  EXPECT_EQ(st.queues, 9u) << "every queue (admin + 8 I/O) must still be connected";
  uint64_t verified = 0;
  for (auto& w : rig.workers) verified += w.verified;
  std::printf("live switch: %u changes in %d s, %llu verified I/Os, 0 lost\n", changes, seconds,
              static_cast<unsigned long long>(verified));
}

TEST(ExecutionModels, RefusedChangeChangesNothing) {
  Rig rig;
  rig.start(1);
  const auto before = rig.eng.threading();
  auto bad = mode("poll", {9999});
  EXPECT_FALSE(rig.eng.set_threading(bad).empty());
  auto warp = mode("warp");
  EXPECT_FALSE(rig.eng.set_threading(warp).empty());
  EXPECT_EQ(rig.eng.threading().mode, before.mode);
  EXPECT_EQ(rig.eng.threading().cpus, before.cpus);
}

TEST(ExecutionModels, PollThreadsSleepAfterIdlePeriod) {
  Rig rig;
  auto p = mode("poll", {}, 1);
  p.idle_poll_us = 20000;  // 20 ms of busy polling after the last work
  ASSERT_TRUE(rig.eng.set_threading(p).empty());
  rig.start(1);
  rig.run_for(300ms);
  std::this_thread::sleep_for(100ms);  // idle period passes
  const auto threads = rig.eng.threads();
  ASSERT_FALSE(threads.empty());
  const uint64_t used = cpu_ns_over(threads[0].tid, 500ms);
  EXPECT_LT(used, 25'000'000u) << "an idle poll thread used " << used / 1000 << " us of CPU in 500 ms";
}

// The last "how" of the threading events: "in_place", "switched" or "switch_timeout".
std::string last_threading_change(const engine::Engine& eng) {
  std::string how;
  for (const auto& e : eng.events())
    if (e.kind == "threading") how = e.detail_json;
  return how;
}

// bound with a fixed idle_poll_period_us (nvmet-tcp's idle_poll_period_usecs): after the load
// stops the worker keeps polling for the period, then sleeps; with 0 it sleeps at once. (The
// adaptive window, the default, is event_executor_test's AdaptivePoll... test.)
// Starting the spin live switches the mode over (the queues' rings change kind); a new period
// keeps the workers.
TEST(ExecutionModels, BoundWorkersPollForTheIdlePeriodThenSleep) {
  Rig rig;
  auto b = mode("bound", {0});
  b.idle_poll_period_us = 0;
  b.idle_poll_adaptive = false;
  ASSERT_TRUE(rig.eng.set_threading(b).empty());
  rig.start(1);
  b.idle_poll_period_us = 500'000;
  ASSERT_TRUE(rig.eng.set_threading(b).empty());
  EXPECT_NE(last_threading_change(rig.eng).find("\"how\":\"switched\""), std::string::npos)
      << "0 to a period kept the executor: " << last_threading_change(rig.eng);
  b.idle_poll_period_us = 300'000;
  ASSERT_TRUE(rig.eng.set_threading(b).empty());
  EXPECT_NE(last_threading_change(rig.eng).find("\"how\":\"in_place\""), std::string::npos)
      << "a new period switched: " << last_threading_change(rig.eng);
  // An adaptive window mostly sleeps, so its rings are a sleeper's: turning it on is a switch,
  // and then a new period (0 included) is not.
  b.idle_poll_adaptive = true;
  ASSERT_TRUE(rig.eng.set_threading(b).empty());
  EXPECT_NE(last_threading_change(rig.eng).find("\"how\":\"switched\""), std::string::npos)
      << "turning the adaptive window on kept the rings: " << last_threading_change(rig.eng);
  b.idle_poll_period_us = 0;
  ASSERT_TRUE(rig.eng.set_threading(b).empty());
  EXPECT_NE(last_threading_change(rig.eng).find("\"how\":\"in_place\""), std::string::npos)
      << "an adaptive period to 0 switched: " << last_threading_change(rig.eng);
  b.idle_poll_period_us = 300'000;
  b.idle_poll_adaptive = false;
  ASSERT_TRUE(rig.eng.set_threading(b).empty());

  // The one bound worker's CPU time over window, starting after from now.
  auto worker_cpu_ns = [&](std::chrono::milliseconds after, std::chrono::milliseconds window) {
    std::this_thread::sleep_for(after);
    const auto threads = rig.eng.threads();
    EXPECT_EQ(threads.size(), 1u);
    return threads.empty() ? 0 : cpu_ns_over(threads[0].tid, window);
  };
  auto load_then_cpu = [&](std::chrono::milliseconds after, std::chrono::milliseconds window) {
    rig.run_for(150ms);
    return worker_cpu_ns(after, window);
  };
  // Within the period the worker spins: on a shared 2-CPU machine it still gets a good part of a CPU.
  const uint64_t polling = load_then_cpu(20ms, 200ms);
  EXPECT_GT(polling, 40'000'000u) << "a bound worker within its idle poll period used only " << polling / 1000
                                  << " us of CPU in 200 ms";
  // After it, the worker sleeps.
  EXPECT_LT(worker_cpu_ns(400ms, 300ms), 15'000'000u) << "still spinning after the idle poll period";

  b.idle_poll_period_us = 0;
  ASSERT_TRUE(rig.eng.set_threading(b).empty());
  EXPECT_NE(last_threading_change(rig.eng).find("\"how\":\"switched\""), std::string::npos);
  const uint64_t sleeping = load_then_cpu(20ms, 150ms);
  EXPECT_LT(sleeping, 15'000'000u) << "a bound worker without an idle poll period used " << sleeping / 1000
                                   << " us of CPU in the 150 ms after the load";
}

}  // namespace
