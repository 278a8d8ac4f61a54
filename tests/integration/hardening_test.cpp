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

}  // namespace
