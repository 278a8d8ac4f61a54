// Lifecycles (engine/core/lifecycle.hpp): every queue, command and controller state changes only
// through one set_state that checks the transition against a table. These tests pin each table
// edge by edge (a transition accepted that should not be, or a state that can be skipped, fails
// here), then walk real queues and a real controller through their states and check that the
// engine itself never attempts an illegal transition (lifecycle::illegal_transitions()).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <utility>

#include "engine/core/controller.hpp"
#include "engine/rdma/queue.hpp"
#include "engine/tcp/queue.hpp"
#include "tests/support/connected_queue_test.hpp"

namespace {

template <typename State, size_t N>
void expect_exactly(const lifecycle::Transitions<State, N>& t, const std::set<std::pair<State, State>>& edges) {
  for (size_t f = 0; f < N; ++f)
    for (size_t to = 0; to < N; ++to) {
      const auto a = static_cast<State>(f), b = static_cast<State>(to);
      EXPECT_EQ(t.allows(a, b), edges.count({a, b}) == 1) << "transition " << f << " -> " << to;
    }
  // Out of range: never.
  EXPECT_FALSE(t.allows(static_cast<State>(N), static_cast<State>(0)));
}

uint64_t illegal() { return lifecycle::illegal_transitions().load(); }

TEST(Lifecycle, TcpQueueTransitions) {
  using S = tcp::QueueState;
  expect_exactly(tcp::queue_transitions, {{S::awaiting_icreq, S::awaiting_connect},
                                          {S::awaiting_icreq, S::closing},
                                          {S::awaiting_connect, S::live},
                                          {S::awaiting_connect, S::closing},
                                          {S::live, S::closing},
                                          {S::closing, S::closed}});
}

TEST(Lifecycle, TcpCommandTransitions) {
  using S = tcp::CmdState;
  expect_exactly(tcp::cmd_transitions, {{S::free, S::capsule},
                                        {S::capsule, S::recv_icd},
                                        {S::capsule, S::executing},
                                        {S::capsule, S::free},
                                        {S::recv_icd, S::executing},
                                        {S::executing, S::wait_h2c},
                                        {S::executing, S::sending},
                                        {S::wait_h2c, S::executing},
                                        {S::sending, S::free}});
}

TEST(Lifecycle, RdmaQueueTransitions) {
  using S = rdma::QueueState;
  expect_exactly(rdma::queue_transitions, {{S::awaiting_connect, S::live},
                                           {S::awaiting_connect, S::closing},
                                           {S::live, S::closing},
                                           {S::closing, S::closed}});
}

TEST(Lifecycle, RdmaCommandTransitions) {
  using S = rdma::CmdState;
  expect_exactly(rdma::cmd_transitions, {{S::free, S::buffer_wait},
                                         {S::free, S::executing},
                                         {S::buffer_wait, S::executing},
                                         {S::executing, S::reading},
                                         {S::executing, S::sending},
                                         {S::reading, S::executing},
                                         {S::sending, S::free}});
}

TEST(Lifecycle, ControllerTransitions) {
  using S = core::CtrlState;
  std::set<std::pair<S, S>> edges;
  for (S from : {S::disabled, S::ready, S::fatal, S::resetting, S::shutdown_complete})
    edges.insert({from, S::dead});
  for (S to : {S::ready, S::fatal, S::shutdown_complete}) edges.insert({S::disabled, to});
  for (S from : {S::ready, S::fatal})
    for (S to : {S::disabled, S::resetting, S::shutdown_complete}) edges.insert({from, to});
  for (S to : {S::disabled, S::ready, S::fatal}) edges.insert({S::resetting, to});
  for (S to : {S::disabled, S::resetting, S::ready, S::fatal}) edges.insert({S::shutdown_complete, to});
  expect_exactly(core::ctrl_transitions, edges);
}

// A check that refuses counts (release builds; a debug build stops at the assert instead).
#ifdef NDEBUG
TEST(Lifecycle, AnIllegalTransitionIsCountedAndRefused) {
  const uint64_t before = illegal();
  EXPECT_FALSE(lifecycle::check(tcp::queue_transitions, lifecycle::Kind::tcp_queue, nullptr,
                                tcp::QueueState::awaiting_icreq, tcp::QueueState::live));
  EXPECT_EQ(illegal(), before + 1);
  EXPECT_TRUE(lifecycle::check(tcp::queue_transitions, lifecycle::Kind::tcp_queue, nullptr,
                               tcp::QueueState::awaiting_icreq, tcp::QueueState::awaiting_connect));
  EXPECT_EQ(illegal(), before + 1);
  lifecycle::illegal_transitions().store(before);
}
#endif

// --- TCP queues, driven by hand on socketpairs -----------------------------------------------

using namespace fuzz;

class TcpQueueLifecycle : public test_support::ConnectedQueueTest {
 protected:
  void SetUp() override {
    illegal_before = illegal();
    ConnectedQueueTest::SetUp();
  }
  void TearDown() override {
    ConnectedQueueTest::TearDown();
    for (auto* q : {io.get(), admin.get()}) EXPECT_EQ(q->state(), tcp::QueueState::closed);
    EXPECT_EQ(illegal(), illegal_before) << "the engine attempted an illegal transition";
  }
  // Passes until the queue goes idle or closes; the last result.
  static exec::Progress run(tcp::TcpQueue& q) {
    exec::Progress p = exec::Progress::more;
    for (int i = 0; i < 64 && p == exec::Progress::more; ++i) p = q.io_work();
    return p;
  }
  uint64_t illegal_before = 0;
};

TEST_F(TcpQueueLifecycle, HandshakeStepsThroughEveryStateInOrder) {
  int host = -1;
  auto q = open_queue(host);
  EXPECT_EQ(q->state(), tcp::QueueState::awaiting_icreq);
  EXPECT_FALSE(q->connected());
  Stream ic;
  ic.icreq();
  ASSERT_TRUE(q->feed(ic.bytes));
  EXPECT_EQ(q->state(), tcp::QueueState::awaiting_connect);
  EXPECT_FALSE(q->connected());
  Stream c;
  c.capsule(connect(1, 2, queue_depth - 1, Xfer::in_capsule),
            connect_data(subnqn, hostnqn, admin->sq().controller()->cntlid()));
  ASSERT_TRUE(q->feed(c.bytes));
  EXPECT_TRUE(q->sq().connected());
  // Live once a pass has seen the Connect through (and named the queue in the stats).
  EXPECT_NE(run(*q), exec::Progress::closed);
  EXPECT_EQ(q->state(), tcp::QueueState::live);
  EXPECT_TRUE(q->connected());
  EXPECT_EQ(q->stats().identity().qid, 2);
  // A handshake deadline that fires now is too late to matter.
  q->expire_handshake();
  EXPECT_NE(run(*q), exec::Progress::closed);
  EXPECT_EQ(q->state(), tcp::QueueState::live);
  // The host hangs up: closing, then closed by the pass that says so.
  ::close(host);
  EXPECT_EQ(run(*q), exec::Progress::closed);
  EXPECT_EQ(q->state(), tcp::QueueState::closed);
  EXPECT_TRUE(q->connected()) << "a queue that connected never counts as a handshake timeout";
}

TEST_F(TcpQueueLifecycle, ACapsuleBeforeICReqCloses) {
  int host = -1;
  auto q = open_queue(host);
  Stream s;
  s.capsule(connect(1, 2, queue_depth - 1, Xfer::in_capsule), connect_data(subnqn, hostnqn));
  EXPECT_FALSE(q->feed(s.bytes));
  EXPECT_EQ(q->state(), tcp::QueueState::closing);
  EXPECT_FALSE(q->sq().connected());
  EXPECT_EQ(run(*q), exec::Progress::closed);
  EXPECT_EQ(q->state(), tcp::QueueState::closed);
  ::close(host);
}

TEST_F(TcpQueueLifecycle, ASecondICReqCloses) {
  int host = -1;
  auto q = open_queue(host);
  Stream s;
  s.icreq();
  s.icreq();  // the IC rule follows the queue's state: after the first, no more
  EXPECT_FALSE(q->feed(s.bytes));
  EXPECT_EQ(q->state(), tcp::QueueState::closing);
  EXPECT_EQ(q->counters().term_sent.get(), 1u);
  EXPECT_EQ(run(*q), exec::Progress::closed);
  ::close(host);
}

TEST_F(TcpQueueLifecycle, AnExpiredHandshakeClosesBeforeConnect) {
  int host = -1;
  auto q = open_queue(host);
  Stream ic;
  ic.icreq();
  ASSERT_TRUE(q->feed(ic.bytes));
  q->expire_handshake();
  EXPECT_EQ(run(*q), exec::Progress::closed);
  EXPECT_EQ(q->state(), tcp::QueueState::closed);
  ::close(host);
}

// Commands through every state: a write whose data follows an R2T (free, capsule, executing,
// wait_h2c, executing, sending, free), one with in-capsule data (recv_icd) and a read.
TEST_F(TcpQueueLifecycle, CommandsWalkTheirStates) {
  std::vector<uint8_t> block(4096, 0x5a);
  Stream w;
  w.capsule(rw(1, nvme::NvmOpcode::write, 1, 0, 1, 4096, Xfer::transport));
  test_support::write_all(io_host, w.bytes);
  run(*io);
  const auto r2t = test_support::drain_all(io_host);
  ASSERT_GE(r2t.size(), tcp::data_hlen);
  const tcp::R2t r = tcp::parse_r2t(r2t);
  EXPECT_EQ(r.cccid, 1);
  // H2CData for a transfer tag nobody waits on: the queue closes (tested below); the right one
  // completes the write.
  Stream d;
  d.h2c_data(1, r.ttag, 0, block, true);
  d.capsule(rw(2, nvme::NvmOpcode::write, 1, 1, 1, 4096, Xfer::in_capsule), block);
  d.capsule(rw(3, nvme::NvmOpcode::read, 1, 0, 1, 4096, Xfer::transport));
  test_support::write_all(io_host, d.bytes);
  run(*io);
  const auto out = test_support::drain_all(io_host);
  EXPECT_EQ(out.size(), 3 * tcp::capsule_resp_hlen + tcp::data_hlen + 4096);
  EXPECT_EQ(io->state(), tcp::QueueState::live);
}

TEST_F(TcpQueueLifecycle, H2CDataForACommandNotWaitingCloses) {
  std::vector<uint8_t> block(4096, 0x5a);
  Stream d;
  d.h2c_data(7, 3, 0, block, true);  // slot 3 is free
  test_support::write_all(io_host, d.bytes);
  EXPECT_EQ(run(*io), exec::Progress::closed);
  EXPECT_EQ(io->state(), tcp::QueueState::closed);
  EXPECT_EQ(io->counters().term_sent.get(), 1u);
}

// --- The controller: CC.EN, CSTS.RDY, shutdown, teardown ---------------------------------------

class ControllerLifecycle : public TcpQueueLifecycle {
 protected:
  core::Controller& ctrl() { return *admin->sq().controller(); }
  void set_cc(uint16_t cid, uint32_t cc) {
    Stream s;
    s.capsule(property_set(cid, nvme::Property::cc, cc));
    ASSERT_TRUE(admin->feed(s.bytes));
    test_support::drain_all(admin_host);
  }
};

TEST_F(ControllerLifecycle, EnableResetAndShutdown) {
  EXPECT_EQ(ctrl().state(), core::CtrlState::ready);
  EXPECT_TRUE(ctrl().enabled());
  // CC.EN 1 -> 0 with an I/O queue open: resetting until it has gone, RDY still 1 meanwhile.
  set_cc(10, 0);
  EXPECT_EQ(ctrl().state(), core::CtrlState::resetting);
  EXPECT_TRUE(ctrl().csts() & 1);
  EXPECT_EQ(run(*io), exec::Progress::closed);
  EXPECT_EQ(ctrl().state(), core::CtrlState::disabled);
  EXPECT_FALSE(ctrl().csts() & 1);
  // A CC the controller cannot honour (16-byte SQEs): fatal (CFS), not ready.
  set_cc(11, 1u | (4u << 16) | (4u << 20));
  EXPECT_EQ(ctrl().state(), core::CtrlState::fatal);
  EXPECT_TRUE(ctrl().csts() & 2);
  set_cc(12, 0);
  EXPECT_EQ(ctrl().state(), core::CtrlState::disabled);
  set_cc(13, cc_enable);
  EXPECT_EQ(ctrl().state(), core::CtrlState::ready);
  // Shutdown (SHN normal): SHST complete at once; written again, no transition.
  set_cc(14, cc_enable | (1u << 14));
  EXPECT_EQ(ctrl().state(), core::CtrlState::shutdown_complete);
  EXPECT_EQ((ctrl().csts() >> 2) & 3, 2u);
  set_cc(15, cc_enable | (1u << 14));
  EXPECT_EQ(ctrl().state(), core::CtrlState::shutdown_complete);
  set_cc(16, 0);
  EXPECT_EQ(ctrl().state(), core::CtrlState::disabled);
}

TEST_F(ControllerLifecycle, DeadIsFinal) {
  auto keep = admin->sq().controller();
  keep->fail("test");
  EXPECT_EQ(keep->state(), core::CtrlState::dead);
  EXPECT_TRUE(keep->dead());
  // Both queues see it at their next pass and close.
  EXPECT_EQ(run(*io), exec::Progress::closed);
  EXPECT_EQ(keep->state(), core::CtrlState::dead);
  keep->write_cc(0);  // a CC write racing the teardown reaches the register, not the state
  keep->write_cc(cc_enable);
  EXPECT_EQ(keep->state(), core::CtrlState::dead);
  keep->fail("again");
  EXPECT_EQ(keep->state(), core::CtrlState::dead);
}

}  // namespace
