// The NVMe/RDMA host pieces that need no device (engine/initiator/rdma/, lab/load/): `perf -r`
// with trtype:rdma, the CM request private data the host sends (checked byte by byte and by the
// target's own parser), the keyed SGL a capsule points at host memory with (read back by the
// target's SGL parser), the registered-memory lookup, and the "no RDMA device" error a host
// without one gets from the real rdma-core (these build machines have none; the data path runs
// in the interop guest, tests/interop/rdma_guest.sh).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lab/load/perf_options.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/initiator/rdma/host_capsule.hpp"
#include "engine/initiator/rdma/memory_table.hpp"
#include "engine/initiator/rdma/rdma_queue.hpp"
#include "engine/rdma/cm_private_data.hpp"
#include "engine/rdma/device.hpp"
#include "engine/rdma/sgl.hpp"

namespace {

using initiator::Transport;
constexpr const char* nqn = "nqn.2026-12.io.nvmetune:rdma-host";
constexpr const char* host = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001";

std::optional<std::string> resolve(const std::string& remote, initiator::LoadSpec& spec, std::string digest = "") {
  lab::PerfOptions o;
  o.remote = remote;
  o.hostnqn = host;
  o.digest = std::move(digest);
  return lab::resolve_perf_options(o, spec);
}

TEST(RdmaPerfOptions, TrtypeRdmaSelectsTheRdmaTransport) {
  initiator::LoadSpec spec;
  ASSERT_FALSE(resolve(std::string("trtype:rdma traddr:10.0.2.15 trsvcid:4430 subnqn:") + nqn, spec));
  EXPECT_EQ(spec.target.trtype, Transport::rdma);
  EXPECT_EQ(spec.target.traddr, "10.0.2.15");
  EXPECT_EQ(spec.target.port, 4430);
  EXPECT_EQ(spec.target.subnqn, nqn);
  initiator::LoadSpec upper;
  ASSERT_FALSE(resolve(std::string("trtype:RDMA traddr:10.0.2.15 subnqn:") + nqn, upper));
  EXPECT_EQ(upper.target.trtype, Transport::rdma);
  EXPECT_EQ(upper.target.port, 4420);  // the default TRSVCID, as for tcp
  initiator::LoadSpec tcp;
  ASSERT_FALSE(resolve(std::string("trtype:tcp traddr:127.0.0.1 subnqn:") + nqn, tcp));
  EXPECT_EQ(tcp.target.trtype, Transport::tcp);
}

TEST(RdmaPerfOptions, OtherTransportsAndTcpDigestsAreRefused) {
  initiator::LoadSpec spec;
  auto err = resolve(std::string("trtype:fc traddr:10.0.2.15 subnqn:") + nqn, spec);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("\"fc\" is not supported (tcp or rdma)"), std::string::npos) << *err;
  err = resolve(std::string("trtype:rdma traddr:10.0.2.15 subnqn:") + nqn, spec, "hdr");
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("--digest: digests are NVMe/TCP only"), std::string::npos) << *err;
}

TEST(RdmaHostCm, RequestCarriesQidAndQueueSizesAsLinuxLaysThemOut) {
  // Admin queue: 32 entries (SQSIZE 31), 32 receives.
  const auto admin = rdma::encode_cm_request(initiator::rdma_host::cm_request(0, 31, 32));
  const std::array<uint8_t, 32> want_admin = {0, 0, 0, 0, 32, 0, 31, 0};  // RECFMT QID HRQSIZE HSQSIZE
  EXPECT_EQ(admin, want_admin);
  // I/O queue 3 with 8 slots: SQSIZE 8 (9 entries), one receive per entry.
  const auto io = rdma::encode_cm_request(initiator::rdma_host::cm_request(3, 8, 8));
  EXPECT_EQ(io[2], 3);
  EXPECT_EQ(io[4], 9);
  EXPECT_EQ(io[6], 8);
  // The target's parser accepts both and sizes its queues from them.
  const auto r = rdma::parse_cm_request(io, rdma::CmLimits{4, 128});
  EXPECT_EQ(r.status, rdma::CmStatus::ok);
  EXPECT_EQ(r.recv_depth, 9u);
  EXPECT_EQ(r.send_depth, 9u);
  EXPECT_EQ(rdma::parse_cm_request(admin, rdma::CmLimits{4, 128}).status, rdma::CmStatus::ok);
  // More slots than SQ entries: a receive for every response that can be outstanding.
  EXPECT_EQ(initiator::rdma_host::cm_request(1, 15, 32).hrqsize, 32);
}

