// NVMe/RDMA wire pieces that need no device (engine/rdma/): CM private data of request, accept
// and reject with every reject status; keyed and in-capsule SGL descriptors parsed from SQE
// bytes, with each malformed descriptor's NVMe status and error location; the verbs work
// requests of the data path. Byte layouts are written out as the NVMe RDMA Transport
// Specification 1.0b figures (and Linux include/linux/nvme-rdma.h) lay them out, not produced by
// our own encoder, so a field moved or resized fails here.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "engine/rdma/cm_private_data.hpp"
#include "engine/rdma/sgl.hpp"
#include "engine/rdma/work_request.hpp"

namespace {

using namespace rdma;

std::array<uint8_t, 32> request_bytes(uint16_t recfmt, uint16_t qid, uint16_t hrqsize, uint16_t hsqsize) {
  std::array<uint8_t, 32> b{};
  b[0] = recfmt & 0xff, b[1] = recfmt >> 8;
  b[2] = qid & 0xff, b[3] = qid >> 8;
  b[4] = hrqsize & 0xff, b[5] = hrqsize >> 8;
  b[6] = hsqsize & 0xff, b[7] = hsqsize >> 8;
  return b;
}

const CmLimits limits{4, 128};

TEST(RdmaCm, LinuxHostAdminRequestIsAccepted) {
  // What nvme_rdma_route_resolved() sends for the admin queue: HRQSIZE 32, HSQSIZE 31.
  const auto pd = request_bytes(0, 0, 32, 31);
  const auto r = parse_cm_request(pd, limits);
  EXPECT_EQ(r.status, CmStatus::ok);
  EXPECT_EQ(r.request.qid, 0);
  EXPECT_EQ(r.recv_depth, 32u);
  EXPECT_EQ(r.send_depth, 32u);
}

TEST(RdmaCm, IoQueueRequestSizes) {
  const auto r = parse_cm_request(request_bytes(0, 3, 128, 127), limits);
  EXPECT_EQ(r.status, CmStatus::ok);
  EXPECT_EQ(r.request.qid, 3);
  EXPECT_EQ(r.recv_depth, 128u);
  EXPECT_EQ(r.send_depth, 128u);
}

TEST(RdmaCm, RejectStatusesInSpecOrder) {
  const auto req = request_bytes(0, 1, 16, 15);
  EXPECT_EQ(parse_cm_request(std::span(req).first(31), limits).status, CmStatus::invalid_length);
  EXPECT_EQ(parse_cm_request({}, limits).status, CmStatus::invalid_length);
  EXPECT_EQ(parse_cm_request(request_bytes(1, 1, 16, 15), limits).status, CmStatus::invalid_recfmt);
  EXPECT_EQ(parse_cm_request(request_bytes(0, 5, 16, 15), limits).status, CmStatus::invalid_qid);
  // Admin queue: at most 32 entries.
  EXPECT_EQ(parse_cm_request(request_bytes(0, 0, 32, 32), limits).status, CmStatus::invalid_hsqsize);
  EXPECT_EQ(parse_cm_request(request_bytes(0, 1, 128, 128), limits).status, CmStatus::invalid_hsqsize);
  EXPECT_EQ(parse_cm_request(request_bytes(0, 1, 1, 0), limits).status, CmStatus::invalid_hsqsize);
  EXPECT_EQ(parse_cm_request(request_bytes(0, 1, 0, 15), limits).status, CmStatus::invalid_hrqsize);
  EXPECT_EQ(parse_cm_request(request_bytes(0, 1, 129, 15), limits).status, CmStatus::invalid_hrqsize);
  // Longer private data than 32 bytes (the CM may pad) is fine.
  std::vector<uint8_t> longer(req.begin(), req.end());
  longer.resize(56, 0);
  EXPECT_EQ(parse_cm_request(longer, limits).status, CmStatus::ok);
}

TEST(RdmaCm, SpecStatusValues) {
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::invalid_length), 0x01);
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::invalid_recfmt), 0x02);
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::invalid_qid), 0x03);
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::invalid_hsqsize), 0x04);
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::invalid_hrqsize), 0x05);
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::no_resources), 0x06);
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::invalid_ird), 0x07);
  EXPECT_EQ(static_cast<uint16_t>(CmStatus::invalid_ord), 0x08);
  EXPECT_EQ(cm_status_text(CmStatus::invalid_hsqsize), "invalid host send queue size");
}

