// Engine hardening (issue 15): hostile and heavy hosts against the real engine over loopback.
// Each test names the defect it guards; each failed before its fix.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/connection_cap.hpp"
#include "engine/initiator/commands.hpp"
#include "engine/initiator/initiator.hpp"
#include "engine/initiator/load_generator.hpp"
#include "lab/load/perf_options.hpp"
#include "engine/nvme/le.hpp"
#include "engine/tcp/listener.hpp"
#include "support/engine_config.hpp"
#include "support/eventually.hpp"
#include "support/tcp_queue_harness.hpp"
#include "support/sanitized.hpp"

namespace {

using namespace initiator;
using namespace std::chrono_literals;

constexpr const char* test_nqn = "nqn.2026-12.io.nvmetune:harden";
constexpr const char* host_nqn = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-00000000000f";
constexpr uint32_t block = 512;
constexpr uint64_t MiB = 1024 * 1024;

#define ASSERT_RESULT(r) ASSERT_TRUE(r) << (r).error().to_string()

// One command's completion, waited for by driving the queue.
struct Waiter {
  bool done = false;
  Completion c;
  Callback callback() {
    return {[](void* ctx, const Completion& c) {
              auto* w = static_cast<Waiter*>(ctx);
              w->c = c;
              w->done = true;
            },
            this};
  }
  bool wait(TcpQueue& q, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < end) q.wait(100);
    return done;
  }
};

// Submits io and drives q until it completes: whether it succeeded.
bool run_io(TcpQueue& q, Io io) {
  Waiter w;
  io.done = w.callback();
  EXPECT_TRUE(q.submit(io));
  EXPECT_TRUE(w.wait(q, 10s));
  return w.c.ok();
}

class HardeningTest : public ::testing::Test {
 protected:
  control::Config config(uint64_t ns_bytes = 64 * MiB) {
    backend::BackendSpec b;
    b.kind = "ram";
    b.size_bytes = ns_bytes;
    return config_for(b);
  }
  // One worker on CPU 0 serving namespace 1 on b.
  control::Config config_for(const backend::BackendSpec& b) {
    auto c = test_support::one_namespace_config(test_nqn, b, block);
    c.threading.mode = "bound";
    c.threading.threads = 1;
    c.threading.cpus = {0};
    return c;
  }

  void serve(const control::Config& c) {
    _engine = std::make_unique<engine::Engine>(c);
    const auto errs = _engine->start();
    for (const auto& e : errs) ADD_FAILURE() << "engine start: " << e.path << ": " << e.message;
    ASSERT_TRUE(errs.empty());
    _port = _engine->listeners().at(0).port;
  }

  void TearDown() override {
    if (_engine) _engine->stop();
  }

  Target target() const {
    Target t;
    t.port = _port;
    t.subnqn = test_nqn;
    t.hostnqn = host_nqn;
    t.hostid[0] = 0x0f;
    return t;
  }

  std::unique_ptr<engine::Engine> _engine;
  uint16_t _port = 0;
};

// Defect 1: a short send under io_uring left the rest of a C2HData queued with nothing armed
// to wake the queue. A 16 MiB read does not fit the socket's buffers (wmem/rmem maxima are
// 4 and 6 MiB), so every pass after the first writes only part of the one PDU left.
TEST_F(HardeningTest, IoUringShortSendResumes) {
  constexpr uint32_t big = 16 * MiB;
  auto c = config();
  c.threading.io_mechanism = "io_uring";
  c.tcp.mdts_bytes = big;
  ASSERT_NO_FATAL_FAILURE(serve(c));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(4);
  ASSERT_RESULT(q);
  std::vector<uint8_t> buf(big);
  for (int i = 0; i < 4; ++i) {
    Waiter w;
    ASSERT_TRUE((*q)->submit(Io{Op::read, 1, 0, static_cast<uint16_t>(big / block - 1), buf, false, w.callback()}));
    std::this_thread::sleep_for(100ms);  // the target fills the socket and stops mid-PDU
    ASSERT_TRUE(w.wait(**q, 10s)) << "read " << i << " never completed: the rest of the C2HData stayed queued";
    ASSERT_TRUE(w.c.ok());
  }
}

// Defect 8: qd 1 sent SQSIZE 0 (invalid) and Connect was refused. A queue of depth d now asks
// for d + 1 entries, so d commands fit under SQ flow control; d = MQES + 1 still connects.
TEST_F(HardeningTest, QueueDepthOneConnects) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  const uint16_t mqes = static_cast<uint16_t>((*ctrl)->cap() & 0xffff);
  for (uint16_t depth : {uint16_t{1}, uint16_t{2}, mqes, static_cast<uint16_t>(mqes + 1)}) {
    auto q = (*ctrl)->create_io_queue(depth);
    ASSERT_RESULT(q) << " depth " << depth;
    std::vector<uint8_t> buf(4096);
    Waiter w;
    ASSERT_TRUE((*q)->submit(Io{Op::read, 1, 0, 7, buf, false, w.callback()}));
    ASSERT_TRUE(w.wait(**q, 10s));
    EXPECT_TRUE(w.c.ok()) << " depth " << depth;
  }
}

