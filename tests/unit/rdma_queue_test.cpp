// rdma::RdmaQueue's own code on a fake verbs provider (tests/support/fake_verbs.hpp): these
// build machines have no RDMA in the kernel (CONFIG_INFINIBAND unset: no rdma_rxe, so no
// soft-RoCE either), so real verbs cannot run here; the interop guest runs them. What the fake
// stands for is the provider: posted receives, the CQ, and the host's memory behind RDMA READ
// and WRITE. The queue, the device's data pool and shared receive queue, core/ and the
// backends are the engine's own. Found by the review of issue "Hardening 2":
//  - a capsule refused (too short, beyond the queue depth) kept its SRQ receive buffer, so the
//    device's shared receive queue drained; and the CQ had room for a queue's own receives but
//    not for what the SRQ can deliver to one QP;
//  - a queue registered all its receive memory at CM accept, before Connect said who the host is;
//  - data buffers are shared by the device's queues and not cleared, so a null read sent back
//    another host's data.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.hpp"
#include "engine/core/namespace.hpp"
#include "engine/core/subsystem.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/connect_deadlines.hpp"
#include "engine/nvme/le.hpp"
#include "engine/rdma/cm_private_data.hpp"
#include "engine/rdma/queue.hpp"
#include "engine/rdma/sgl.hpp"
#include "tests/fuzz/pdu_builder.hpp"
#include "tests/support/fake_verbs.hpp"
#include "tests/support/tcp_queue_harness.hpp"

namespace {

using fake_verbs::world;
using rdma::RdmaQueue;

constexpr const char* subnqn = "nqn.2026-12.io.nvmetune:rdma-queue";
constexpr uint32_t icd = 8192;
constexpr uint8_t nvm_write = 0x01, nvm_read = 0x02, keep_alive = 0x18;

// A capsule: the SQE and its in-capsule data.
std::vector<uint8_t> capsule(const nvme::Sqe& sqe, std::span<const uint8_t> data = {}) {
  std::vector<uint8_t> c(sqe.b.begin(), sqe.b.end());
  c.insert(c.end(), data.begin(), data.end());
  return c;
}

// s without data: a keyed descriptor of length 0.
nvme::Sqe no_data(nvme::Sqe s) {
  rdma::set_keyed_sgl(s, 0, 0, 0, false);
  return s;
}
nvme::Sqe no_data(uint8_t opcode, uint16_t cid) { return no_data(fuzz::sqe(opcode, cid)); }

// Status field of a response (SCT and SC, without the phase bit); 0 = success.
uint16_t status_of(const std::array<uint8_t, 16>& cqe) { return nvme::get_le<uint16_t>(cqe.data(), 14) >> 1; }

class RdmaQueueTest : public ::testing::Test {
 protected:
  struct Queue {
    std::unique_ptr<rdma_cm_id> id = std::make_unique<rdma_cm_id>();
    std::unique_ptr<RdmaQueue> q;
    ibv_qp* qp() const { return id->qp; }
    fake_verbs::Qp& fake() const { return fake_verbs::qp_of(id->qp); }
    const std::array<uint8_t, 16>& last_response() const { return fake().responses.back(); }
  };

  void SetUp() override {
    fake_verbs::reset();
    auto sub = std::make_shared<core::Subsystem>(subnqn, "RDMAQ001", "rdma queue test", true,
                                                 std::vector<std::string>{}, false);
    backend::BackendSpec spec;
    spec.kind = "null";
    spec.size_bytes = 1u << 20;
    std::string err;
    auto be = backend::open_backend(spec, err);
    ASSERT_TRUE(be) << err;
    ASSERT_TRUE(sub->add_namespace(
        std::make_unique<core::Namespace>(1, std::move(be), 4096, core::derive_uuid(sub->nqn(), 1))));
    target.add_subsystem(sub);
    target.set_event_hook([this](std::string_view kind, std::string) { events.emplace_back(kind); });
  }