TEST(RdmaCm, EncodedBytesMatchTheSpecLayout) {
  const std::array<uint8_t, 32> accept = encode_cm_accept(0x1234);
  std::array<uint8_t, 32> want_accept{};
  want_accept[2] = 0x34, want_accept[3] = 0x12;  // RECFMT 0 in 1:0, CRQSIZE in 3:2
  EXPECT_EQ(accept, want_accept);

  const std::array<uint8_t, 4> reject = encode_cm_reject(CmStatus::no_resources);
  EXPECT_EQ(reject, (std::array<uint8_t, 4>{0x00, 0x00, 0x06, 0x00}));  // STS in 3:2

  const auto req = encode_cm_request({0, 7, 0x80, 0x7f, 0x0102});
  auto want_req = request_bytes(0, 7, 0x80, 0x7f);
  want_req[8] = 0x02, want_req[9] = 0x01;
  EXPECT_EQ(req, want_req);
}

TEST(RdmaCm, AcceptAndRejectParse) {
  const auto a = parse_cm_accept(encode_cm_accept(64));
  EXPECT_TRUE(a.valid);
  EXPECT_EQ(a.crqsize, 64);
  EXPECT_FALSE(parse_cm_accept(std::array<uint8_t, 4>{}).valid);
  const auto j = parse_cm_reject(encode_cm_reject(CmStatus::invalid_qid));
  EXPECT_TRUE(j.valid);
  EXPECT_EQ(j.sts, CmStatus::invalid_qid);
  EXPECT_FALSE(parse_cm_reject(std::array<uint8_t, 4>{0x01, 0x00, 0x03, 0x00}).valid);  // RECFMT 1
  EXPECT_FALSE(parse_cm_reject(std::array<uint8_t, 3>{}).valid);
}

TEST(RdmaCm, RdAtomicNeverExceedsTheDevice) {
  EXPECT_EQ(negotiate_rd_atomic(16, 8), 8);
  EXPECT_EQ(negotiate_rd_atomic(4, 128), 4);
  EXPECT_EQ(negotiate_rd_atomic(4, -1), 0);
}

// An SQE whose DPTR (bytes 39:24) holds the given 16 bytes.
nvme::Sqe sqe_with_dptr(uint8_t opcode, const std::array<uint8_t, 16>& dptr) {
  nvme::Sqe s;
  s.set_opcode(opcode);
  s.b[1] = 1 << 6;  // PSDT 01
  std::copy(dptr.begin(), dptr.end(), s.b.begin() + 24);
  return s;
}

constexpr uint8_t nvm_write = 0x01, nvm_read = 0x02;
const CapsuleFacts no_icd{8192, 0};

TEST(RdmaSgl, KeyedDataBlockWithInvalidate) {
  // ADDRESS 0x00007f1234567000, LENGTH 0x001000 (24 bits), KEY 0x12345678, ID 0x4F.
  const auto sqe = sqe_with_dptr(nvm_read, {0x00, 0x70, 0x56, 0x34, 0x12, 0x7f, 0x00, 0x00,  //
                                            0x00, 0x10, 0x00, 0x78, 0x56, 0x34, 0x12, 0x4f});
  const auto r = parse_sgl(sqe, no_icd);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.data.kind, DataKind::keyed);
  EXPECT_EQ(r.data.address, 0x00007f1234567000ull);
  EXPECT_EQ(r.data.length, 0x1000u);
  EXPECT_EQ(r.data.key, 0x12345678u);
  EXPECT_TRUE(r.data.invalidate);
}

TEST(RdmaSgl, KeyedLengthIsTwentyFourBits) {
  // LENGTH 0xffffff; the key's low byte (0xaa at byte 35) must not leak into the length.
  const auto sqe = sqe_with_dptr(nvm_write, {0, 0, 0, 0, 0, 0, 0, 0,  //
                                             0xff, 0xff, 0xff, 0xaa, 0xbb, 0xcc, 0xdd, 0x40});
  const auto r = parse_sgl(sqe, no_icd);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.data.length, keyed_sgl_max_length);
  EXPECT_EQ(r.data.key, 0xddccbbaau);
  EXPECT_FALSE(r.data.invalidate);
}