// Defect 6: SQHD advanced when a capsule arrived, so a host that follows SQ flow control to
// the letter (submits whenever SQHD says an entry is free) overran the queue's slots and was
// terminated. The host here keeps the SQ full for many rounds while completions are delayed;
// then a kernel-style host runs MQES + 1 commands at once in MQES + 1 entries.
TEST_F(HardeningTest, SqFlowControlAtFullDepth) {
  auto c = config();
  c.subsystems[0].namespaces[0].backend.delay_us = 5000;  // commands stay in flight
  ASSERT_NO_FATAL_FAILURE(serve(c));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  const uint16_t mqes = static_cast<uint16_t>((*ctrl)->cap() & 0xffff);
  const uint32_t entries = mqes + 1u;

  QueueParams p;
  p.qid = 2;  // create_io_queue below takes qid 1
  p.cntlid = (*ctrl)->cntlid();
  p.depth = static_cast<uint16_t>(2 * entries);  // more slots than entries: SQHD is the limit
  p.sqsize = mqes;
  auto q = TcpQueue::connect(target(), p);
  ASSERT_RESULT(q);

  struct Host {
    uint32_t tail = 0, head = 0, done = 0, failed = 0, max_outstanding = 0;
    uint32_t entries = 0;
    static void on_done(void* ctx, const Completion& c) {
      auto* h = static_cast<Host*>(ctx);
      ++h->done;
      if (!c.ok()) ++h->failed;
      h->head = c.cqe.sqhd;
    }
    bool full() const { return (tail + 1) % entries == head; }
  } h;
  h.entries = entries;
  // Connect was the queue's first SQ entry: its response says the head moved past it.
  h.tail = 1;
  h.head = (*q)->connect_response().sqhd;
  EXPECT_EQ(h.head, 1u);
  std::vector<uint8_t> buf(512);
  const uint32_t total = 8 * entries;
  uint32_t submitted = 0;
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (h.done < total && std::chrono::steady_clock::now() < end) {
    while (submitted < total && !h.full()) {
      ASSERT_TRUE((*q)->submit(Io{Op::read, 1, submitted % 64, 0, buf, false, {&Host::on_done, &h}}))
          << "no free slot with " << (*q)->outstanding() << " outstanding";
      ++submitted;
      h.tail = (h.tail + 1) % entries;
      h.max_outstanding = std::max(h.max_outstanding, (*q)->outstanding());
    }
    ASSERT_GE((*q)->wait(100), 0) << (*q)->error().to_string();
  }
  ASSERT_EQ(h.done, total) << (*q)->error().to_string();
  EXPECT_EQ(h.failed, 0u);
  EXPECT_EQ(h.max_outstanding, mqes) << "the host kept the SQ full (entries - 1 outstanding)";

  // The kernel host's convention: SQSIZE + 1 commands in flight at once.
  auto k = (*ctrl)->create_io_queue(static_cast<uint16_t>(entries));
  ASSERT_RESULT(k);
  Host all;
  for (uint32_t i = 0; i < entries; ++i)
    ASSERT_TRUE((*k)->submit(Io{Op::read, 1, i % 64, 0, buf, false, {&Host::on_done, &all}}));
  EXPECT_EQ((*k)->outstanding(), entries);
  const auto end2 = std::chrono::steady_clock::now() + 30s;
  while (all.done < entries && std::chrono::steady_clock::now() < end2) ASSERT_GE((*k)->wait(100), 0);
  EXPECT_EQ(all.done, entries);
  EXPECT_EQ(all.failed, 0u);
}

// Defect 3: DSM ranges recursed (one stack frame per 1 GiB piece) and ran to the end before
// anything else on the worker: 256 ranges of 1 TiB held it for hundreds of ms. They now walk
// in a loop and yield between passes, so a read sent right behind the DSM completes first.
TEST_F(HardeningTest, HugeDeallocateYieldsToOtherCommands) {
  constexpr uint64_t TiB = 1ull << 40;
  backend::BackendSpec b;
  b.kind = "null";
  b.size_bytes = 256 * TiB;
  auto c = test_support::one_namespace_config(test_nqn, b, block);
  c.threading.mode = "bound";
  c.threading.threads = 1;
  c.threading.cpus = {0};
  ASSERT_NO_FATAL_FAILURE(serve(c));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(4);
  ASSERT_RESULT(q);
  std::vector<uint8_t> ranges(256 * 16);
  const uint32_t nlb = static_cast<uint32_t>(TiB / block);
  for (uint32_t i = 0; i < 256; ++i) cmd::put_dsm_range(ranges, i, uint64_t{i} * nlb, nlb);
  std::vector<uint8_t> buf(4096);
  int order = 0, dsm_at = 0, read_at = 0;
  struct Order {
    int* counter;
    int* at;
    Completion c;
  } dsm{&order, &dsm_at, {}}, rd{&order, &read_at, {}};
  const CompletionFn record = [](void* ctx, const Completion& c) {
    auto* o = static_cast<Order*>(ctx);
    *o->at = ++*o->counter;
    o->c = c;
  };
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*q)->submit(Io{Op::dsm, 1, 0, 0, ranges, false, {record, &dsm}}));
  ASSERT_TRUE((*q)->submit(Io{Op::read, 1, 0, 7, buf, false, {record, &rd}}));
  const auto end = t0 + 60s;
  while (order < 2 && std::chrono::steady_clock::now() < end) ASSERT_GE((*q)->wait(100), 0);
  ASSERT_EQ(order, 2);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  std::printf("256 x 1 TiB deallocate: %lld ms\n", static_cast<long long>(ms.count()));
  EXPECT_TRUE(dsm.c.ok());
  EXPECT_TRUE(rd.c.ok());
  EXPECT_LT(read_at, dsm_at) << "the read waited behind the whole deallocate";
}

