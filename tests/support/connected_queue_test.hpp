#pragma once
// A gtest fixture with one connected NVMe/TCP I/O queue (and its admin queue) on socketpairs,
// real core/ and a 1 MiB RAM namespace (nsid 1, 4096-byte blocks), driven pass by pass: the
// test writes host PDUs to io_host, calls io->io_work() and reads what the controller sent.
// Only the executor is a do-nothing double (test_support::PassiveExecutor): a real executor
// would run the queue on its own threads, and these tests must see one pass at a time.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.hpp"
#include "engine/core/namespace.hpp"
#include "engine/core/subsystem.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/executor.hpp"
#include "engine/tcp/queue.hpp"
#include "tests/fuzz/pdu_builder.hpp"
#include "tests/support/tcp_queue_harness.hpp"

namespace test_support {

// Everything the controller sent so far.
inline std::vector<uint8_t> drain_all(int fd) {
  std::vector<uint8_t> out;
  drain(fd, [&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); });
  return out;
}

inline void write_all(int fd, const fuzz::Bytes& b) {
  size_t off = 0;
  while (off < b.size()) {
    const ssize_t n = ::write(fd, b.data() + off, b.size() - off);
    ASSERT_GT(n, 0) << "the socketpair is full";
    off += static_cast<size_t>(n);
  }
}

class ConnectedQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    using namespace fuzz;
    auto subsys = std::make_shared<core::Subsystem>(std::string(subnqn), "QUEUE001", "queue test", true,
                                                     std::vector<std::string>{}, false);
    backend::BackendSpec spec;
    spec.kind = "ram";
    spec.size_bytes = 1u << 20;
    std::string err;
    auto be = backend::open_backend(spec, err);
    ASSERT_TRUE(be) << err;
    ASSERT_TRUE(subsys->add_namespace(
        std::make_unique<core::Namespace>(1, std::move(be), 4096, core::derive_uuid(subsys->nqn(), 1))));
    target.add_subsystem(subsys);

    // The admin queue: ICReq, Connect, CC.EN = 1. Its Connect response carries the cntlid.
    admin = open_queue(admin_host);
    Stream s;
    s.icreq();
    s.capsule(connect(1, 0, queue_depth - 1, Xfer::in_capsule), connect_data(subnqn, hostnqn));
    s.capsule(property_set(2, nvme::Property::cc, cc_enable));
    ASSERT_TRUE(admin->feed(s.bytes));
    const auto out = drain_all(admin_host);
    ASSERT_GE(out.size(), tcp::ic_hlen + tcp::capsule_resp_hlen);
    const uint16_t cntlid = nvme::get_le<uint16_t>(out.data(), tcp::ic_hlen + tcp::ch_len);

    io = open_queue(io_host);
    Stream c;
    c.icreq();
    c.capsule(connect(1, 1, queue_depth - 1, Xfer::in_capsule), connect_data(subnqn, hostnqn, cntlid));
    ASSERT_TRUE(io->feed(c.bytes));
    drain_all(io_host);
    ASSERT_TRUE(io->sq().connected()) << "the I/O queue did not connect";
  }

  void TearDown() override {
    for (int fd : {admin_host, io_host})
      if (fd >= 0) ::close(fd);
    // The host hung up: each queue closes within a few passes, as under an executor.
    for (auto* q : {io.get(), admin.get()}) {
      for (int pass = 0; q && pass < 64; ++pass)
        if (q->io_work() == exec::Progress::closed) break;
    }
  }

  std::unique_ptr<tcp::TcpQueue> open_queue(int& host_end) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    host_end = sv[1];
    return std::make_unique<tcp::TcpQueue>(sv[0], "queue-test", target, executor, limits, budgets);
  }

  core::Target target{harness_target_limits()};
  PassiveExecutor executor;
  tcp::LiveBudgets budgets{tcp::Budgets{}};
  tcp::QueueLimits limits = harness_queue_limits();
  int admin_host = -1, io_host = -1;
  std::unique_ptr<tcp::TcpQueue> admin, io;
};

}  // namespace test_support
