// The target latency (kernel arrival stamp of a capsule -> its response handed to the socket)
// and its stages, checked against causes the test controls and against the host's own view:
//   - a backend that completes 5 ms late shows in the backend stage;
//   - a worker held off its CPU by a real-time spinner shows in the scheduling stage;
//   - a host that sends a write's data 60 ms after the R2T shows in the data-wait stage, and in
//     no stage of the target's own;
//   - under a hog on the worker's CPU the target p99 follows the initiator's (0.5x-1.25x), and
//     without one the target's p50 is a real part of the host's (>= 40 %): it holds the target's
//     share of the round trip, not just the backend.
// Real sockets on loopback, the engine and the initiator library in one process, each pinned
// to its own CPU.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "engine/control/engine.hpp"
#include "engine/control/executor_factory.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/stats/histogram_layout.hpp"
#include "engine/stats/latency_sources.hpp"
#include "engine/stats/registry.hpp"
#include "engine/stats/stage_breakdown.hpp"
#include "engine/system/cpu_hog.hpp"
#include "support/engine_config.hpp"
#include "support/hostile_host.hpp"

namespace {

constexpr const char* nqn = "nqn.2026-12.io.nvmetune:target-latency";
constexpr const char* hostnqn = "nqn.2026-12.io.nvmetune:target-latency-host";

// Every interval's totals added up while the object lives (Engine::subscribe).
class TotalsRecorder {
 public:
  explicit TotalsRecorder(engine::Engine& e) : _e(e) {
    _sub = e.subscribe([this](const stats::Snapshot& s) {
      std::lock_guard lk(_mu);
      stats::accumulate(_total, s.total);
    });
  }
  ~TotalsRecorder() { stop(); }
  // Waits for the interval in progress to close, then stops adding.
  stats::QueueRow stop() {
    if (_sub) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      _e.unsubscribe(_sub);
      _sub = 0;
    }
    std::lock_guard lk(_mu);
    return _total;
  }

 private:
  engine::Engine& _e;
  uint64_t _sub = 0;
  std::mutex _mu;
  stats::QueueRow _total;
};

struct Cpus {
  unsigned engine = 0, host = 0;
  bool apart = false;
};

Cpus pick_cpus() {
  const auto cpus = sys::allowed_cpus();
  if (cpus.size() < 2) return {};
  return {cpus[0], cpus[1], true};
}

control::Config pinned_config(const Cpus& c, backend::BackendSpec be) {
  auto cfg = test_support::one_namespace_config(nqn, std::move(be), 4096);
  cfg.threading.mode = "bound";
  cfg.threading.threads = 1;
  cfg.threading.cpus = {c.engine};
  return cfg;
}

initiator::LoadSpec load_on(const engine::Engine& e, const Cpus& c, unsigned qd, double secs,
                            initiator::Pattern p = initiator::Pattern::randread) {
  initiator::LoadSpec spec;
  spec.target.port = e.listeners().front().port;
  spec.target.subnqn = nqn;
  spec.pattern = p;
  spec.bs = 4096;
  spec.qd = qd;
  spec.time_s = secs;
  spec.cpus = {c.host};
  return spec;
}

void print_stages(const char* what, const stats::QueueRow& t) {
  const auto b = stats::stage_breakdown(t);
  std::printf("%s: %llu commands, mean target latency %.1f us; mean share per stage:", what,
              static_cast<unsigned long long>(b.commands), b.target_mean_ns / 1e3);
  for (const auto& f : b.stages) std::printf(" %s %.1f us (p99 %.1f)", f.source->key, f.share_ns / 1e3, f.p99_ns / 1e3);
  std::printf("\n");
}

// Samples of h at or above ns (to the bucket holding ns).
uint64_t count_at_least(const stats::HistogramData& h, uint64_t ns) {
  uint64_t n = 0;
  for (size_t i = stats::histogram_layout::bucket_of(ns); i < h.counts.size(); ++i) n += h.counts[i];
  return n;
}

double share_of(const stats::StageBreakdown& b, const char* key) {
  for (const auto& f : b.stages)
    if (std::string_view(f.source->key) == key) return f.share_ns;
  return -1;
}