// Defect 3: DLFEAT promises that deallocated (and zeroed) blocks read back as zeroes; each
// backend either keeps that promise or does not make it.
class DeallocateReadsZeroes : public HardeningTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(DeallocateReadsZeroes, AsDlfeatPromises) {
  backend::BackendSpec b;
  b.kind = GetParam();
  b.size_bytes = 64 * MiB;
  std::string path;
  if (b.kind == "file") {
    char tmpl[] = "/tmp/nvmetune-dlfeat-XXXXXX";
    const int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    unlink(tmpl);
    path = tmpl;
    b.path = path;
    b.create = true;
  }
  ASSERT_NO_FATAL_FAILURE(serve(config_for(b)));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto id = (*ctrl)->identify(0, 1);
  ASSERT_RESULT(id);
  const bool promises_zeroes = ((*id)[33] & 7) == 1;
  auto q = (*ctrl)->create_io_queue(4);
  ASSERT_RESULT(q);
  auto run = [&](Io io) { return run_io(**q, io); };
  // 64 KiB of pattern at LBA 0 and at LBA 1024, then deallocate the first, zero the second.
  std::vector<uint8_t> pattern(64 * 1024, 0xa5), got(64 * 1024);
  const uint16_t nlb0 = 64 * 1024 / block - 1;
  ASSERT_TRUE(run(Io{Op::write, 1, 0, nlb0, pattern}));
  ASSERT_TRUE(run(Io{Op::write, 1, 1024, nlb0, pattern}));
  std::vector<uint8_t> ranges(16);
  cmd::put_dsm_range(ranges, 0, 0, nlb0 + 1u);
  ASSERT_TRUE(run(Io{Op::dsm, 1, 0, 0, ranges}));
  ASSERT_TRUE(run(Io{Op::write_zeroes, 1, 1024, nlb0, {}}));
  if (!promises_zeroes) {
    EXPECT_EQ(b.kind, "null") << "only the null backend may decline DLFEAT's read-zeroes";
  } else {
    for (uint64_t lba : {uint64_t{0}, uint64_t{1024}}) {
      std::fill(got.begin(), got.end(), 0xff);
      ASSERT_TRUE(run(Io{Op::read, 1, lba, nlb0, got}));
      EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t v) { return v == 0; }))
          << b.kind << ": LBA " << lba << " does not read back as zeroes";
    }
  }
  if (!path.empty()) unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, DeallocateReadsZeroes, ::testing::Values("ram", "null", "file"));

// Review "Hardening 2": a null read left the buffer as it was, so over TCP it sent back what the
// command slot last held, the same host's earlier data (and over RDMA, whose data buffers all
// queues of a device share, another host's: rdma_queue_test). Reads return zeroes now.
TEST_F(HardeningTest, NullReadReturnsZeroesNotTheSlotsLastData) {
  backend::BackendSpec b;
  b.kind = "null";
  b.size_bytes = 64 * MiB;
  ASSERT_NO_FATAL_FAILURE(serve(config_for(b)));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(2);  // few slots: the read reuses the write's buffer
  ASSERT_RESULT(q);
  auto run = [&](Io io) { return run_io(**q, io); };
  std::vector<uint8_t> pattern(16 * 1024, 0xa5), got(16 * 1024, 0xee);
  const uint16_t nlb0 = 16 * 1024 / block - 1;
  ASSERT_TRUE(run(Io{Op::write, 1, 0, nlb0, pattern}));
  ASSERT_TRUE(run(Io{Op::read, 1, 0, nlb0, got}));
  EXPECT_EQ(std::count(got.begin(), got.end(), 0), std::ssize(got)) << "byte 0 is " << int(got[0]);
}

// ---- Defect 2: accept storms -----------------------------------------------------------------

long rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmRSS: %ld", &kib) == 1) break;
  if (f) std::fclose(f);
  return kib;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

size_t open_fds() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += e.is_symlink() ? 1 : 0;
  return n;
}

int tcp_connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// CPU this process uses over one second of wall time, as a share of one core.
double cpu_share_over_1s() {
  const double c0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return (cpu_seconds() - c0) / wall;
}

// /proc/self/task/TID/stat of the engine's accept thread, opened now (the fd-limit test reads
// it when no fd is left to open).
int open_accept_thread_stat() {
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    FILE* f = std::fopen((e.path() / "comm").c_str(), "r");
    char name[32] = {};
    if (f && std::fgets(name, sizeof name, f) && std::string(name) == "nvmt-accept\n") {
      std::fclose(f);
      return open((e.path() / "stat").c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (f) std::fclose(f);
  }
  return -1;
}

// utime + stime of a thread, in clock ticks.
long thread_ticks(int stat_fd) {
  char buf[1024] = {};
  if (pread(stat_fd, buf, sizeof buf - 1, 0) <= 0) return -1;
  const char* p = std::strrchr(buf, ')');  // the name may hold spaces
  long utime = 0, stime = 0;
  if (!p || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime) != 2) return -1;
  return utime + stime;
}

// A host that sends part of a PDU and closes at once: the end of stream often comes in the same
// readiness event as the data, and an edge-triggered worker gets no event after it. A queue that
// stopped reading at the short read of that data stayed open until the handshake timeout (or, as
// in LoopbackTest.AbruptDisconnectMidTransfer, for good once connected: 4 runs in 30 failed).
// Each connection waits until its queue is idle, so the data and the end of stream arrive at a
// sleeping worker.
TEST_F(HardeningTest, PartOfAPduThenEndOfStreamClosesTheQueue) {
  constexpr int hosts = 40;
  auto c = config();
  c.tcp.connect_timeout_ms = 60000;  // only the end of stream may close them within the test
  c.threading.idle_poll_period_us = 0;  // the worker sleeps between events: one edge for both
  ASSERT_NO_FATAL_FAILURE(serve(c));
  uint8_t half_icreq[64] = {};
  half_icreq[0] = 0x00;  // ICReq
  half_icreq[2] = 128;   // HLEN
  nvme::put_le<uint32_t>(half_icreq, 4, 128);  // PLEN: a whole ICReq is announced
  for (int i = 0; i < hosts; ++i) {
    const int fd = tcp_connect(_port);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ASSERT_TRUE(test_support::eventually([&] { return _engine->stats().queues == 1; }, 5s)) << "connection " << i << " not accepted";
    std::this_thread::sleep_for(2ms);  // its first pass found nothing: the worker sleeps
    ASSERT_EQ(send(fd, half_icreq, sizeof half_icreq, MSG_NOSIGNAL), ssize_t(sizeof half_icreq));
    ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
    EXPECT_TRUE(test_support::eventually([&] { return _engine->stats().queues == 0; }, 3s))
        << "connection " << i << ": the queue missed its host's end of stream";
    close(fd);
    if (HasFailure()) break;
  }
}

