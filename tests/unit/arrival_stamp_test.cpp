// The kernel's arrival stamps (engine/tcp/arrival_stamp.hpp) on a real TCP connection over
// loopback, read the two ways the receive path reads them: recvmsg's control message (epoll) and
// the multishot RECVMSG's buffer (io_uring, UringSocket::front_stamp). A stamp must fall between
// the send and the read, on the engine's monotonic clock once converted, and must be the
// segment's arrival, not the read: a segment left unread for 30 ms keeps its early stamp.
#include "engine/tcp/arrival_stamp.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "engine/backend/io_context.hpp"
#include "engine/exec/executor.hpp"
#include "engine/tcp/uring_socket.hpp"

namespace {

uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A connected TCP pair on 127.0.0.1: [0] the target's end (stamped), [1] the host's.
struct TcpPair {
  int fd[2] = {-1, -1};
  TcpPair() {
    const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      close(lfd);
      return;
    }
    fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd[1], reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) fd[0] = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    close(lfd);
  }
  ~TcpPair() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
};

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 5000) == 1;
}

uint64_t recv_stamp(int fd, char* buf, size_t len, ssize_t& got) {
  iovec iov{buf, len};
  alignas(cmsghdr) char control[tcp::arrival_cmsg_space];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  got = recvmsg(fd, &msg, MSG_DONTWAIT);
  return got > 0 ? tcp::arrival_stamp_of(msg) : 0;
}

// The kernel turns receive stamping on host-wide from a work item (net_enable_timestamp), so
// the first segments after the first socket asks may come unstamped: one byte at a time until
// one is stamped. The engine's queues live with that (such a command is timed from readiness).
bool wait_for_stamping(const TcpPair& p) {
  for (int i = 0; i < 200; ++i) {
    char b;
    ssize_t got = 0;
    if (send(p.fd[1], "w", 1, 0) != 1 || !readable(p.fd[0])) return false;
    if (recv_stamp(p.fd[0], &b, 1, got) != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(ArrivalStamp, RecvmsgCarriesTheSegmentsArrivalNotTheRead) {
  TcpPair p;
  ASSERT_GE(p.fd[0], 0);
  ASSERT_TRUE(tcp::enable_arrival_stamps(p.fd[0]));
  ASSERT_TRUE(wait_for_stamping(p));
  const uint64_t before = realtime_ns();
  ASSERT_EQ(send(p.fd[1], "capsule", 7, 0), 7);
  ASSERT_TRUE(readable(p.fd[0]));
  const uint64_t arrived_by = realtime_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the data waits in the socket
  char buf[64];
  ssize_t got = 0;
  const uint64_t stamp = recv_stamp(p.fd[0], buf, sizeof buf, got);
  ASSERT_EQ(got, 7);
  ASSERT_NE(stamp, 0u) << "no SCM_TIMESTAMPING control message";
  EXPECT_GE(stamp, before);
  EXPECT_LE(stamp, arrived_by);  // not the read, 30 ms later

  // On the engine's clock: the same moment, give or take the conversion's two clock reads.
  tcp::StampClock clock;
  const uint64_t mono_now = exec::monotonic_ns();
  clock.sync(mono_now);
  const uint64_t mono = clock.to_monotonic(stamp);
  const uint64_t age = realtime_ns() - stamp;
  EXPECT_NEAR(static_cast<double>(exec::monotonic_ns() - mono), static_cast<double>(age), 2e6);
  EXPECT_EQ(clock.to_monotonic(0), 0u);
}

TEST(ArrivalStamp, WithoutStampsThereIsNone) {
  TcpPair p;
  ASSERT_GE(p.fd[0], 0);
  ASSERT_EQ(send(p.fd[1], "x", 1, 0), 1);
  ASSERT_TRUE(readable(p.fd[0]));
  char buf[8];
  ssize_t got = 0;
  EXPECT_EQ(recv_stamp(p.fd[0], buf, sizeof buf, got), 0u);
  ASSERT_EQ(got, 1);
}

TEST(ArrivalStamp, TheIoUringReceiveCarriesItToo) {
  TcpPair p;
  ASSERT_GE(p.fd[0], 0);
  ASSERT_TRUE(tcp::enable_arrival_stamps(p.fd[0]));
  ASSERT_TRUE(wait_for_stamping(p));
  backend::IoContext ctx(64);
  std::string error;
  tcp::UringSocket sock(p.fd[0], ctx, error);
  ASSERT_TRUE(error.empty()) << error;
  ctx.flush_submissions();
  const uint64_t before = realtime_ns();
  ASSERT_EQ(send(p.fd[1], "capsule", 7, 0), 7);
  // Loopback delivers within the send; the armed receive may take the data at once (so the
  // socket never turns readable) or when the ring is next asked, 30 ms on.
  const uint64_t arrived_by = realtime_ns() + 5'000'000;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  std::string got;
  for (int spin = 0; spin < 1000 && got.size() < 7; ++spin) {
    ctx.flush_submissions();
    ctx.reap(64, [](backend::Io&) {});
    if (auto c = sock.front(); !c.empty()) {
      if (got.empty()) {
        const uint64_t stamp = sock.front_stamp();
        ASSERT_NE(stamp, 0u) << "no stamp in the RECVMSG buffer";
        EXPECT_GE(stamp, before);
        EXPECT_LE(stamp, arrived_by);  // the segment's arrival, not the reap 30 ms later
      }
      got.append(reinterpret_cast<const char*>(c.data()), c.size());
      sock.consume(c.size());
    }
  }
  EXPECT_EQ(got, "capsule");  // the payload, after RECVMSG's header and control message
}

}  // namespace