TEST(TargetLatencyStages, ABackendDelayShowsInTheBackendStage) {
  const Cpus c = pick_cpus();
  if (!c.apart) GTEST_SKIP() << "needs two CPUs (engine and host apart)";
  engine::Engine e(pinned_config(c, {.kind = "ram", .size_bytes = 16 << 20, .delay_us = 5000}));
  ASSERT_TRUE(e.start().empty());
  e.set_sample_interval_ms(100);
  TotalsRecorder rec(e);
  const auto r = initiator::run_load(load_on(e, c, 1, 1.0));
  ASSERT_TRUE(r.clean()) << r.error << r.failure;
  const auto t = rec.stop();
  print_stages("5 ms backend", t);
  const auto b = stats::stage_breakdown(t);
  ASSERT_GT(b.commands, 50u);
  EXPECT_GE(t.backend_latency.percentile(50), 5e6);
  EXPECT_GE(t.target_read_latency.percentile(50), t.backend_latency.percentile(50));
  // The backend is where the time went: most of the mean target latency (the worker's wake-ups
  // for each capsule and each timer are the rest; tens of us each, more on a busy machine).
  EXPECT_GE(share_of(b, "backend_latency"), 0.75 * b.target_mean_ns);
  for (const char* other : {"stage_scheduling", "stage_queue", "stage_receive", "stage_send"})
    EXPECT_LT(5 * share_of(b, other), share_of(b, "backend_latency")) << other;
  EXPECT_EQ(t.stage_data_wait.count, 0u);  // reads never wait for data
}

// A SCHED_FIFO thread on the worker's CPU that spins `busy` out of every `period`: while it
// spins the worker cannot run, whatever it is woken for.
class RealtimeSpinner {
 public:
  RealtimeSpinner(unsigned cpu, std::chrono::microseconds busy, std::chrono::microseconds period) {
    _t = std::thread([=, this] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      sched_param sp{};
      sp.sched_priority = 1;
      _realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
      _started.store(true);
      using clock = std::chrono::steady_clock;
      auto next = clock::now();
      while (!_stop.load(std::memory_order_relaxed)) {
        const auto spin_end = next + busy;
        while (clock::now() < spin_end) {
        }
        next += period;
        std::this_thread::sleep_until(next);
      }
    });
    while (!_started.load()) std::this_thread::yield();
  }
  ~RealtimeSpinner() {
    _stop.store(true);
    _t.join();
  }
  bool realtime() const { return _realtime; }

 private:
  std::thread _t;
  std::atomic<bool> _stop{false}, _started{false};
  bool _realtime = false;
};

TEST(TargetLatencyStages, AWorkerHeldOffItsCpuShowsInTheSchedulingStage) {
  const Cpus c = pick_cpus();
  if (!c.apart) GTEST_SKIP() << "needs two CPUs (engine and host apart)";
  engine::Engine e(pinned_config(c, {.kind = "ram", .size_bytes = 16 << 20}));
  ASSERT_TRUE(e.start().empty());
  e.set_sample_interval_ms(100);
  TotalsRecorder rec(e);
  stats::QueueRow t;
  uint64_t host_delayed = 0;
  {
    RealtimeSpinner spin(c.engine, std::chrono::microseconds(8000), std::chrono::microseconds(16000));
    ASSERT_TRUE(spin.realtime()) << "SCHED_FIFO refused: this test needs root (CAP_SYS_NICE)";
    const auto r = initiator::run_load(load_on(e, c, 1, 1.5));
    ASSERT_TRUE(r.clean()) << r.error << r.failure;
    t = rec.stop();
    std::printf("host read p50 %.1f us, p99 %.1f us, max %.1f us\n", r.read.h.percentile(50) / 1e3,
                r.read.h.percentile(99) / 1e3, r.read.h.max_ns / 1e3);
    host_delayed = count_at_least(r.read.h, 2'000'000);
    std::printf("host reads that waited >= 2 ms: %llu\n", static_cast<unsigned long long>(host_delayed));
  }
  print_stages("worker held off its CPU 8 ms of every 16", t);
  const auto b = stats::stage_breakdown(t);
  ASSERT_GT(b.commands, 20u);
  // At qd1 about one command per spin (of 8 ms) waits for the spinner; the thousands between
  // spins do not. The host saw those waits (its reads of 2 ms or more: one per spin, ~95). The
  // target latency must hold them, and the scheduling stage those that waited for a wake-up:
  // measured 37-43 of 95. The spinner's timer preempts the worker at once, and a worker busy
  // 40 % of the time at qd1 is often mid-pass then: the receive or send stage holds the rest.
  // A stage measured from the engine's readiness, as before, saw none of them.
  ASSERT_GE(host_delayed, 20u) << "the spinner held nothing off: the premise of this test failed";
  EXPECT_GE(count_at_least(t.target_read_latency, 1'000'000), host_delayed * 8 / 10);
  EXPECT_GE(count_at_least(t.stage_scheduling, 1'000'000), host_delayed / 5);
  EXPECT_GE(t.stage_scheduling.max_ns, 4'000'000u);
  EXPECT_GT(share_of(b, "stage_scheduling"), 10 * share_of(b, "stage_queue"));
}