  std::shared_ptr<rdma::SharedDevice> open_device(bool srq, uint32_t srq_size = 64) {
    rdma::RdmaOptions o;
    o.use_srq = srq;
    o.srq_size = srq_size;
    std::shared_ptr<rdma::SharedDevice> d;
    EXPECT_EQ(rdma::SharedDevice::open(&world().context, o, limits.mdts_bytes, nvme::sqe_size + icd, d), "");
    return d;
  }

  // A queue as the CM thread makes it for a request of qid with depth entries.
  Queue open_queue(const std::shared_ptr<rdma::SharedDevice>& dev, uint16_t qid, uint16_t depth) {
    Queue q;
    q.id->verbs = &world().context;
    q.q = std::make_unique<RdmaQueue>(q.id.get(), "fake host", target, executor, limits, budgets, dev);
    const auto req = rdma::parse_cm_request(rdma::encode_cm_request({0, qid, depth, uint16_t(depth - 1), 0}),
                                            {4, 128});
    EXPECT_EQ(req.status, rdma::CmStatus::ok);
    EXPECT_EQ(q.q->setup(req), "");
    return q;
  }

  // io_work passes until the queue has nothing left to do; the last pass's result.
  static exec::Progress run(Queue& q) {
    exec::Progress p = exec::Progress::more;
    for (int i = 0; i < 64 && p == exec::Progress::more; ++i) p = q.q->io_work();
    return p;
  }

  // Sends the capsule and runs the queue; false when no receive was posted for it.
  static bool send(Queue& q, std::span<const uint8_t> c) {
    if (!fake_verbs::host_send(q.qp(), c)) return false;
    run(q);
    return true;
  }

  // Connect with in-capsule data; the response's status (cntlid in *cntlid).
  uint16_t connect(Queue& q, uint16_t qid, uint16_t cntlid, const char* host, const char* nqn = subnqn,
                   uint16_t* got_cntlid = nullptr) {
    const auto data = fuzz::connect_data(nqn, host, cntlid);
    EXPECT_TRUE(send(q, capsule(fuzz::connect(1, qid, uint16_t(q.q->recv_depth() - 1), fuzz::Xfer::in_capsule), data)));
    if (q.fake().responses.empty()) return 0xffff;
    if (got_cntlid) *got_cntlid = nvme::get_le<uint16_t>(q.last_response().data(), 0);
    return status_of(q.last_response());
  }

  // A host's admin queue (connected, CC.EN = 1) and one I/O queue, on dev.
  std::pair<Queue, Queue> connect_host(const std::shared_ptr<rdma::SharedDevice>& dev, const char* host) {
    Queue admin = open_queue(dev, 0, 32);
    uint16_t cntlid = 0;
    EXPECT_EQ(connect(admin, 0, 0xffff, host, subnqn, &cntlid), 0);
    EXPECT_TRUE(send(admin, capsule(no_data(fuzz::property_set(2, nvme::Property::cc, fuzz::cc_enable)))));
    EXPECT_EQ(status_of(admin.last_response()), 0);
    Queue io = open_queue(dev, 1, 32);
    EXPECT_EQ(connect(io, 1, cntlid, host), 0);
    return {std::move(admin), std::move(io)};
  }

  // A 4 KiB Read or Write of LBA 0 of namespace 1 through a keyed SGL at host memory.
  static uint16_t io(Queue& q, uint8_t opcode, std::vector<uint8_t>& host_mem) {
    nvme::Sqe s = fuzz::sqe(opcode, 7, 1);
    rdma::set_keyed_sgl(s, reinterpret_cast<uint64_t>(host_mem.data()), 4096, 0x1234, false);
    const size_t before = q.fake().responses.size();
    EXPECT_TRUE(send(q, capsule(s)));
    if (q.fake().responses.size() != before + 1) return 0xffff;
    return status_of(q.last_response());
  }

  core::Limits target_limits() {
    core::Limits l;
    l.max_io_queues = 4;
    l.io_ccsz = nvme::sqe_size + icd;
    return l;
  }

