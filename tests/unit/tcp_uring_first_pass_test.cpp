// A TcpQueue on io_uring (engine/tcp/uring_socket.hpp) answers the data that waited when its
// receive was armed in the pass that armed it. A host sends its ICReq right after connect, so
// the multishot receive submitted by a new queue's first pass completes inside that pass's
// flush, and the reap after it is where the ICReq shows up. That pass used to count it as no
// progress and end with the ICReq parsed by nobody, saying `more`; the inline model took that
// for work left after its notification-context batch and handed the queue to its deferred
// worker, which under churn was busy retiring queues (fuzz_churn, issue 33: a new connection's
// ICResp came after the 200 ms handshake deadline had closed it).
//
// Real socketpairs, a real ring, real core/; the first test drives the queue pass by pass
// (test_support::PassiveExecutor), the second runs it on a real InlineExecutor whose only
// deferred worker is held busy.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/exec/inline/inline_executor.hpp"
#include "engine/tcp/queue.hpp"
#include "engine/tcp/uring_socket.hpp"
#include "tests/support/connected_queue_test.hpp"

namespace {

using namespace std::chrono_literals;

struct SocketPair {
  int queue_end = -1, host_end = -1;
  SocketPair() {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    queue_end = sv[0];  // the queue closes it
    host_end = sv[1];
  }
  ~SocketPair() { ::close(host_end); }
};

fuzz::Bytes icreq() {
  fuzz::Stream s;
  s.icreq();
  return s.bytes;
}

bool is_icresp(const std::vector<uint8_t>& out) {
  return out.size() == tcp::ic_hlen && out[0] == static_cast<uint8_t>(tcp::PduType::icresp);
}

// The host hung up: the queue closes within a few passes, as under an executor.
void close_host(SocketPair& sp, tcp::TcpQueue& q) {
  ::shutdown(sp.host_end, SHUT_WR);
  for (int pass = 0; pass < 64; ++pass)
    if (q.io_work() == exec::Progress::closed) return;
  ADD_FAILURE() << "the queue ignored the host's end of stream";
}

class TcpUringFirstPass : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = tcp::UringSocket::probe(); !why.empty()) GTEST_SKIP() << "io_uring receive: " << why;
  }

  core::Target target{test_support::harness_target_limits()};
  tcp::LiveBudgets budgets{tcp::Budgets{}};
  tcp::QueueLimits limits = test_support::harness_queue_limits();
};

// The notification context's batch (io_work_limited) of a new queue whose ICReq is already in
// the socket sends the ICResp.
TEST_F(TcpUringFirstPass, TheFirstPassAnswersAnIcReqThatWaitedForTheReceive) {
  test_support::PassiveExecutor executor;
  SocketPair sp;
  test_support::write_all(sp.host_end, icreq());
  tcp::TcpQueue q(sp.queue_end, "uring-first-pass", target, executor, limits, budgets, tcp::IoMechanism::io_uring);
  ASSERT_EQ(q.mechanism(), tcp::IoMechanism::io_uring);

  const auto p = q.io_work_limited(8);
  EXPECT_TRUE(is_icresp(test_support::drain_all(sp.host_end))) << "the pass that received the ICReq left it unparsed";
  EXPECT_EQ(p, exec::Progress::idle) << "nothing is left for another pass";
  close_host(sp, q);
}

// A task that holds the inline executor's only deferred worker until released, as a worker
// retiring queues under churn is held (the transport's lock, a ring's teardown).
class BusyTask final : public exec::Task {
 public:
  BusyTask() {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    _fd = sv[0];
    _peer = sv[1];
  }
  ~BusyTask() override {
    ::close(_fd);
    ::close(_peer);
  }
  // The notification thread's batch leaves work: the rest goes to the deferred worker.
  exec::Progress io_work_limited(unsigned) override { return _held ? exec::Progress::idle : exec::Progress::more; }
  exec::Progress io_work() override {
    if (!_held.exchange(true)) {
      on_worker = true;
      while (!released) std::this_thread::sleep_for(1ms);
    }
    return exec::Progress::idle;
  }
  std::array<int, 2> fds() const override { return {_fd, -1}; }
  void retire() override {}

  std::atomic<bool> on_worker{false}, released{false};

 private:
  std::atomic<bool> _held{false};
  int _fd = -1, _peer = -1;
};

// End to end on the inline model: while the deferred worker is busy, a new io_uring queue still
// gets its ICResp, from the notification thread's first batch.
TEST_F(TcpUringFirstPass, InlineAnswersANewQueueWhileItsWorkerIsBusy) {
  exec::InlineExecutor ex({.threads = 1, .cpus = {}, .inline_budget = 8});
  BusyTask busy;
  ex.attach(busy);
  for (int i = 0; i < 10000 && !busy.on_worker; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(busy.on_worker) << "the busy task never reached the deferred worker";

  SocketPair sp;
  test_support::write_all(sp.host_end, icreq());
  tcp::TcpQueue q(sp.queue_end, "uring-inline", target, ex, limits, budgets, tcp::IoMechanism::io_uring);
  ASSERT_EQ(q.mechanism(), tcp::IoMechanism::io_uring);
  ex.attach(q);
  pollfd pfd{sp.host_end, POLLIN, 0};
  const bool answered = ::poll(&pfd, 1, 2000) == 1;
  busy.released = true;
  ex.stop();  // retires both tasks; the queue is still ours to destroy
  ASSERT_TRUE(answered) << "no ICResp in 2 s: the first batch left the ICReq to the busy worker";
  EXPECT_TRUE(is_icresp(test_support::drain_all(sp.host_end)));
}

}  // namespace