TEST(TargetLatencyStages, AHostDelayingItsDataShowsInTheDataWaitStageOnly) {
  auto cfg = test_support::one_namespace_config(nqn, {.kind = "ram", .size_bytes = 16 << 20}, 512);
  cfg.threading.mode = "bound";
  cfg.threading.threads = 1;
  engine::Engine e(cfg);
  ASSERT_TRUE(e.start().empty());
  e.set_sample_interval_ms(100);
  TotalsRecorder rec(e);
  const auto hold = std::chrono::milliseconds(60);
  constexpr unsigned writes = 3;
  {
    hostile::IoSession s(e.listeners().front().port, nqn, hostnqn);
    ASSERT_TRUE(s.ready);
    for (unsigned i = 0; i < writes; ++i) {
      fuzz::Stream w;  // 32 KiB: beyond the in-capsule size, so the target asks with an R2T
      w.capsule(fuzz::rw(uint16_t(10 + i), nvme::NvmOpcode::write, 1, 64 * i, 64, 512, fuzz::Xfer::transport));
      ASSERT_TRUE(s.io.send(w));
      auto r2t = s.io.recv_pdu(hostile::answer_ms);
      ASSERT_TRUE(r2t && (*r2t)[0] == uint8_t(tcp::PduType::r2t));
      const auto hdr = tcp::parse_r2t(*r2t);
      std::this_thread::sleep_for(hold);
      fuzz::Stream data;
      data.h2c_data(hdr.cccid, hdr.ttag, hdr.r2to, fuzz::Bytes(hdr.r2tl, uint8_t(i)), true);
      ASSERT_TRUE(s.io.send(data));
      auto resp = s.io.recv_pdu(hostile::answer_ms);
      ASSERT_TRUE(resp && (*resp)[0] == uint8_t(tcp::PduType::capsule_resp));
      ASSERT_TRUE(hostile::cqe_ok(tcp::parse_capsule_resp(*resp)));
    }
  }
  const auto t = rec.stop();
  print_stages("host sends its data 60 ms after the R2T", t);
  ASSERT_EQ(t.stage_data_wait.count, writes);
  const double hold_ns = std::chrono::duration<double, std::nano>(hold).count();
  EXPECT_GE(t.stage_data_wait.min_ns, hold_ns);
  EXPECT_GE(t.target_write_latency.min_ns, hold_ns);  // the host's time is in the target latency...
  // ...and in no stage of the target's own: each of those is far below the hold.
  for (const char* other : {"stage_scheduling", "stage_queue", "stage_receive", "backend_latency", "stage_send"}) {
    const auto* src = stats::find_latency_source(other);
    ASSERT_NE(src, nullptr);
    EXPECT_LT(static_cast<double>((t.*src->row).max_ns), hold_ns / 2) << other;
  }
}

// The target's p99 beside the host's, as the issue measures it: engine bound on one CPU with
// an 80 % hog there, the initiator on another, qd2. One attempt; the caller takes two of three
// (the machine is shared: a neighbour's burst in one run is not the engine's doing).
struct Figures {
  double host_p50 = 0, host_p99 = 0, target_p50 = 0, target_p99 = 0;
};