// 5,000 TCP connections that never send ICReq: each costs a bounded amount of memory (no
// command slots or buffers before Connect), the engine stays idle, and a real host is served.
TEST_F(HardeningTest, IdleConnectionStorm) {
  constexpr int idle = 5000;
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_max < 2 * idle + 256) GTEST_SKIP() << "needs RLIMIT_NOFILE >= " << 2 * idle + 256;
  rlimit raised = lim;
  raised.rlim_cur = lim.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &raised), 0);
  auto c = config();
  c.tcp.max_connections = idle + 16;
  c.tcp.connect_timeout_ms = 120000;  // they stay while measured
  ASSERT_NO_FATAL_FAILURE(serve(c));
  const long rss0 = rss_kib();
  const size_t fds0 = open_fds();
  std::vector<int> socks;
  for (int i = 0; i < idle; ++i) {
    const int fd = tcp_connect(_port);
    ASSERT_GE(fd, 0) << "connect " << i << ": " << std::strerror(errno);
    socks.push_back(fd);
  }
  // Accepted: one server fd per client fd.
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (open_fds() < fds0 + 2 * idle && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(50ms);
  ASSERT_GE(open_fds(), fds0 + 2 * idle) << "the engine did not accept them all";
  const long rss1 = rss_kib();
  const double cpu = cpu_share_over_1s();
  const long per_conn = (rss1 - rss0) * 1024 / idle;
  std::printf("idle connections: %d, RSS %ld -> %ld KiB (%ld bytes each), CPU %.1f %% of a core while idle\n",
              idle, rss0, rss1, per_conn, 100 * cpu);
#if !NVMT_SANITIZED_ALLOCATOR  // redzones
  EXPECT_LT(per_conn, 96 * 1024) << "memory per idle connection (178 KiB before slots were sized at Connect)";
#endif
  EXPECT_LT(cpu, 0.5) << "the engine is not idle";
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(4);
  ASSERT_RESULT(q);
  for (int fd : socks) close(fd);
  setrlimit(RLIMIT_NOFILE, &lim);
}

// Out of fds: the accept loop spun at 100 % on EMFILE. It now backs off, stays idle, and
// serves the connections waiting in the backlog once fds are free again.
TEST_F(HardeningTest, AcceptBacksOffAtFdLimit) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  int stat_fd = -1;
  for (int i = 0; i < 100 && stat_fd < 0; ++i, std::this_thread::sleep_for(10ms)) stat_fd = open_accept_thread_stat();
  ASSERT_GE(stat_fd, 0) << "no nvmt-accept thread";
  const long rss0 = rss_kib();
  constexpr int clients = 100;
  std::vector<int> socks;
  for (int i = 0; i < clients; ++i) socks.push_back(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  rlimit low = lim;
  low.rlim_cur = open_fds() + 10;  // the engine may accept about 10, then EMFILE
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int fd : socks) ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::this_thread::sleep_for(200ms);
  // The accept thread's own CPU time over a second: a spinning thread gets its share of a
  // CPU even on a loaded machine (tens of ticks); a backed-off one wakes a few times.
  const long t0 = thread_ticks(stat_fd);
  std::this_thread::sleep_for(1s);
  const long ticks = thread_ticks(stat_fd) - t0;
  const long hz = sysconf(_SC_CLK_TCK);
  std::printf("at the fd limit with %d connections waiting: accept thread CPU %ld ms in 1 s, RSS %ld KiB\n",
              clients, ticks * 1000 / hz, rss0);
  setrlimit(RLIMIT_NOFILE, &lim);
  close(stat_fd);
  EXPECT_LE(ticks * 1000 / hz, 20) << "the accept loop spins on EMFILE";
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(4);
  ASSERT_RESULT(q);
  for (int fd : socks) close(fd);
}

// Waits until the target closes fd (recv returns 0 or an error).
bool closed_by_peer(int fd, std::chrono::milliseconds timeout) {
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b;
  const ssize_t n = recv(fd, &b, 1, 0);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// max_connections: connections beyond it are closed at accept. connect_timeout_ms: a
// connection that sends no ICReq and Connect in time is closed. A real host is served after.
TEST_F(HardeningTest, ConnectionLimitAndConnectTimeout) {
  auto c = config();
  c.tcp.max_connections = 3;
  c.tcp.connect_timeout_ms = 300;
  ASSERT_NO_FATAL_FAILURE(serve(c));
  std::vector<int> socks;
  for (int i = 0; i < 3; ++i) socks.push_back(tcp_connect(_port));
  std::this_thread::sleep_for(100ms);  // accepted before the next ones arrive
  const int over = tcp_connect(_port);
  ASSERT_GE(over, 0);
  EXPECT_TRUE(closed_by_peer(over, 5000ms)) << "the fourth connection was not closed";
  for (int fd : socks) EXPECT_TRUE(closed_by_peer(fd, 10000ms)) << "an idle connection outlived the timeout";
  for (int fd : socks) close(fd);
  close(over);
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  const auto events = _engine->events(0, 1000);
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const auto& e) { return e.kind == "connect_timeout"; }));
}

// Issue 33: handshake deadlines named their queue by address. Under churn a new connection's queue
// is often allocated where a closed one's was, and the timer then closed it at the dead queue's
// deadline: a host that had just connected was dropped as "no ICReq and Connect within 10000 ms".
// Each round closes four connections at once and opens four more 250 ms later (their queues
// often take the closed ones' memory); each must stay open until its own deadline (400 ms after
// it connected), not a closed one's. Before the fix 6 and 7 of the 24 were closed after ~150 ms (two runs).
TEST_F(HardeningTest, HandshakeDeadlineIsTheConnectionsOwn) {
  auto c = config();
  c.tcp.connect_timeout_ms = 400;
  ASSERT_NO_FATAL_FAILURE(serve(c));
  constexpr int per_round = 4;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < per_round; ++i) {
      const int a = tcp_connect(_port);
      ASSERT_GE(a, 0);
      close(a);  // its queue sees the end of stream and is freed within the 250 ms
    }
    std::this_thread::sleep_for(250ms);
    const auto connected = std::chrono::steady_clock::now();
    std::vector<int> bs;
    for (int i = 0; i < per_round; ++i) bs.push_back(tcp_connect(_port));
    for (int b : bs) {
      ASSERT_GE(b, 0);
      EXPECT_TRUE(closed_by_peer(b, 5000ms)) << "a connection outlived its own deadline";
      const auto lived = std::chrono::steady_clock::now() - connected;
      EXPECT_GE(lived, 350ms) << "round " << round << ": closed at another connection's deadline after "
                              << std::chrono::duration_cast<std::chrono::milliseconds>(lived).count() << " ms";
      close(b);
    }
  }
}

