// The engine's own histograms checked against a known injected delay: a RAM namespace whose
// every completion comes 10 ms after submission (BackendSpec::delay_us). The sampler's
// Snapshot (Engine::subscribe) must put backend_latency and the read/write command latencies
// at 10 ms (p50, p90 within 10 %: a wake-up cost of 0.2-0.5 ms on a loaded machine is 2-5 % of it).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/control/executor_factory.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/stats/histogram_data.hpp"
#include "support/engine_config.hpp"
#include "support/wakeup_lateness.hpp"

namespace {

constexpr const char* test_nqn = "nqn.2026-12.io.nvmetune:stats-delay";
const uint32_t delay_us = std::getenv("DELAY_US") ? std::atoi(std::getenv("DELAY_US")) : 10000;

// Latency checks at 10 % must measure the engine, not a busy machine's scheduler: as root,
// this thread asks for nice -20 before the engine starts, and every engine and load thread
// inherits it (nice is per thread on Linux and copied at thread creation).
void prefer_this_process() { (void)setpriority(PRIO_PROCESS, 0, -20); }

void expect_at_delay(const stats::HistogramData& h, const char* name, const test_support::WakeupLateness& late) {
  const double delay_ns = delay_us * 1000.0;
  ASSERT_GT(h.count, 100u) << name;
  std::printf("%s: p50 %.0f us, p90 %.0f us, p99 %.0f us (delay %u us)\n", name, h.percentile(50) / 1e3,
              h.percentile(90) / 1e3, h.percentile(99) / 1e3, delay_us);
  // The body of the distribution must sit at the delay within 10 %, plus however late this
  // machine woke a sleeping thread at the same percentile during the run (a busy shared
  // machine). The far tail gets a wider bound; it still fails if completions were reaped late
  // as a rule.
  for (double p : {50.0, 90.0}) {
    EXPECT_GE(h.percentile(p), delay_ns * 0.9) << name << " p" << p;
    EXPECT_LE(h.percentile(p), delay_ns * 1.1 + late.at(p)) << name << " p" << p << ", wake-up lateness " << late.at(p);
  }
  EXPECT_GE(h.percentile(99), delay_ns * 0.9) << name << " p99";
  EXPECT_LE(h.percentile(99), delay_ns * 2.0 + late.at(99)) << name << " p99, wake-up lateness " << late.at(99);
}

TEST(StatsDelay, HistogramPercentilesMatchAnInjectedBackendDelay) {
  prefer_this_process();
  auto c = test_support::one_namespace_config(test_nqn, {.kind = "ram", .size_bytes = 64 << 20, .delay_us = delay_us});
  // The load generator busy-polls: on a CPU shared with an engine worker it would take the
  // worker's time slices and the test would measure the scheduler. Target and initiator apart.
  const auto cpus = sys::allowed_cpus();
  if (cpus.size() >= 2) c.threading.cpus = {cpus[0]};
  engine::Engine e(c);
  ASSERT_TRUE(e.start().empty());
  e.set_sample_interval_ms(200);

  std::mutex mu;
  stats::HistogramData backend, reads, writes;
  const uint64_t sub = e.subscribe([&](const stats::Snapshot& snap) {
    std::lock_guard lk(mu);
    backend.merge(snap.total.backend_latency);
    reads.merge(snap.total.read_latency);
    writes.merge(snap.total.write_latency);
  });
  initiator::LoadSpec spec;
  spec.target.port = e.listeners().front().port;
  spec.target.subnqn = test_nqn;
  spec.pattern = initiator::Pattern::randrw;
  spec.qd = 8;
  if (cpus.size() >= 2) spec.cpus = {cpus[1]};
  spec.time_s = 2;
  test_support::WakeupLateness late(uint64_t{delay_us} * 1000, cpus.size() >= 2 ? int(cpus[0]) : -1);
  const initiator::LoadResult r = initiator::run_load(spec);
  late.stop();
  std::printf("wake-up lateness of a %u us sleep: p50 %.0f us, p90 %.0f us, p99 %.0f us (%zu samples)\n", delay_us,
              late.at(50) / 1e3, late.at(90) / 1e3, late.at(99) / 1e3, late.samples());
  ASSERT_EQ(r.status, initiator::LoadResult::Status::ok) << r.error;
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the last interval closes
  e.unsubscribe(sub);
  std::lock_guard lk(mu);
  expect_at_delay(backend, "backend_latency", late);
  expect_at_delay(reads, "read_latency", late);
  expect_at_delay(writes, "write_latency", late);
  EXPECT_GE(backend.min_ns, uint64_t{delay_us} * 1000);
  e.stop();
}

}  // namespace