Figures measure(const Cpus& c, unsigned qd, double secs, unsigned hog_pct) {
  engine::Engine e(pinned_config(c, {.kind = "ram", .size_bytes = 64 << 20}));
  EXPECT_TRUE(e.start().empty());
  e.set_sample_interval_ms(200);
  // Written first: a RAM namespace read before it is written reads the zero page.
  auto fill = load_on(e, c, 16, 0, initiator::Pattern::write);
  fill.size_bytes = 64 << 20;
  fill.time_s = 0;
  EXPECT_TRUE(initiator::run_load(fill).clean());
  sys::CpuHog hog;
  if (hog_pct) {
    EXPECT_EQ(hog.start({.cpus = {c.engine}, .load_pct = hog_pct}), "");
  }
  TotalsRecorder rec(e);
  const auto r = initiator::run_load(load_on(e, c, qd, secs));
  const auto t = rec.stop();
  hog.stop();
  EXPECT_TRUE(r.clean()) << r.error << r.failure;
  print_stages(hog_pct ? "under the hog" : "no hog", t);
  std::printf("host: %llu reads in %.1f s, max %.1f us; target reads %llu, max %.1f us\n",
              static_cast<unsigned long long>(r.read.h.count), r.runtime_s, r.read.h.max_ns / 1e3,
              static_cast<unsigned long long>(t.target_read_latency.count), t.target_read_latency.max_ns / 1e3);
  return {r.read.h.percentile(50), r.read.h.percentile(99), t.target_read_latency.percentile(50),
          t.target_read_latency.percentile(99)};
}

TEST(TargetLatencyFidelity, TargetP99FollowsTheHostsUnderAHogOnTheWorkersCpu) {
  const Cpus c = pick_cpus();
  if (!c.apart) GTEST_SKIP() << "needs two CPUs (engine and host apart)";
  unsigned passed = 0;
  for (int run = 0; run < 3 && passed < 2; ++run) {
    const Figures f = measure(c, 2, 4.0, 80);
    // Never above the host's by more than 25 % (a command's target latency lies inside its host
    // latency), and at least half of it: what the target cannot see is the host's own CPU (other
    // threads preempt its poller too) and a worker preempted inside a sendmsg before the data
    // left, which transmit_end takes for one preempted after (send.cpp: the common case, and
    // the one that charged the target for time the host never waited). Measured on a quiet
    // 2-CPU VM: 0.52-0.98 (README, "Latency as the hosts see it").
    const double ratio = f.target_p99 / f.host_p99;
    const bool ok = ratio >= 0.5 && ratio <= 1.25 && f.target_p50 < f.host_p50;
    std::printf("hog 80 %%, qd2, run %d: host p50 %.1f us p99 %.1f us; target p50 %.1f us p99 %.1f us "
                "(p99 ratio %.2f) %s\n",
                run, f.host_p50 / 1e3, f.host_p99 / 1e3, f.target_p50 / 1e3, f.target_p99 / 1e3, ratio,
                ok ? "ok" : "OUT");
    passed += ok;
  }
  EXPECT_GE(passed, 2u) << "the target's p99 left [0.5, 1.25] x the host's in two runs of three";
}

TEST(TargetLatencyFidelity, TargetP50IsARealShareOfTheHostsAtQd1) {
  const Cpus c = pick_cpus();
  if (!c.apart) GTEST_SKIP() << "needs two CPUs (engine and host apart)";
  unsigned passed = 0;
  for (int run = 0; run < 3 && passed < 2; ++run) {
    const Figures f = measure(c, 1, 2.0, 0);
    const double share = f.target_p50 / f.host_p50;
    const bool ok = share >= 0.4 && f.target_p50 < f.host_p50;
    std::printf("no hog, qd1, run %d: host p50 %.1f us; target p50 %.1f us (%.0f %% of the host's) %s\n", run,
                f.host_p50 / 1e3, f.target_p50 / 1e3, 100 * share, ok ? "ok" : "OUT");
    passed += ok;
  }
  EXPECT_GE(passed, 2u) << "the target latency's p50 was under 40 % of the host's in two runs of three";
}

}  // namespace