// Hardening 2, finding 1: a discovery controller connected with KATO 0 (nvme discover's) never
// expired, so silent discovery hosts could hold every connection. It now gets
// tcp.discovery_kato_ms (120 s by default, shortened here): both connections of the limit close
// on their own, and a host is served after. Set Features KATO 0 does not turn it off either.
TEST_F(HardeningTest, IdleDiscoveryControllersExpire) {
  auto c = config();
  c.tcp.max_connections = 2;
  c.tcp.discovery_kato_ms = 500;
  ASSERT_NO_FATAL_FAILURE(serve(c));
  Target d = target();
  d.subnqn = nvme::discovery_nqn;
  d.kato_ms = 0;
  auto first = Controller::connect(d);
  ASSERT_RESULT(first);
  auto second = Controller::connect(d);
  ASSERT_RESULT(second);
  auto kato = (*second)->set_features(static_cast<uint8_t>(nvme::FeatureId::keep_alive_timer), 0);
  ASSERT_RESULT(kato);
  auto now = (*second)->get_features(static_cast<uint8_t>(nvme::FeatureId::keep_alive_timer));
  ASSERT_RESULT(now);
  EXPECT_EQ(*now, 500u) << "Set Features KATO 0 turned the discovery timeout off";
  const auto silent_from = std::chrono::steady_clock::now();
  EXPECT_TRUE((*first)->admin_queue().wait_peer_close(5000)) << "an idle discovery controller never expired";
  EXPECT_TRUE((*second)->admin_queue().wait_peer_close(5000)) << "an idle discovery controller never expired";
  EXPECT_GE(std::chrono::steady_clock::now() - silent_from, 400ms) << "closed before its KATO passed";
  std::unique_ptr<Controller> host;
  EXPECT_TRUE(test_support::eventually(
      [&] {
        if (auto r = Controller::connect(target())) host = std::move(*r);
        return host != nullptr;
      },
      3s, 50ms))
      << "no connection was freed for a host";
}

// Review "Hardening 2": max_connections was counted per transport, so TCP and RDMA together
// served twice the cap. One exec::ConnectionCap is the engine's, handed to both; here RDMA's
// share is slots taken on the cap directly (no RDMA device on these machines): TCP accepts only
// what is left, and a slot RDMA gives back is TCP's again.
TEST(SharedConnectionCap, TcpTakesOnlyWhatOtherTransportsLeave) {
  core::Target target{core::Limits{}};
  test_support::PassiveExecutor executor;
  stats::Registry registry;
  exec::ConnectionCap cap(3);
  ASSERT_TRUE(cap.try_acquire());  // two RDMA connections
  ASSERT_TRUE(cap.try_acquire());
  tcp::TcpTransport t(target, executor, tcp::QueueLimits{}, tcp::Budgets{}, registry, cap);
  std::string err;
  const uint16_t port = t.listen("127.0.0.1", "0", err);
  ASSERT_NE(port, 0) << err;
  t.start();
  const int first = tcp_connect(port);
  EXPECT_TRUE(test_support::eventually([&] { return t.stats().queues == 1; }, 5s));
  const int over = tcp_connect(port);
  EXPECT_TRUE(closed_by_peer(over, 5000ms)) << "TCP served beyond the engine's cap";
  EXPECT_EQ(t.stats().queues, 1u);
  EXPECT_EQ(cap.used(), 3u);
  cap.release();  // an RDMA connection goes
  const int again = tcp_connect(port);
  EXPECT_TRUE(test_support::eventually([&] { return t.stats().queues == 2; }, 5s));
  EXPECT_FALSE(closed_by_peer(again, 200ms));
  EXPECT_EQ(cap.used(), 3u);
  t.stop_accepting();
  for (int fd : {first, over, again}) close(fd);
}

