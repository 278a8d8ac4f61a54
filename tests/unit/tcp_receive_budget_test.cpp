// The receive budget of a TcpQueue pass counts PDUs: a pass limited to N PDUs takes exactly N
// capsules off the socket, and leaves the rest for the next pass.
//
// The queue runs on a real socketpair with real core/ and a real RAM namespace; only the
// executor is a do-nothing double (test_support::PassiveExecutor), because the test must call
// io_work_limited() itself to see one pass at a time (a real executor would run the queue on
// its own threads).
#include <gtest/gtest.h>

#include "tests/support/connected_queue_test.hpp"

namespace {

using namespace fuzz;  // the host-side stream builder and its names

using TcpReceiveBudget = test_support::ConnectedQueueTest;

TEST_F(TcpReceiveBudget, ALimitedPassTakesExactlyItsPdus) {
  Stream s;
  constexpr uint16_t reads = 20;
  for (uint16_t cid = 0; cid < reads; ++cid)
    s.capsule(rw(cid, nvme::NvmOpcode::read, 1, cid, 1, 4096, Xfer::transport));
  test_support::write_all(io_host, s.bytes);

  const uint64_t before = io->stats().pdus_rx.get();
  io->io_work_limited(5);
  EXPECT_EQ(io->stats().pdus_rx.get() - before, 5u) << "a pass limited to 5 PDUs";
  io->io_work_limited(7);
  EXPECT_EQ(io->stats().pdus_rx.get() - before, 12u) << "then one limited to 7";
  // The rest, whatever the receive budget per round: an unlimited pass runs rounds until idle.
  budgets.set(tcp::Budgets{.recv_pdus = 3});
  io->io_work();
  EXPECT_EQ(io->stats().pdus_rx.get() - before, uint64_t{reads});

  // Every read was answered: a C2HData (4 KiB) and a CapsuleResp each (SQ flow control is on).
  const auto out = test_support::drain_all(io_host);
  EXPECT_EQ(out.size(), reads * (tcp::data_hlen + 4096 + tcp::capsule_resp_hlen));
}

}  // namespace
