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
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/control/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/initiator/commands.hpp"
#include "engine/initiator/initiator.hpp"
#include "support/engine_config.hpp"

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
  bool wait(IoQueue& q, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < end) q.wait(100);
    return done;
  }
};

class HardeningTest : public ::testing::Test {
 protected:
  control::Config config(uint64_t ns_bytes = 64 * MiB) {
    backend::BackendSpec b;
    b.kind = "ram";
    b.size_bytes = ns_bytes;
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
  auto q = IoQueue::connect(target(), p);
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

}  // namespace