TEST(SharedConnectionCap, ConcurrentTakersNeverExceedIt) {
  exec::ConnectionCap cap(1000);
  std::atomic<uint32_t> got{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&] {
      for (int k = 0; k < 5000; ++k)
        if (cap.try_acquire()) got.fetch_add(1);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(got.load(), 1000u);
  EXPECT_EQ(cap.used(), 1000u);
  for (uint32_t i = 0; i < got; ++i) cap.release();
  EXPECT_EQ(cap.used(), 0u);
}

// ---- Wire strings: the NQNs of a Connect ----------------------------------------------------

// A host NQN holding bytes that are not UTF-8, an ANSI escape and a newline, sent to the
// discovery subsystem (which any host may connect to), was logged raw (a forged log line, the
// operator's terminal cleared), stored in the connect event, and the next events.get ended the
// process. The spec's NQN is UTF-8 of at most 223 bytes, null-terminated in its 256-byte field:
// Connect refuses any other with Connect Invalid Parameters pointing at the field (IATTR 1:
// the data, IPO: its offset), and no log line carries the bytes.
TEST_F(HardeningTest, ConnectRefusesNqnsThatAreNotText) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  struct Lines {
    std::mutex mu;
    std::vector<std::string> lines;
  };
  // Shared with the sink: the engine logs the last disconnect after this test's body.
  auto log = std::make_shared<Lines>();
  _engine->set_log_sink([log](engine::LogLevel, std::string_view line) {
    std::lock_guard lk(log->mu);
    log->lines.emplace_back(line);
  });
  const std::string forged = std::string(host_nqn) + "\xff\x1b[2J\x1b[31m\nconnect: host \"nqn.trusted\" -> all";
  struct Case {
    std::string subnqn, hostnqn;
    uint32_t ipo;
    const char* what;
  };
  const Case cases[] = {
      {nvme::discovery_nqn, forged, nvme::connect_data::hostnqn, "not UTF-8, an ANSI escape and a newline"},
      {nvme::discovery_nqn, std::string(host_nqn) + "\xc3", nvme::connect_data::hostnqn, "a UTF-8 sequence cut short"},
      {nvme::discovery_nqn, std::string(nvme::connect_data::nqn_width, 'h'), nvme::connect_data::hostnqn,
       "no NUL in the 256-byte field"},
      {nvme::discovery_nqn, "nqn." + std::string(nvme::nqn_max_bytes - 3, 'h'), nvme::connect_data::hostnqn, "224 bytes"},
      {std::string(test_nqn) + "\x1b[31m", host_nqn, nvme::connect_data::subnqn, "a subsystem NQN with an escape"},
  };
  for (const auto& c : cases) {
    Target t = target();
    t.subnqn = c.subnqn;
    t.hostnqn = c.hostnqn;
    QueueParams p;
    p.qid = 0;
    auto q = TcpQueue::connect(t, p);
    ASSERT_FALSE(q) << c.what << ": the Connect was accepted";
    EXPECT_EQ(q.error().kind, Error::Kind::nvme) << c.what << ": " << q.error().to_string();
    EXPECT_EQ(q.error().status, nvme::status::connect_invalid_parameters) << c.what << ": " << q.error().to_string();
    EXPECT_EQ(q.error().cqe.dw0, (1u << 16) | c.ipo) << c.what << ": IATTR/IPO";
  }
  // The longest NQN the spec allows, in UTF-8 beyond ASCII, still connects.
  Target t = target();
  t.subnqn = nvme::discovery_nqn;
  t.hostnqn = "nqn.2014-08.io.nvmetune:h\xc3\xa9te-";  // é: two bytes of UTF-8
  t.hostnqn += std::string(nvme::nqn_max_bytes - t.hostnqn.size(), 'h');
  ASSERT_EQ(t.hostnqn.size(), nvme::nqn_max_bytes);
  QueueParams p;
  p.qid = 0;
  auto ok = TcpQueue::connect(t, p);
  ASSERT_TRUE(ok) << ok.error().to_string();

  for (const auto& e : _engine->events(0, 1000)) {
    EXPECT_EQ(e.detail_json.find("\xff"), std::string::npos) << e.kind << " " << e.detail_json;
    EXPECT_EQ(e.detail_json.find("\x1b"), std::string::npos) << e.kind << " " << e.detail_json;
  }
  std::lock_guard lk(log->mu);
  size_t refusals = 0;
  for (const auto& line : log->lines) {
    EXPECT_TRUE(std::none_of(line.begin(), line.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '\xff'; }))
        << "a log line carries a control character or a byte that is not UTF-8: " << line;
    refusals += line.find("connect refused") != std::string::npos;
  }
  EXPECT_EQ(refusals, std::size(cases)) << "each refusal is logged";
  // The refusal shows what the host sent, escaped, so an operator can tell which host it was.
  EXPECT_TRUE(std::any_of(log->lines.begin(), log->lines.end(), [](const std::string& l) {
    return l.find("connect refused: the host NQN \"" + std::string(host_nqn) + "\\xff\\x1b[2J\\x1b[31m\\x0aconnect: host") !=
           std::string::npos;
  })) << "no refusal quotes the forged NQN escaped";
}

// ---- Defect 7: queue and controller lifecycle details --------------------------------------

// An admin Connect must ask for the dynamic controller (CNTLID FFFFh).
TEST_F(HardeningTest, AdminConnectNeedsDynamicCntlid) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  QueueParams p;
  p.qid = 0;
  p.depth = 32;
  p.cntlid = 1;
  auto q = TcpQueue::connect(target(), p);
  EXPECT_FALSE(q) << "admin Connect with CNTLID 1 was accepted";
  p.cntlid = 0xffff;
  auto ok = TcpQueue::connect(target(), p);
  EXPECT_TRUE(ok) << ok.error().to_string();
}

// A CNTLID freed by a disconnect is not handed to the next controller at once.
TEST_F(HardeningTest, CntlidNotReusedAtOnce) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  uint16_t first = 0;
  {
    auto a = Controller::connect(target());
    ASSERT_RESULT(a);
    first = (*a)->cntlid();
  }
  const auto end = std::chrono::steady_clock::now() + 5s;  // the target notices the close
  while (std::chrono::steady_clock::now() < end && _engine->stats().disconnects < 1) std::this_thread::sleep_for(10ms);
  auto b = Controller::connect(target());
  ASSERT_RESULT(b);
  EXPECT_NE((*b)->cntlid(), first);
}

// With SQ flow control disabled at Connect, every CQE carries SQHD FFFFh.
TEST_F(HardeningTest, SqhdIsFfffWithoutFlowControl) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  auto t = target();
  t.disable_sqflow = true;
  auto ctrl = Controller::connect(t);
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(4);
  ASSERT_RESULT(q);
  std::vector<uint8_t> buf(4096, 1);
  Waiter w;
  ASSERT_TRUE((*q)->submit(Io{Op::write, 1, 0, 7, buf, false, w.callback()}));
  ASSERT_TRUE(w.wait(**q, 10s));
  ASSERT_TRUE(w.c.ok());
  EXPECT_EQ(w.c.cqe.sqhd, 0xffff);
}

// CC.EN with a page size (MPS) or command set (CSS) CAP does not offer: CSTS.CFS, never RDY.
TEST_F(HardeningTest, CcMpsAndCssChecked) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  for (uint32_t bad : {1u << 7 /* MPS 8 KiB */, 6u << 4 /* CSS 110b */}) {
    QueueParams p;
    p.qid = 0;
    p.depth = 32;
    auto q = TcpQueue::connect(target(), p);
    ASSERT_RESULT(q);
    const uint32_t cc = 1u | (6u << 16) | (4u << 20) | bad;  // EN, IOSQES 6, IOCQES 4
    auto set = sync_raw(**q, RawCommand{cmd::property_set(nvme::Property::cc, cc, false)}, 5000);
    ASSERT_RESULT(set);
    auto csts = sync_raw(**q, RawCommand{cmd::property_get(nvme::Property::csts, false)}, 5000);
    ASSERT_RESULT(csts);
    EXPECT_EQ(csts->cqe.dw0 & 3u, 2u) << "CC " << std::hex << cc << ": CSTS " << csts->cqe.dw0;
  }
}

