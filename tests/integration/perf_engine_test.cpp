// The load generator behind `nvmetune perf` (engine/initiator/load_generator) against the
// engine: verify mode finds a block corrupted behind the engine's back and names its LBA, and
// latency percentiles measured through an injected backend delay land at that delay.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/control/executor_factory.hpp"
#include "engine/initiator/load_generator.hpp"
#include "support/engine_config.hpp"
#include "support/wakeup_lateness.hpp"

namespace {

constexpr const char* test_nqn = "nqn.2026-12.io.nvmetune:perf-itest";
constexpr uint32_t block = 512;
constexpr uint32_t io_size = 4096;
constexpr uint64_t file_ns_bytes = 1 << 20;

// Latency checks at 10 % must measure the engine, not a busy machine's scheduler: as root,
// this thread asks for nice -20 before the engine starts, and every engine and load thread
// inherits it (nice is per thread on Linux and copied at thread creation).
void prefer_this_process() { (void)setpriority(PRIO_PROCESS, 0, -20); }

control::Config one_namespace(const backend::BackendSpec& spec) {
  auto c = test_support::one_namespace_config(test_nqn, spec, block);
  c.threading.threads = 1;
  return c;
}

initiator::LoadSpec load_on(const engine::Engine& e) {
  initiator::LoadSpec spec;
  spec.target.traddr = "127.0.0.1";
  spec.target.port = e.listeners().front().port;
  spec.target.subnqn = test_nqn;
  return spec;
}

class TempFile {
 public:
  TempFile() {
    char tmpl[] = "/var/tmp/nvmetune-perf-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    _path = tmpl;
  }
  ~TempFile() { unlink(_path.c_str()); }
  const std::string& path() const { return _path; }

 private:
  std::string _path;
};

// Every block of a file-backed namespace is written once (sequential, --size = the namespace),
// then, before the read-back, one 512-byte block is overwritten with pwrite behind the
// engine's back: the read-back must report exactly that LBA.
TEST(PerfAgainstEngine, VerifyReportsTheLbaOfABlockCorruptedBehindTheEnginesBack) {
  TempFile file;
  backend::BackendSpec b;
  b.kind = "file";
  b.path = file.path();
  b.size_bytes = file_ns_bytes;
  b.create = true;
  b.direct = false;  // the page cache: our pwrite and the engine's reads see the same bytes
  engine::Engine e(one_namespace(b));
  ASSERT_TRUE(e.start().empty());
  constexpr uint64_t bad_unit = 77;
  constexpr uint64_t bad_lba = bad_unit * (io_size / block) + 3;
  initiator::LoadSpec spec = load_on(e);
  spec.pattern = initiator::Pattern::write;
  spec.bs = io_size;
  spec.qd = 4;
  spec.size_bytes = file_ns_bytes;
  spec.time_s = 0;
  spec.verify = true;
  bool corrupted = false;
  spec.before_readback = [&] {
    const int fd = open(file.path().c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> junk(block, 0xA5);
    ASSERT_EQ(pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(bad_lba * block)), static_cast<ssize_t>(block));
    close(fd);
    corrupted = true;
  };
  const initiator::LoadResult r = initiator::run_load(spec);
  ASSERT_EQ(r.status, initiator::LoadResult::Status::ok) << r.error;
  EXPECT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_TRUE(corrupted);
  EXPECT_EQ(r.write.h.count, file_ns_bytes / io_size);
  EXPECT_EQ(r.verify_checked, file_ns_bytes / io_size);  // the read-back saw every block
  EXPECT_EQ(r.verify_mismatches, 1u);
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].lba, bad_lba);
  EXPECT_EQ(r.mismatches[0].offset, 0u);  // the block's first bytes hold its LBA: they differ
  EXPECT_FALSE(r.clean());
  e.stop();
}

// The same run without corruption is clean: the mismatch above is the corruption, not noise.
TEST(PerfAgainstEngine, VerifyIsCleanWithoutCorruption) {
  backend::BackendSpec b;
  b.kind = "ram";
  b.size_bytes = file_ns_bytes;
  engine::Engine e(one_namespace(b));
  ASSERT_TRUE(e.start().empty());
  initiator::LoadSpec spec = load_on(e);
  spec.pattern = initiator::Pattern::randrw;
  spec.qd = 8;
  spec.time_s = 1;
  spec.verify = true;
  const initiator::LoadResult r = initiator::run_load(spec);
  ASSERT_EQ(r.status, initiator::LoadResult::Status::ok) << r.error;
  EXPECT_TRUE(r.clean()) << r.failure << " mismatches " << r.verify_mismatches;
  EXPECT_GT(r.verify_checked, 0u);
  e.stop();
}

// A null namespace with a fixed 10 ms completion delay: perf's p50 and p99 (submit to
// completion, over TCP) are that delay plus the transport's few microseconds: within 10 %.
TEST(PerfAgainstEngine, PercentilesLandAtAnInjectedBackendDelay) {
  prefer_this_process();
  constexpr double delay_ns = 10e6;
  backend::BackendSpec b;
  b.kind = "null";
  b.size_bytes = 1 << 30;
  b.delay_us = static_cast<uint32_t>(delay_ns / 1000);
  // perf busy-polls: sharing a CPU with the engine's worker it would take its time slices and
  // the test would measure the scheduler. Target and initiator on CPUs of their own.
  auto cfg = one_namespace(b);
  const auto cpus = sys::allowed_cpus();
  if (cpus.size() >= 2) cfg.threading.cpus = {cpus[0]};
  engine::Engine e(cfg);
  ASSERT_TRUE(e.start().empty());
  initiator::LoadSpec spec = load_on(e);
  if (cpus.size() >= 2) spec.cpus = {cpus[1]};
  spec.pattern = initiator::Pattern::randread;
  spec.qd = 4;
  spec.time_s = 2;
  spec.ramp_s = 0.2;
  // p50 and p90 within 10 %; p99 gets a wider bound; each plus how late this machine woke a
  // sleeping thread at that percentile during the run. The lower bounds hold in every run; the
  // upper ones in one of three (a neighbour's build can stall the initiator for a whole run; a
  // wrong percentile or completions reaped late as a rule fail all three).
  initiator::LoadResult r;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    test_support::WakeupLateness late(static_cast<uint64_t>(delay_ns), cpus.size() >= 2 ? int(cpus[0]) : -1);
    r = initiator::run_load(spec);
    late.stop();
    ASSERT_EQ(r.status, initiator::LoadResult::Status::ok) << r.error;
    ASSERT_TRUE(r.failure.empty()) << r.failure;
    ASSERT_GT(r.read.h.count, 100u);
    std::string over;
    for (double p : {50.0, 90.0, 99.0}) {
      const double v = r.read.h.percentile(p);
      EXPECT_GE(v, delay_ns * 0.9) << "p" << p;
      const double bound = delay_ns * (p < 99.0 ? 1.1 : 2.0) + late.at(p);
      if (v > bound)
        over += " p" + std::to_string(int(p)) + " " + std::to_string(v / 1e6) + " ms > " + std::to_string(bound / 1e6);
    }
    if (over.empty()) break;
    std::printf("attempt %d:%s\n", attempt, over.c_str());
    EXPECT_LT(attempt, 3) << "over the bound in every run:" << over;
  }
  EXPECT_GE(static_cast<double>(r.read.h.min_ns), delay_ns);  // never earlier than the delay
  e.stop();
}

}  // namespace