TEST(RdmaHostCm, RejectReasonNamesTheStatus) {
  const auto rej = rdma::encode_cm_reject(rdma::CmStatus::invalid_hsqsize);
  EXPECT_EQ(initiator::rdma_host::cm_reject_reason(rej),
            "rejected by the target: invalid host send queue size (STS 4)");
  EXPECT_NE(initiator::rdma_host::cm_reject_reason({}).find("no NVMe/RDMA reject status"), std::string::npos);
}

TEST(RdmaHostSgl, KeyedDescriptorPointsAtHostMemoryWithoutInvalidate) {
  nvme::Sqe sqe{};
  sqe.b[0] = 0x01;  // Write: data to the controller
  ASSERT_TRUE(initiator::rdma_host::set_host_data(sqe, 0x1122334455667788ull, 0x20000, 0xa1b2c3d4));
  // DPTR bytes 24..39: address (LE), 24-bit length, key, SGL identifier 0x40 (keyed, address).
  const std::array<uint8_t, 16> want = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                        0x00, 0x00, 0x02, 0xd4, 0xc3, 0xb2, 0xa1, 0x40};
  EXPECT_TRUE(std::equal(want.begin(), want.end(), sqe.b.begin() + 24));
  EXPECT_EQ(sqe.b[1] >> 6, 1) << "PSDT: SGL";
  const auto parsed = rdma::parse_sgl(sqe, rdma::CapsuleFacts{});
  ASSERT_TRUE(parsed.status.ok());
  EXPECT_EQ(parsed.data.kind, rdma::DataKind::keyed);
  EXPECT_EQ(parsed.data.address, 0x1122334455667788ull);
  EXPECT_EQ(parsed.data.length, 0x20000u);
  EXPECT_EQ(parsed.data.key, 0xa1b2c3d4u);
  EXPECT_FALSE(parsed.data.invalidate) << "the host's keys outlive the command";
}

TEST(RdmaHostSgl, NoDataIsANullKeyedDescriptorAndOversizeIsRefused) {
  nvme::Sqe sqe{};
  sqe.b.fill(0xee);
  ASSERT_TRUE(initiator::rdma_host::set_host_data(sqe, 0x1000, 0, 0x55));
  for (int i = 24; i < 39; ++i) EXPECT_EQ(sqe.b[i], 0) << "byte " << i;
  EXPECT_EQ(sqe.b[39], 0x40);
  EXPECT_EQ(rdma::parse_sgl(sqe, rdma::CapsuleFacts{}).data.kind, rdma::DataKind::none);
  EXPECT_FALSE(initiator::rdma_host::set_host_data(sqe, 0x1000, 1u << 24, 1));
}

TEST(RdmaHostMemory, FindsTheRegionHoldingAWholeBuffer) {
  std::vector<uint8_t> a(8192), b(4096);
  initiator::rdma_host::MemoryTable t;
  ASSERT_TRUE(t.add(a.data(), a.size(), 1, 101));
  ASSERT_TRUE(t.add(b.data(), b.size(), 2, 102));
  ASSERT_NE(t.find(a.data() + 4096, 4096), nullptr);
  EXPECT_EQ(t.find(a.data() + 4096, 4096)->rkey, 101u);
  EXPECT_EQ(t.find(b.data(), 4096)->lkey, 2u);
  EXPECT_EQ(t.find(a.data() + 4097, 4096), nullptr) << "runs past the region's end";
  EXPECT_EQ(t.find(a.data() - 1, 2), nullptr);
  while (t.size() < initiator::rdma_host::MemoryTable::capacity) ASSERT_TRUE(t.add(b.data(), 1, 0, 0));
  EXPECT_FALSE(t.add(b.data(), 1, 0, 0));
}

// Real rdma-core on a host without an RDMA device: the queue and a whole perf run say so.
TEST(RdmaHostDevice, NoDeviceIsReportedByQueueAndLoad) {
  if (rdma::rdma_unavailable().empty()) GTEST_SKIP() << "this host has an RDMA device";
  initiator::Target t;
  t.trtype = Transport::rdma;
  t.traddr = "127.0.0.1";
  t.subnqn = nqn;
  initiator::QueueParams p;
  auto q = initiator::RdmaQueue::connect(t, p);
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().to_string().find("no RDMA device"), std::string::npos) << q.error().to_string();
  initiator::LoadSpec spec;
  spec.target = t;
  spec.time_s = 1;
  const auto r = initiator::run_load(spec);
  EXPECT_EQ(r.status, initiator::LoadResult::Status::failed);
  EXPECT_NE(r.error.find("cannot connect to rdma 127.0.0.1:4420"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("no RDMA device"), std::string::npos) << r.error;
}

}  // namespace