TEST(RdmaSgl, KeyedZeroLengthMeansNoData) {
  const auto r = parse_sgl(sqe_with_dptr(nvm_read, {1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 0x40}), no_icd);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.data.kind, DataKind::none);
}

TEST(RdmaSgl, SetKeyedRoundTrips) {
  nvme::Sqe s;
  set_keyed_sgl(s, 0xdeadbeef00ull, 0x20000, 0xcafe, true);
  EXPECT_EQ(s.b[39], 0x4f);
  EXPECT_EQ(s.psdt(), 1);
  const auto r = parse_sgl(s, no_icd);
  EXPECT_EQ(r.data.address, 0xdeadbeef00ull);
  EXPECT_EQ(r.data.length, 0x20000u);
  EXPECT_EQ(r.data.key, 0xcafeu);
  EXPECT_TRUE(r.data.invalidate);
}

TEST(RdmaSgl, InCapsuleDataBlock) {
  // SGL Data Block, subtype offset (ID 0x01): offset 0, length 4096 (32 bits).
  const auto sqe = sqe_with_dptr(nvm_write, {0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0x00, 0x00, 0, 0, 0, 0x01});
  const auto r = parse_sgl(sqe, {8192, 4096});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.data.kind, DataKind::in_capsule);
  EXPECT_EQ(r.data.address, 0u);
  EXPECT_EQ(r.data.length, 4096u);
}

TEST(RdmaSgl, InCapsuleErrors) {
  const std::array<uint8_t, 16> icd4k{0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0x00, 0x00, 0, 0, 0, 0x01};
  // Host to controller only: a read with in-capsule data names the opcode.
  auto r = parse_sgl(sqe_with_dptr(nvm_read, icd4k), {8192, 4096});
  EXPECT_EQ(r.status, nvme::status::invalid_field);
  EXPECT_EQ(r.status.error_loc, sgl_field::opcode);
  // Beyond what this queue's receive buffers hold: SGL Offset Invalid.
  r = parse_sgl(sqe_with_dptr(nvm_write, icd4k), {2048, 2048});
  EXPECT_EQ(r.status, nvme::status::sgl_offset_invalid);
  EXPECT_EQ(r.status.error_loc, sgl_field::address);
  auto off = icd4k;
  off[0] = 0x00, off[1] = 0x10;  // offset 4096 + 4096 > 8192? no: exactly 8192, fits capacity
  r = parse_sgl(sqe_with_dptr(nvm_write, off), {8192, 8192});
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.data.address, 4096u);
  off[1] = 0x11;  // offset 4352: past the capacity
  EXPECT_EQ(parse_sgl(sqe_with_dptr(nvm_write, off), {8192, 8192}).status, nvme::status::sgl_offset_invalid);
  // Fewer bytes arrived than the descriptor claims: Data SGL Length Invalid.
  r = parse_sgl(sqe_with_dptr(nvm_write, icd4k), {8192, 1024});
  EXPECT_EQ(r.status, nvme::status::sgl_length_invalid);
  EXPECT_EQ(r.status.error_loc, sgl_field::length);
  EXPECT_TRUE(r.status.dnr);
}

TEST(RdmaSgl, BadTypesAndSubtypes) {
  std::array<uint8_t, 16> d{};
  d[8] = 0x10;
  for (uint8_t type : {0x2, 0x3, 0x5, 0x6, 0xe}) {
    d[15] = static_cast<uint8_t>(type << 4);
    const auto r = parse_sgl(sqe_with_dptr(nvm_read, d), no_icd);
    EXPECT_EQ(r.status, nvme::status::sgl_type_invalid) << int(type);
    EXPECT_EQ(r.status.error_loc, sgl_field::id);
  }
  // NVMe/TCP's transport data block (0x5A) is not an RDMA descriptor.
  d[15] = 0x5a;
  EXPECT_EQ(parse_sgl(sqe_with_dptr(nvm_read, d), no_icd).status, nvme::status::sgl_type_invalid);
  for (uint8_t id : {0x00, 0x02, 0x41, 0x4e}) {  // data block/address, keyed/offset, keyed/0xE
    d[15] = id;
    const auto r = parse_sgl(sqe_with_dptr(nvm_write, d), {8192, 8192});
    EXPECT_EQ(r.status, nvme::status::invalid_field) << int(id);
    EXPECT_EQ(r.status.error_loc, sgl_field::id);
  }
}