// The host side of a queue the target closes: it fails once the connection ends.
bool closed_by_target(TcpQueue& q, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (q.state() == TcpQueue::State::live && std::chrono::steady_clock::now() < end) q.wait(50);
  return q.state() != TcpQueue::State::live;
}

bool csts_rdy_becomes(Controller& c, bool rdy, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    auto csts = c.property_get(nvme::Property::csts);
    if (csts && bool(*csts & 1u) == rdy) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

bool read_ok(TcpQueue& q) {
  std::vector<uint8_t> buf(4096);
  auto r = sync_io(q, Io{Op::read, 1, 0, 7, buf, false, {}}, 5000);
  return r && r->ok();
}

// The I/O queue qid of controller cntlid connects again and serves a read.
bool reconnects(uint16_t qid, uint16_t cntlid, const Target& t) {
  QueueParams p;
  p.qid = qid;
  p.depth = 8;
  p.cntlid = cntlid;
  auto q = TcpQueue::connect(t, p);
  return q && read_ok(**q);
}

// CC.EN 1 -> 0 resets the controller: its I/O queues are closed (as SPDK does), CSTS.RDY
// drops once they are gone, and after CC.EN 1 the same QIDs connect again. The I/O queue used
// to stay open, its QID taken, while RDY dropped at once.
TEST_F(HardeningTest, CcEnResetClosesIoQueuesThenRdyFollows) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(8);
  ASSERT_RESULT(q);
  ASSERT_TRUE(read_ok(**q));
  const uint16_t qid = (*q)->qid();
  auto cc = (*ctrl)->property_get(nvme::Property::cc);
  ASSERT_RESULT(cc);
  ASSERT_RESULT((*ctrl)->property_set(nvme::Property::cc, *cc & ~uint64_t{1}));
  EXPECT_TRUE(closed_by_target(**q, 5s)) << "the I/O queue outlived the reset";
  EXPECT_TRUE(csts_rdy_becomes(**ctrl, false, 5s));
  ASSERT_RESULT((*ctrl)->property_set(nvme::Property::cc, *cc));
  EXPECT_TRUE(csts_rdy_becomes(**ctrl, true, 5s));
  EXPECT_TRUE(reconnects(qid, (*ctrl)->cntlid(), target())) << "QID " << qid << " is not free";
}

// Fabrics Disconnect deletes the I/O queue it arrives on: answered, then the target closes the
// connection and the QID is free. On the admin queue it is Invalid Queue Type. It used to be
// answered with success and nothing else.
TEST_F(HardeningTest, FabricsDisconnectDeletesTheIoQueue) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(8);
  ASSERT_RESULT(q);
  const uint16_t qid = (*q)->qid();
  auto r = sync_raw(**q, RawCommand{cmd::disconnect()}, 5000);
  ASSERT_RESULT(r);
  EXPECT_TRUE(r->status.ok());
  EXPECT_TRUE(closed_by_target(**q, 5s)) << "the target kept the disconnected queue open";
  EXPECT_TRUE(reconnects(qid, (*ctrl)->cntlid(), target())) << "QID " << qid << " is not free";

  auto admin = sync_raw((*ctrl)->admin_queue(), RawCommand{cmd::disconnect()}, 5000);
  ASSERT_FALSE(admin) << "Disconnect on the admin queue succeeded";
  ASSERT_EQ(admin.error().kind, Error::Kind::nvme) << admin.error().to_string();
  EXPECT_EQ(admin.error().status.sct, nvme::Sct::command_specific);
  EXPECT_EQ(admin.error().status.sc, 0x85) << "Invalid Queue Type";
  auto ka = (*ctrl)->keep_alive();
  EXPECT_TRUE(ka) << ka.error().to_string();  // the admin queue goes on
}

// OAES lists only the events the engine raises (namespace attribute notices); MDTS is never
// 0 ("unlimited"): the smallest mdts_bytes is two pages.
TEST_F(HardeningTest, OaesAndMdtsTellTheTruth) {
  auto c = config();
  c.tcp.mdts_bytes = 4096;
  EXPECT_FALSE(control::validate(c).empty()) << "mdts_bytes 4096 would advertise MDTS 0 (no limit)";
  c.tcp.mdts_bytes = 8192;
  ASSERT_NO_FATAL_FAILURE(serve(c));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto id = (*ctrl)->identify(1);
  ASSERT_RESULT(id);
  EXPECT_EQ(nvme::get_le<uint32_t>(id->data(), 92), 1u << 8);  // OAES
  EXPECT_EQ((*id)[77], 1);  // MDTS: 2^1 pages of 4 KiB
}

// ---- Defect 9: who perf connects as ----------------------------------------------------------

// perf connected as the all-zero UUID. Without --hostnqn it now connects as the host NQN in the
// hostnqn file (nvme-cli's /etc/nvme/hostnqn; a temporary one here): the subsystem admits only
// that host, and the target's connect event names it.
TEST_F(HardeningTest, PerfConnectsAsThisMachinesHostNqn) {
  const std::string me = "nqn.2014-08.org.nvmexpress:uuid:5e1b7a44-93b2-4c3e-8f9f-1b2c3d4e5f60";
  char dir[] = "/tmp/nvmetune-perf-host-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::ofstream(std::string(dir) + "/hostnqn") << me << "\n";
  auto c = config();
  c.subsystems[0].allow_any_host = false;
  c.subsystems[0].hosts = {me};
  ASSERT_NO_FATAL_FAILURE(serve(c));

  lab::PerfOptions o;
  o.remote = "trtype:tcp traddr:127.0.0.1 trsvcid:" + std::to_string(_port) + " subnqn:" + test_nqn;
  o.rw = "read";
  o.size = "64k";
  o.qd = 1;
  o.identity = {std::string(dir) + "/hostnqn", std::string(dir) + "/hostid", std::string(dir) + "/machine-id"};
  initiator::LoadSpec spec;
  std::string source;
  ASSERT_FALSE(lab::resolve_perf_options(o, spec, &source));
  std::filesystem::remove_all(dir);
  EXPECT_EQ(source, std::string(dir) + "/hostnqn");
  EXPECT_EQ(spec.target.hostid[0], 0x5e);  // the NQN's UUID, as nvme-cli derives the host ID
  const auto r = initiator::run_load(spec);
  ASSERT_EQ(r.status, initiator::LoadResult::Status::ok) << r.error;
  EXPECT_TRUE(r.clean()) << r.failure;
  bool seen = false;
  for (const auto& e : _engine->events())
    if (e.kind == "connect") seen = seen || e.detail_json.find("\"hostnqn\":\"" + me + "\"") != std::string::npos;
  EXPECT_TRUE(seen) << "no connect event names " << me;

  o.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001";  // --hostnqn wins
  ASSERT_FALSE(lab::resolve_perf_options(o, spec, &source));
  EXPECT_EQ(spec.target.hostnqn, o.hostnqn);
  EXPECT_EQ(source, "--hostnqn");
  EXPECT_EQ(initiator::run_load(spec).status, initiator::LoadResult::Status::failed);  // not an allowed host
}

