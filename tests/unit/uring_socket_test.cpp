// The io_uring receive of a TCP queue (engine/tcp/uring_socket.hpp) on a real socket pair and a
// real owned ring of both kinds (completion work deferred until asked, as poll workers have it;
// run as the owner returns from a syscall, as bound workers have it): what arrives is delivered
// in order, and a completion no socket announces (a timer, as delayed completions use) wakes a
// watcher asleep on the ring's eventfd.
#include "engine/tcp/uring_socket.hpp"

#include <gtest/gtest.h>
#include <liburing.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.hpp"
#include "engine/backend/io_context.hpp"

namespace {

constexpr unsigned ring_entries = 64;
constexpr int poll_timeout_ms = 5000;

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

class UringSocketTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ctx.set_owned(true, GetParam());  // as a poll (deferred) or bound worker's queue has it
    sock = std::make_unique<tcp::UringSocket>(sv[0], ctx, error);
    ASSERT_TRUE(error.empty()) << error;
    if (!ctx.owned()) GTEST_SKIP() << "kernel without DEFER_TASKRUN (before 6.1): shared ring";
    ctx.flush_submissions();  // arms the receive; this thread now owns the ring
    const unsigned flags = ctx.ring()->flags;
    ASSERT_EQ((flags & IORING_SETUP_DEFER_TASKRUN) != 0, GetParam());
    ASSERT_EQ((flags & IORING_SETUP_COOP_TASKRUN) != 0, !GetParam());
  }
  void TearDown() override {
    sock.reset();
    close(sv[0]);
    close(sv[1]);
  }

  // Receives until want bytes came, as a queue woken by its socket would: the reap runs the
  // receive's deferred completion work.
  std::vector<uint8_t> receive(size_t want) {
    std::vector<uint8_t> got;
    for (int spin = 0; spin < 1000 && got.size() < want; ++spin) {
      if (sock->front().empty() && !ctx.work_waiting()) readable(sv[0], poll_timeout_ms);
      ctx.flush_submissions();
      ctx.reap(ring_entries, [](backend::Io&) {});
      for (auto chunk = sock->front(); !chunk.empty(); chunk = sock->front()) {
        got.insert(got.end(), chunk.begin(), chunk.end());
        sock->consume(chunk.size());
      }
    }
    return got;
  }

  int sv[2] = {-1, -1};
  backend::IoContext ctx{ring_entries};
  std::string error;
  std::unique_ptr<tcp::UringSocket> sock;
};

// More than the provided buffers hold at once (16 x 16 KiB), so the receive stops for lack of
// buffers and resumes as they are consumed.
TEST_P(UringSocketTest, DeliversEveryByteInOrder) {
  std::vector<uint8_t> sent(600 * 1024);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  std::vector<uint8_t> got;
  for (size_t off = 0; off < sent.size();) {
    const ssize_t n = send(sv[1], sent.data() + off, std::min<size_t>(64 * 1024, sent.size() - off), MSG_DONTWAIT);
    if (n > 0) off += static_cast<size_t>(n);
    auto part = receive(1);
    got.insert(got.end(), part.begin(), part.end());
  }
  auto rest = receive(sent.size() - got.size());
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, sent);
}

// A block I/O (here a timer, as delayed completions use) on the same ring has no socket to
// announce it: the eventfd must wake the queue's watcher, or the completion waits for the next
// command to arrive. On a cooperative ring the kernel wakes the sleeping owner to run the timer's
// completion work, which posts the CQE and signals the eventfd.
TEST_P(UringSocketTest, BlockIoOnTheRingSignalsTheEventfd) {
  backend::Io io;
  io.result = 0;
  ASSERT_TRUE(ctx.complete_after(io, 1'000'000));
  ctx.flush_submissions();
  ASSERT_TRUE(readable(ctx.notify_fd(), poll_timeout_ms)) << "a watcher asleep on the eventfd never woke";
  unsigned done = 0;
  for (int spin = 0; spin < 100 && done == 0; ++spin) done = ctx.reap(ring_entries, [](backend::Io&) {});
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(ctx.inflight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(RingKinds, UringSocketTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Deferred" : "Cooperative";
                         });

}  // namespace