TEST(RdmaSgl, DirectionFollowsOpcodeOrFctype) {
  nvme::Sqe s;
  s.set_opcode(nvm_write);
  EXPECT_TRUE(host_to_controller(s));
  s.set_opcode(nvm_read);
  EXPECT_FALSE(host_to_controller(s));
  s.set_opcode(0x7f);
  s.b[4] = 0x01;  // Connect
  EXPECT_TRUE(host_to_controller(s));
  s.b[4] = 0x04;  // Property Get
  EXPECT_FALSE(host_to_controller(s));
}

const DataDescriptor keyed{DataKind::keyed, 0x1000, 4096, 0xabcd, false};

TEST(RdmaWr, IdsCarryKindAndSlot) {
  constexpr uint64_t id = make_wr_id(WrKind::rdma_read, 4095);
  static_assert(wr_kind(id) == WrKind::rdma_read && wr_slot(id) == 4095);
  EXPECT_NE(make_wr_id(WrKind::recv, 0), 0u);  // never 0: an unset wr_id is recognisable
}

TEST(RdmaWr, ReceiveOfOneCapsule) {
  uint8_t buf[64 + 8192]{};
  ibv_sge sge = make_sge(buf, sizeof buf, 77);
  EXPECT_EQ(sge.addr, reinterpret_cast<uint64_t>(buf));
  EXPECT_EQ(sge.length, sizeof buf);
  EXPECT_EQ(sge.lkey, 77u);
  const ibv_recv_wr wr = make_recv(9, &sge);
  EXPECT_EQ(wr.sg_list, &sge);
  EXPECT_EQ(wr.num_sge, 1);
  EXPECT_EQ(wr.next, nullptr);
  EXPECT_EQ(wr_kind(wr.wr_id), WrKind::recv);
  EXPECT_EQ(wr_slot(wr.wr_id), 9u);
}

TEST(RdmaWr, HostWriteIsASignaledRdmaRead) {
  ibv_sge local{};
  const ibv_send_wr wr = make_rdma_read(3, &local, keyed);
  EXPECT_EQ(wr.opcode, IBV_WR_RDMA_READ);
  EXPECT_EQ(wr.send_flags, unsigned(IBV_SEND_SIGNALED));
  EXPECT_EQ(wr.wr.rdma.remote_addr, 0x1000u);
  EXPECT_EQ(wr.wr.rdma.rkey, 0xabcdu);
  EXPECT_EQ(wr_slot(wr.wr_id), 3u);
  EXPECT_EQ(wr.next, nullptr);
}

TEST(RdmaWr, HostReadIsAnUnsignaledWriteChainedToTheResponse) {
  ibv_sge data{}, cqe{};
  ibv_send_wr send = make_response(5, &cqe, keyed);
  const ibv_send_wr write = make_rdma_write(5, &data, keyed, &send);
  EXPECT_EQ(write.opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(write.send_flags, 0u);
  EXPECT_EQ(write.next, &send);
  EXPECT_EQ(write.wr.rdma.rkey, 0xabcdu);
  EXPECT_EQ(send.opcode, IBV_WR_SEND);
  EXPECT_EQ(send.send_flags, unsigned(IBV_SEND_SIGNALED));
  EXPECT_EQ(wr_kind(send.wr_id), WrKind::send);
}

TEST(RdmaWr, ResponseInvalidatesTheKeyWhenAsked) {
  ibv_sge cqe{};
  DataDescriptor inv = keyed;
  inv.invalidate = true;
  const ibv_send_wr wr = make_response(1, &cqe, inv);
  EXPECT_EQ(wr.opcode, IBV_WR_SEND_WITH_INV);
  EXPECT_EQ(wr.invalidate_rkey, 0xabcdu);
  // In-capsule or no data: nothing to invalidate.
  EXPECT_EQ(make_response(1, &cqe, DataDescriptor{DataKind::in_capsule, 0, 512, 0, true}).opcode, IBV_WR_SEND);
}

}  // namespace