// The target logs the host NQN a Connect carried, quoted: an empty one is visible as such.
TEST_F(HardeningTest, EmptyHostNqnIsLoggedAsEmpty) {
  ASSERT_NO_FATAL_FAILURE(serve(config()));
  auto lines = std::make_shared<std::vector<std::string>>();
  auto mu = std::make_shared<std::mutex>();
  _engine->set_log_sink([lines, mu](engine::LogLevel, std::string_view msg) {
    std::lock_guard lock(*mu);
    lines->emplace_back(msg);
  });
  auto t = target();
  t.hostnqn.clear();
  auto ctrl = Controller::connect(t);
  ASSERT_RESULT(ctrl);
  std::lock_guard lock(*mu);
  EXPECT_TRUE(std::any_of(lines->begin(), lines->end(), [](const std::string& l) {
    return l.find("connect: host \"\" (empty host NQN) -> ") != std::string::npos;
  })) << ::testing::PrintToString(*lines);
}

// ---- Defect 5: removed namespaces are freed --------------------------------------------------

// Each cycle adds a 64 KiB RAM namespace 2, writes all of it (its pages become resident),
// and removes it, while a load keeps namespace 1 busy on other queues and another queue reads
// namespace 2 without pause (so removals race commands that hold it: under ASan a namespace
// freed too early is a use after free). Removed namespaces used to live as long as the
// subsystem: 10,000 cycles kept 628 MiB. They are now freed once no command holds them.
TEST_F(HardeningTest, NamespaceAddRemoveLoopKeepsRssFlat) {
  constexpr int cycles = 10'000;
  constexpr uint32_t ns_bytes = 64 * 1024;
  auto c = config();
  c.subsystems[0].namespaces[0].backend.kind = "null";  // the load's writes touch no memory
  ASSERT_NO_FATAL_FAILURE(serve(c));
  std::atomic<bool> stop{false};
  initiator::LoadSpec load;
  load.target = target();
  load.pattern = Pattern::randrw;
  load.qd = 8;
  load.time_s = 600;
  load.stop = &stop;
  initiator::LoadResult load_result;
  std::thread io([&] { load_result = initiator::run_load(load); });
  uint64_t racing_reads = 0, racing_other = 0;
  std::thread racer([&] {
    auto rc = Controller::connect(target());
    if (!rc) return void(++racing_other);
    auto rq = (*rc)->create_io_queue(2);
    if (!rq) return void(++racing_other);
    std::vector<uint8_t> rbuf(4096);
    while (!stop) {
      Waiter w;
      if (!(*rq)->submit(Io{Op::read, 2, 0, 7, rbuf, false, w.callback()}) || !w.wait(**rq, 10s)) return void(++racing_other);
      if (w.c.ok()) ++racing_reads;
      else if (w.c.status.sc != nvme::status::invalid_namespace.sc) ++racing_other;
    }
  });

  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(4);
  ASSERT_RESULT(q);
  std::vector<uint8_t> buf(ns_bytes, 0x5a);
  control::NamespaceConfig ns;
  ns.nsid = 2;
  ns.backend.kind = "ram";
  ns.backend.size_bytes = ns_bytes;
  const long before = rss_kib();
  for (int i = 0; i < cycles; ++i) {
    ASSERT_FALSE(_engine->add_namespace(test_nqn, ns)) << "cycle " << i;
    Waiter w;
    ASSERT_TRUE((*q)->submit(Io{Op::write, 2, 0, static_cast<uint16_t>(ns_bytes / block - 1), buf, false, w.callback()}));
    ASSERT_TRUE(w.wait(**q, 10s)) << "cycle " << i;
    ASSERT_TRUE(w.c.ok()) << "cycle " << i;
    ASSERT_FALSE(_engine->remove_namespace(test_nqn, 2)) << "cycle " << i;
  }
  const long after = rss_kib();
  stop = true;
  io.join();
  racer.join();
  EXPECT_EQ(racing_other, 0u) << "reads of namespace 2 must succeed or find no namespace";
  EXPECT_GT(racing_reads, 0u);
  EXPECT_EQ(load_result.status, initiator::LoadResult::Status::ok) << load_result.error;
  EXPECT_TRUE(load_result.failure.empty()) << load_result.failure;
  EXPECT_GT(load_result.read.h.count + load_result.write.h.count, 0u);
  std::printf("namespace add/write/remove x%d under I/O (%llu racing reads served): RSS %ld -> %ld KiB (%+ld KiB)\n",
              cycles, static_cast<unsigned long long>(racing_reads), before, after, after - before);
  // 10,000 x 64 KiB kept would be 640,000 KiB; generous slack for the allocator, first use of
  // the queues' buffers and the event log filling up to its capacity (about 2 MiB). Under the
  // sanitizers the check is the racing reads: their allocators quarantine what is freed.
#if !NVMT_SANITIZED_ALLOCATOR
  EXPECT_LT(after - before, 16 * 1024) << "removed namespaces are not freed";
#endif
}

}  // namespace