  rdma::QueueLimits limits{128, icd, 1 << 20, 4};
  core::Target target{target_limits()};
  test_support::PassiveExecutor executor;
  transport::LiveBudgets budgets{transport::Budgets{}};
  std::vector<std::string> events;
};

// ---- the shared receive queue never loses a buffer ------------------------------------------

TEST_F(RdmaQueueTest, SrqCapsuleShorterThanAnSqeGivesItsReceiveBack) {
  auto dev = open_device(true, 64);
  ASSERT_EQ(fake_verbs::srq_posted(dev->srq()), 64u);
  {
    Queue q = open_queue(dev, 0, 32);
    const std::vector<uint8_t> runt(32, 0);
    ASSERT_TRUE(fake_verbs::host_send(q.qp(), runt));
    EXPECT_EQ(run(q), exec::Progress::closed) << "a capsule shorter than an SQE is a protocol error";
  }
  EXPECT_EQ(fake_verbs::srq_posted(dev->srq()), 64u) << "the refused capsule's buffer left the SRQ for good";
}

TEST_F(RdmaQueueTest, SrqCapsulesBeyondTheQueueDepthGiveTheirReceivesBack) {
  auto dev = open_device(true, 64);
  {
    Queue q = open_queue(dev, 0, 4);
    ASSERT_EQ(connect(q, 0, 0xffff, "nqn.2026-12.io.nvmetune:host-a"), 0);
    // Four commands take the four slots (their SENDs not yet reaped), four wait for a slot, the
    // ninth is one more than the host may have outstanding.
    for (uint16_t cid = 10; cid < 19; ++cid) ASSERT_TRUE(fake_verbs::host_send(q.qp(), capsule(no_data(keep_alive, cid))));
    EXPECT_EQ(run(q), exec::Progress::closed);
    EXPECT_FALSE(fake_verbs::cq_of(q.qp()->recv_cq).overrun);
  }
  EXPECT_EQ(fake_verbs::srq_posted(dev->srq()), 64u);
}

// With an SRQ, the receives one QP can complete are bounded by the SRQ, not by the queue's
// depth: a host that sends faster than its queue runs fills the CQ with them.
TEST_F(RdmaQueueTest, SrqFloodFitsTheCompletionQueue) {
  auto dev = open_device(true, 256);
  Queue q = open_queue(dev, 0, 32);
  ASSERT_EQ(connect(q, 0, 0xffff, "nqn.2026-12.io.nvmetune:host-a"), 0);
  for (uint16_t cid = 100; fake_verbs::host_send(q.qp(), capsule(no_data(keep_alive, cid))); ++cid) {
  }
  EXPECT_FALSE(fake_verbs::cq_of(q.qp()->recv_cq).overrun) << "CQ of " << q.qp()->recv_cq->cqe << " entries";
}

// ---- registration waits for Connect ----------------------------------------------------------

TEST_F(RdmaQueueTest, ReceiveMemoryIsRegisteredOnlyOnceConnectIsAccepted) {
  auto dev = open_device(false);
  const size_t device_bytes = world().registered;
  const size_t ring = size_t{32} * (nvme::sqe_size + icd);
  Queue q = open_queue(dev, 0, 32);
  EXPECT_LT(world().registered - device_bytes, ring / 4) << "a whole receive ring pinned before Connect";
  EXPECT_EQ(q.fake().recvs.size(), 1u) << "one receive: for the Connect capsule";
  ASSERT_EQ(connect(q, 0, 0xffff, "nqn.2026-12.io.nvmetune:host-a"), 0);
  EXPECT_GE(world().registered - device_bytes, ring);
  EXPECT_EQ(q.fake().recvs.size(), 32u);
  EXPECT_TRUE(send(q, capsule(no_data(keep_alive, 9))));
  EXPECT_EQ(q.fake().responses.size(), 2u) << "the command after Connect was answered";
  EXPECT_EQ(q.fake().recvs.size(), 32u);
}

TEST_F(RdmaQueueTest, RefusedConnectRegistersNothingMore) {
  auto dev = open_device(false);
  const size_t device_bytes = world().registered;
  Queue q = open_queue(dev, 0, 32);
  const size_t before = world().registered;
  EXPECT_NE(connect(q, 0, 0xffff, "nqn.2026-12.io.nvmetune:host-a", "nqn.2026-12.io.nvmetune:no-such"), 0);
  EXPECT_EQ(world().registered, before);
  EXPECT_LT(world().registered - device_bytes, size_t{64} << 10);
}

TEST_F(RdmaQueueTest, ConnectTimeoutClosesAQueueThatHasNotConnected) {
  auto dev = open_device(false);
  Queue idle = open_queue(dev, 0, 32);
  idle.q->expire_handshake();
  EXPECT_EQ(run(idle), exec::Progress::closed);
  EXPECT_EQ(world().disconnects, 1u);
  EXPECT_EQ(std::count(events.begin(), events.end(), "connect_timeout"), 1);
  Queue connected = open_queue(dev, 0, 32);
  ASSERT_EQ(connect(connected, 0, 0xffff, "nqn.2026-12.io.nvmetune:host-a"), 0);
  connected.q->expire_handshake();  // raced with Connect: too late to matter
  EXPECT_NE(run(connected), exec::Progress::closed);
  EXPECT_EQ(world().disconnects, 1u);
}

// The schedule both transports keep (TCP's accept thread, RDMA's CM thread).
TEST(ConnectDeadlines, ExpireOldestFirstOnlyOncePassed) {
  exec::ConnectDeadlines<int> d(100);
  using clock = std::chrono::steady_clock;
  EXPECT_EQ(d.next(), clock::time_point::max());
  EXPECT_EQ(exec::wait_ms_until(d.next()), -1);
  int a = 1, b = 2;
  const auto t0 = clock::now();
  d.add(&a, 1, t0);
  d.add(&b, 2, t0 + std::chrono::milliseconds(50));
  EXPECT_EQ(d.next(), t0 + std::chrono::milliseconds(100));
  std::vector<int> gone;
  d.expire(t0 + std::chrono::milliseconds(99), [&](int* q, uint64_t id) { gone.push_back(*q + 10 * int(id)); });
  EXPECT_TRUE(gone.empty());
  d.expire(t0 + std::chrono::milliseconds(120), [&](int* q, uint64_t id) { gone.push_back(*q + 10 * int(id)); });
  EXPECT_EQ(gone, std::vector<int>{11});  // queue 1 with its queue_id 1
  d.expire(t0 + std::chrono::milliseconds(150), [&](int* q, uint64_t id) { gone.push_back(*q + 10 * int(id)); });
  EXPECT_EQ(gone, (std::vector<int>{11, 22}));
  EXPECT_EQ(d.next(), clock::time_point::max());
}

// ---- no stale bytes reach a host --------------------------------------------------------------

TEST_F(RdmaQueueTest, NullReadSendsZeroesNotAnotherHostsData) {
  auto dev = open_device(false);
  {
    auto [admin, io_q] = connect_host(dev, "nqn.2026-12.io.nvmetune:host-a");
    std::vector<uint8_t> secret(4096, 0xa5);
    ASSERT_EQ(io(io_q, nvm_write, secret), 0);
  }  // host A is gone: its queue's buffers are back in the device's pool
  auto [admin, io_q] = connect_host(dev, "nqn.2026-12.io.nvmetune:host-b");
  std::vector<uint8_t> got(4096, 0xee);
  ASSERT_EQ(io(io_q, nvm_read, got), 0);
  EXPECT_EQ(io_q.fake().rdma_writes, 1u);
  EXPECT_EQ(std::count(got.begin(), got.end(), 0), 4096) << "byte 0 is 0x" << std::hex << int(got[0]);
}

}  // namespace
