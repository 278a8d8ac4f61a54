// NVMe/TCP PDU codec (engine/tcp/codec.hpp): every PDU type written and parsed back, CRC32C
// test vectors, header digests, check_common's rejection of every malformed common-header
// field (Fatal Error Status + FEI byte offset), and every PDU of real Linux kernel host <->
// kernel target traffic recorded in ../shared/interop/traces/*.pcap.
//
// The traces directory is found next to the repository (../shared/interop/traces, derived from
// this file's path) or from $NVMETUNE_INTEROP_TRACES.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "engine/nvme/le.hpp"
#include "engine/nvme/spec.hpp"
#include "engine/tcp/codec.hpp"
#include "engine/tcp/digest.hpp"
#include "engine/tcp/pdu.hpp"
#include "support/source_dir.hpp"

namespace {

using namespace tcp;
using nvme::get_le;

// Large enough for any header plus digest plus the widest PDA padding (128) and a TermReq.
using Buf = std::array<uint8_t, 512>;

CommonHeader common_of(std::span<const uint8_t> b) { return parse_common(b.first<ch_len>()); }

Negotiated before_ic() { return Negotiated{}; }
Negotiated conn(bool hdgst = false, bool ddgst = false, uint8_t pda = 0) {
  return Negotiated{true, hdgst, ddgst, pda};
}

CommonHeader hdr(PduType t, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen) {
  return CommonHeader{t, flags, hlen, pdo, plen};
}
CommonHeader hdr_raw(uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen) {
  return CommonHeader{static_cast<PduType>(type), flags, hlen, pdo, plen};
}

std::string describe(const CommonHeader& ch) {
  std::ostringstream s;
  s << "type=" << int(static_cast<uint8_t>(ch.type)) << " flags=0x" << std::hex << int(ch.flags) << std::dec
    << " hlen=" << int(ch.hlen) << " pdo=" << int(ch.pdo) << " plen=" << ch.plen;
  return s.str();
}

void expect_ok(const CommonHeader& ch, Role r, const Negotiated& n) {
  const auto res = check_common(ch, r, n);
  EXPECT_FALSE(res.error.has_value()) << describe(ch) << " rejected: fes=" << int(res.error->fes)
                                      << " fei=" << res.error->fei;
}

void expect_error(const CommonHeader& ch, Role r, const Negotiated& n, Fes fes, uint32_t fei) {
  const auto res = check_common(ch, r, n);
  ASSERT_TRUE(res.error.has_value()) << describe(ch) << " accepted";
  EXPECT_EQ(res.error->fes, fes) << describe(ch);
  EXPECT_EQ(res.error->fei, fei) << describe(ch);
}

nvme::Sqe sample_sqe() {
  nvme::Sqe sqe;
  for (size_t i = 0; i < sqe.b.size(); ++i) sqe.b[i] = static_cast<uint8_t>(0x40 + i);
  sqe.set_opcode(static_cast<uint8_t>(nvme::NvmOpcode::write));
  sqe.set_cid(0x1234);
  sqe.set_nsid(1);
  sqe.set_sgl(0, 4096, nvme::sgl_data_block_offset);
  return sqe;
}

// ------------------------------------------------------------------------------------ CRC32C

TEST(Crc32c, Rfc3720Vectors) {
  std::array<uint8_t, 32> buf{};
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x8a9136aau);
  buf.fill(0xff);
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x62a8ab43u);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x46dd794eu);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c(buf.data(), buf.size()), 0x113fdb5cu);
  const char* check = "123456789";
  EXPECT_EQ(crc32c(check, 9), 0xe3069283u);
  EXPECT_EQ(crc32c(check, 0), 0u);
}

TEST(Crc32c, RunningUpdateEqualsOneShot) {
  std::vector<uint8_t> data(4099);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  const uint32_t whole = crc32c(data.data(), data.size());
  for (size_t cut : {size_t{0}, size_t{1}, size_t{3}, size_t{64}, size_t{4096}, data.size()}) {
    uint32_t c = crc32c_update(crc32c_seed, data.data(), cut);
    c = crc32c_update(c, data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc32c_final(c), whole) << "cut at " << cut;
  }
}

TEST(Crc32c, DigestIsLittleEndianOnTheWire) {
  // RFC 3720 B.4 lists the CRC of 32 zero bytes as the byte sequence aa 36 91 8a.
  Buf b{};
  std::array<uint8_t, 32> zeros{};
  std::memcpy(b.data(), zeros.data(), zeros.size());
  nvme::put_le(b.data(), 32, crc32c(zeros.data(), zeros.size()));
  EXPECT_EQ(b[32], 0xaa);
  EXPECT_EQ(b[33], 0x36);
  EXPECT_EQ(b[34], 0x91);
  EXPECT_EQ(b[35], 0x8a);
  EXPECT_TRUE(header_digest_ok(std::span<const uint8_t>(b.data(), 36), 32));
}

// ------------------------------------------------------------------------------ header digest

TEST(HeaderDigest, VerifyOkAndEveryMismatch) {
  Buf b{};
  const nvme::Cqe cqe{0xdeadbeef, 1, 5, 2, 0x77, 0x4002};
  const size_t n = write_capsule_resp(b, cqe, {true, false});
  ASSERT_EQ(n, capsule_resp_hlen + digest_len);
  const std::span<const uint8_t> pdu(b.data(), n);
  EXPECT_TRUE(header_digest_ok(pdu, capsule_resp_hlen));
  EXPECT_EQ(get_le<uint32_t>(b.data(), capsule_resp_hlen), crc32c(b.data(), capsule_resp_hlen));
  for (size_t i = 0; i < n; ++i) {  // any single-bit change in header or digest is caught
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
      Buf c = b;
      c[i] ^= bit;
      EXPECT_FALSE(header_digest_ok(std::span<const uint8_t>(c.data(), n), capsule_resp_hlen))
          << "byte " << i << " bit " << int(bit);
    }
  }
  EXPECT_FALSE(header_digest_ok(pdu.first(n - 1), capsule_resp_hlen)) << "digest cut short";
}

// ---------------------------------------------------------------------------------- round trips

TEST(RoundTrip, DataOffset) {
  EXPECT_EQ(data_offset(72, false, 0), 72u);
  EXPECT_EQ(data_offset(72, true, 0), 76u);
  EXPECT_EQ(data_offset(72, true, 1), 80u);
  EXPECT_EQ(data_offset(72, false, 3), 80u);
  EXPECT_EQ(data_offset(72, true, 3), 80u);
  EXPECT_EQ(data_offset(72, true, 31), 128u);
  EXPECT_EQ(data_offset(24, false, 0), 24u);
  EXPECT_EQ(data_offset(24, true, 0), 28u);
  EXPECT_EQ(data_offset(24, true, 7), 32u);
  EXPECT_EQ(data_offset(24, false, 31), 128u);
}

TEST(RoundTrip, ICReq) {
  Buf b;
  b.fill(0xee);
  const IcReq r{0, 3, true, true, 15};
  ASSERT_EQ(write_icreq(b, r), ic_hlen);
  const auto ch = common_of(b);
  EXPECT_EQ(ch.type, PduType::icreq);
  EXPECT_EQ(ch.flags, 0);
  EXPECT_EQ(ch.hlen, ic_hlen);
  EXPECT_EQ(ch.pdo, 0);
  EXPECT_EQ(ch.plen, ic_hlen);
  const auto res = check_common(ch, Role::controller, before_ic());
  ASSERT_FALSE(res.error);
  EXPECT_EQ(res.framing.header_len, ic_hlen);
  EXPECT_EQ(res.framing.data_len, 0u);
  EXPECT_FALSE(res.framing.has_hdgst);
  EXPECT_EQ(res.framing.total(), ic_hlen);
  const auto p = parse_icreq(b);
  EXPECT_EQ(p.pfv, 0);
  EXPECT_EQ(p.hpda, 3);
  EXPECT_TRUE(p.hdgst);
  EXPECT_TRUE(p.ddgst);
  EXPECT_EQ(p.maxr2t, 15u);
  EXPECT_EQ(b[field::dgst], 0x03);
  for (size_t i = 16; i < ic_hlen; ++i) EXPECT_EQ(b[i], 0) << "reserved byte " << i;
  const IcReq r2{0, 0, false, true, 0};
  write_icreq(b, r2);
  EXPECT_EQ(b[field::dgst], 0x02);
  EXPECT_FALSE(parse_icreq(b).hdgst);
  EXPECT_TRUE(parse_icreq(b).ddgst);
}

TEST(RoundTrip, ICResp) {
  Buf b;
  b.fill(0xee);
  const IcResp r{0, 2, true, false, 131072};
  ASSERT_EQ(write_icresp(b, r), ic_hlen);
  const auto ch = common_of(b);
  EXPECT_EQ(ch.type, PduType::icresp);
  EXPECT_EQ(ch.plen, ic_hlen);
  EXPECT_EQ(ch.hlen, ic_hlen);
  const auto res = check_common(ch, Role::host, before_ic());
  ASSERT_FALSE(res.error);
  EXPECT_EQ(res.framing.total(), ic_hlen);
  const auto p = parse_icresp(b);
  EXPECT_EQ(p.pfv, 0);
  EXPECT_EQ(p.cpda, 2);
  EXPECT_TRUE(p.hdgst);
  EXPECT_FALSE(p.ddgst);
  EXPECT_EQ(p.maxh2cdata, 131072u);
  EXPECT_EQ(get_le<uint32_t>(b.data(), 12), 131072u);
  for (size_t i = 16; i < ic_hlen; ++i) EXPECT_EQ(b[i], 0) << "reserved byte " << i;
}

TEST(RoundTrip, TermReqTruncatesOffendingHeaderTo128Bytes) {
  std::vector<uint8_t> offending(200);
  for (size_t i = 0; i < offending.size(); ++i) offending[i] = static_cast<uint8_t>(i + 1);
  for (const PduType t : {PduType::c2h_term_req, PduType::h2c_term_req}) {
    const Role reader = t == PduType::c2h_term_req ? Role::host : Role::controller;
    Buf b;
    b.fill(0xee);
    const size_t n = write_term_req(b, t, TermReq{Fes::invalid_header_field, field::pdo}, offending);
    ASSERT_EQ(n, term_max_plen);
    const auto ch = common_of(b);
    EXPECT_EQ(ch.type, t);
    EXPECT_EQ(ch.flags, 0) << "TermReq never carries digests";
    EXPECT_EQ(ch.hlen, term_hlen);
    EXPECT_EQ(ch.plen, term_max_plen);
    // Digests negotiated or not, a TermReq is framed without them.
    for (const auto& n2 : {conn(), conn(true, true)}) {
      const auto res = check_common(ch, reader, n2);
      ASSERT_FALSE(res.error) << "fes " << int(res.error->fes) << " fei " << res.error->fei;
      EXPECT_EQ(res.framing.header_len, term_hlen);
      EXPECT_EQ(res.framing.data_off, term_hlen);
      EXPECT_EQ(res.framing.data_len, term_max_data);
      EXPECT_FALSE(res.framing.has_hdgst);
      EXPECT_FALSE(res.framing.has_ddgst);
      EXPECT_EQ(res.framing.total(), term_max_plen);
    }
    const auto p = parse_term_req(b);
    EXPECT_EQ(p.fes, Fes::invalid_header_field);
    EXPECT_EQ(p.fei, field::pdo);
    EXPECT_TRUE(std::equal(offending.begin(), offending.begin() + term_max_data, b.begin() + term_hlen));
  }
  // Shorter offending headers are copied whole; none at all gives a bare 24-byte PDU.
  Buf b;
  const std::span<const uint8_t> cmd(offending.data(), capsule_cmd_hlen);
  ASSERT_EQ(write_term_req(b, PduType::c2h_term_req, {Fes::header_digest_error, 0}, cmd),
            term_hlen + capsule_cmd_hlen);
  auto res = check_common(common_of(b), Role::host, conn());
  ASSERT_FALSE(res.error);
  EXPECT_EQ(res.framing.data_len, capsule_cmd_hlen);
  EXPECT_EQ(parse_term_req(b).fes, Fes::header_digest_error);
  ASSERT_EQ(write_term_req(b, PduType::h2c_term_req, {Fes::unsupported_parameter, 9}, {}), term_hlen);
  EXPECT_EQ(common_of(b).plen, term_hlen);
  res = check_common(common_of(b), Role::controller, conn());
  ASSERT_FALSE(res.error);
  EXPECT_EQ(res.framing.data_len, 0u);
  EXPECT_EQ(res.framing.total(), term_hlen);
  EXPECT_EQ(parse_term_req(b).fei, 9u);
}

TEST(RoundTrip, CapsuleCmdWithoutData) {
  const auto sqe = sample_sqe();
  Buf b;
  ASSERT_EQ(write_capsule_cmd(b, sqe, 0, {}, 0), capsule_cmd_hlen);
  auto ch = common_of(b);
  EXPECT_EQ(ch.type, PduType::capsule_cmd);
  EXPECT_EQ(ch.flags, 0);
  EXPECT_EQ(ch.hlen, capsule_cmd_hlen);
  EXPECT_EQ(ch.pdo, 0);
  EXPECT_EQ(ch.plen, capsule_cmd_hlen);
  auto res = check_common(ch, Role::controller, conn());
  ASSERT_FALSE(res.error);
  EXPECT_EQ(res.framing.data_len, 0u);
  EXPECT_EQ(res.framing.total(), capsule_cmd_hlen);
  EXPECT_EQ(parse_capsule_cmd(b).b, sqe.b);

  // Digests negotiated, no data: HDGSTF and a digest, but no DDGSTF.
  b.fill(0xee);
  ASSERT_EQ(write_capsule_cmd(b, sqe, 0, {true, true}, 0), capsule_cmd_hlen + digest_len);
  ch = common_of(b);
  EXPECT_EQ(ch.flags, flag::hdgstf);
  EXPECT_EQ(ch.pdo, 0);
  EXPECT_EQ(ch.plen, capsule_cmd_hlen + digest_len);
  EXPECT_TRUE(header_digest_ok(std::span<const uint8_t>(b.data(), ch.plen), capsule_cmd_hlen));
  res = check_common(ch, Role::controller, conn(true, true));
  ASSERT_FALSE(res.error);
  EXPECT_TRUE(res.framing.has_hdgst);
  EXPECT_FALSE(res.framing.has_ddgst);
  EXPECT_EQ(res.framing.header_len, capsule_cmd_hlen + digest_len);
  EXPECT_EQ(res.framing.total(), ch.plen);
  EXPECT_EQ(parse_capsule_cmd(b).b, sqe.b);
}

TEST(RoundTrip, CapsuleCmdWithInCapsuleData) {
  const auto sqe = sample_sqe();
  Buf b;
  ASSERT_EQ(write_capsule_cmd(b, sqe, 4096, {}, 0), capsule_cmd_hlen);
  auto ch = common_of(b);
  EXPECT_EQ(ch.flags, 0);
  EXPECT_EQ(ch.pdo, capsule_cmd_hlen);
  EXPECT_EQ(ch.plen, capsule_cmd_hlen + 4096);
  auto res = check_common(ch, Role::controller, conn());
  ASSERT_FALSE(res.error);
  EXPECT_EQ(res.framing.data_off, capsule_cmd_hlen);
  EXPECT_EQ(res.framing.data_len, 4096u);
  EXPECT_EQ(res.framing.total(), ch.plen);

  // Header and data digests: PDO after the header digest, data digest counted in PLEN.
  b.fill(0xee);
  ASSERT_EQ(write_capsule_cmd(b, sqe, 4096, {true, true}, 0), capsule_cmd_hlen + digest_len);
  ch = common_of(b);
  EXPECT_EQ(ch.flags, flag::hdgstf | flag::ddgstf);
  EXPECT_EQ(ch.pdo, capsule_cmd_hlen + digest_len);
  EXPECT_EQ(ch.plen, capsule_cmd_hlen + digest_len + 4096 + digest_len);
  EXPECT_TRUE(header_digest_ok(b, capsule_cmd_hlen));
  res = check_common(ch, Role::controller, conn(true, true));
  ASSERT_FALSE(res.error);
  EXPECT_TRUE(res.framing.has_hdgst);
  EXPECT_TRUE(res.framing.has_ddgst);
  EXPECT_EQ(res.framing.data_off, capsule_cmd_hlen + digest_len);
  EXPECT_EQ(res.framing.data_len, 4096u);
  EXPECT_EQ(res.framing.total(), ch.plen);
  EXPECT_EQ(parse_capsule_cmd(b).b, sqe.b);
}

TEST(RoundTrip, CapsuleCmdPdaAlignment) {
  const auto sqe = sample_sqe();
  for (const uint8_t pda : {uint8_t{0}, uint8_t{1}, uint8_t{2}, uint8_t{3}, uint8_t{7}, uint8_t{31}}) {
    for (const bool hd : {false, true}) {
      for (const bool dd : {false, true}) {
        SCOPED_TRACE(testing::Message() << "pda=" << int(pda) << " hdgst=" << hd << " ddgst=" << dd);
        Buf b;
        b.fill(0xee);
        const uint32_t align = (pda + 1u) * 4;
        const uint32_t hdr_end = capsule_cmd_hlen + (hd ? digest_len : 0);
        const uint32_t want_pdo = (hdr_end + align - 1) / align * align;
        const size_t n = write_capsule_cmd(b, sqe, 512, {hd, dd}, pda);
        ASSERT_EQ(n, want_pdo) << "returned length includes the padding";
        ASSERT_EQ(data_offset(capsule_cmd_hlen, hd, pda), want_pdo);
        const auto ch = common_of(b);
        EXPECT_EQ(ch.pdo, want_pdo);
        EXPECT_EQ(ch.pdo % align, 0u);
        EXPECT_EQ(ch.plen, want_pdo + 512 + (dd ? digest_len : 0));
        for (uint32_t i = hdr_end; i < want_pdo; ++i) EXPECT_EQ(b[i], 0) << "pad byte " << i;
        if (hd) {
          EXPECT_TRUE(header_digest_ok(b, capsule_cmd_hlen));
        }
        const auto res = check_common(ch, Role::controller, conn(hd, dd, pda));
        ASSERT_FALSE(res.error) << "fes " << int(res.error->fes) << " fei " << res.error->fei;
        EXPECT_EQ(res.framing.data_off, want_pdo);
        EXPECT_EQ(res.framing.data_len, 512u);
        EXPECT_EQ(res.framing.total(), ch.plen);
        EXPECT_EQ(parse_capsule_cmd(b).b, sqe.b);
      }
    }
  }
}

TEST(RoundTrip, CapsuleResp) {
  const nvme::Cqe cqe{0xdeadbeef, 0x01020304, 5, 2, 0x77, 0x4002};
  for (const bool hd : {false, true}) {
    Buf b;
    b.fill(0xee);
    const size_t n = write_capsule_resp(b, cqe, {hd, true});  // ddgst on: no data, no DDGSTF
    ASSERT_EQ(n, capsule_resp_hlen + (hd ? digest_len : 0));
    const auto ch = common_of(b);
    EXPECT_EQ(ch.type, PduType::capsule_resp);
    EXPECT_EQ(ch.flags, hd ? flag::hdgstf : 0);
    EXPECT_EQ(ch.hlen, capsule_resp_hlen);
    EXPECT_EQ(ch.pdo, 0);
    EXPECT_EQ(ch.plen, n);
    if (hd) {
      EXPECT_TRUE(header_digest_ok(b, capsule_resp_hlen));
    }
    const auto res = check_common(ch, Role::host, conn(hd, true));
    ASSERT_FALSE(res.error);
    EXPECT_EQ(res.framing.total(), n);
    const auto p = parse_capsule_resp(b);
    EXPECT_EQ(p.dw0, cqe.dw0);
    EXPECT_EQ(p.dw1, cqe.dw1);
    EXPECT_EQ(p.sqhd, cqe.sqhd);
    EXPECT_EQ(p.sqid, cqe.sqid);
    EXPECT_EQ(p.cid, cqe.cid);
    EXPECT_EQ(p.status, cqe.status);
  }
}

TEST(RoundTrip, H2CData) {
  const DataHeader h{9, 3, 8192, 65536};
  for (const bool last : {false, true}) {
    for (const bool dg : {false, true}) {
      SCOPED_TRACE(testing::Message() << "last=" << last << " digests=" << dg);
      Buf b;
      b.fill(0xee);
      const size_t n = write_h2c_data(b, h, last, {dg, dg}, 0);
      ASSERT_EQ(n, data_hlen + (dg ? digest_len : 0));
      const auto ch = common_of(b);
      EXPECT_EQ(ch.type, PduType::h2c_data);
      EXPECT_EQ(ch.flags, (last ? flag::last_pdu : 0) | (dg ? flag::hdgstf | flag::ddgstf : 0));
      EXPECT_EQ(ch.hlen, data_hlen);
      EXPECT_EQ(ch.pdo, n);
      EXPECT_EQ(ch.plen, n + h.datal + (dg ? digest_len : 0));
      EXPECT_EQ(get_le<uint32_t>(b.data(), 20), 0u) << "reserved";
      if (dg) {
        EXPECT_TRUE(header_digest_ok(b, data_hlen));
      }
      const auto res = check_common(ch, Role::controller, conn(dg, dg));
      ASSERT_FALSE(res.error);
      EXPECT_EQ(res.framing.data_off, n);
      EXPECT_EQ(res.framing.data_len, h.datal);
      EXPECT_EQ(res.framing.total(), ch.plen);
      const auto p = parse_data(b);
      EXPECT_EQ(p.cccid, h.cccid);
      EXPECT_EQ(p.ttag, h.ttag);
      EXPECT_EQ(p.datao, h.datao);
      EXPECT_EQ(p.datal, h.datal);
    }
  }
}

TEST(RoundTrip, C2HDataLastPduAndSuccess) {
  const DataHeader h{0x21, 5, 4096, 131072};
  {  // SUCCESS + LAST_PDU; extra flag bits in the argument (here HDGSTF) are not trusted
    Buf b;
    const size_t n = write_c2h_data(b, h, 0x0f, {}, 0);
    ASSERT_EQ(n, data_hlen);
    const auto ch = common_of(b);
    EXPECT_EQ(ch.type, PduType::c2h_data);
    EXPECT_EQ(ch.flags, flag::last_pdu | flag::success);
    EXPECT_EQ(ch.pdo, data_hlen);
    EXPECT_EQ(ch.plen, data_hlen + h.datal);
    const auto res = check_common(ch, Role::host, conn());
    ASSERT_FALSE(res.error);
    EXPECT_EQ(res.framing.data_len, h.datal);
    const auto p = parse_data(b);
    EXPECT_EQ(p.cccid, h.cccid);
    EXPECT_EQ(p.ttag, 0) << "C2HData has no TTAG";
    EXPECT_EQ(p.datao, h.datao);
    EXPECT_EQ(p.datal, h.datal);
  }
  {  // digests and HPDA 1 (8-byte alignment): 24 + 4 = 28 rounds up to 32
    Buf b;
    b.fill(0xee);
    const size_t n = write_c2h_data(b, h, flag::last_pdu, {true, true}, 1);
    ASSERT_EQ(n, 32u);
    const auto ch = common_of(b);
    EXPECT_EQ(ch.flags, flag::last_pdu | flag::hdgstf | flag::ddgstf);
    EXPECT_EQ(ch.pdo, 32);
    EXPECT_EQ(ch.plen, 32 + h.datal + digest_len);
    EXPECT_EQ(b[28], 0);
    EXPECT_EQ(b[31], 0);
    EXPECT_TRUE(header_digest_ok(b, data_hlen));
    const auto res = check_common(ch, Role::host, conn(true, true, 1));
    ASSERT_FALSE(res.error);
    EXPECT_EQ(res.framing.data_off, 32u);
    EXPECT_EQ(res.framing.data_len, h.datal);
    EXPECT_EQ(res.framing.total(), ch.plen);
  }
  {  // not the last PDU
    Buf b;
    write_c2h_data(b, h, 0, {}, 0);
    EXPECT_EQ(common_of(b).flags, 0);
  }
}

TEST(RoundTrip, R2T) {
  const R2t r{4, 7, 4096, 131072};
  for (const bool dg : {false, true}) {
    Buf b;
    b.fill(0xee);
    const size_t n = write_r2t(b, r, {dg, dg});
    ASSERT_EQ(n, data_hlen + (dg ? digest_len : 0));
    const auto ch = common_of(b);
    EXPECT_EQ(ch.type, PduType::r2t);
    EXPECT_EQ(ch.flags, dg ? flag::hdgstf : 0);
    EXPECT_EQ(ch.hlen, data_hlen);
    EXPECT_EQ(ch.pdo, 0);
    EXPECT_EQ(ch.plen, n);
    EXPECT_EQ(get_le<uint32_t>(b.data(), 20), 0u) << "reserved";
    if (dg) {
      EXPECT_TRUE(header_digest_ok(b, data_hlen));
    }
    const auto res = check_common(ch, Role::host, conn(dg, dg));
    ASSERT_FALSE(res.error);
    EXPECT_EQ(res.framing.total(), n);
    const auto p = parse_r2t(b);
    EXPECT_EQ(p.cccid, r.cccid);
    EXPECT_EQ(p.ttag, r.ttag);
    EXPECT_EQ(p.r2to, r.r2to);
    EXPECT_EQ(p.r2tl, r.r2tl);
  }
}

// ------------------------------------------------------------------ check_common rejections

TEST(CheckCommon, WellFormedHeadersPass) {
  const auto c = Role::controller, h = Role::host;
  expect_ok(hdr(PduType::icreq, 0, 128, 0, 128), c, before_ic());
  expect_ok(hdr(PduType::icresp, 0, 128, 0, 128), h, before_ic());
  expect_ok(hdr(PduType::capsule_cmd, 0, 72, 0, 72), c, conn());
  expect_ok(hdr(PduType::capsule_cmd, 0, 72, 72, 72 + 8), c, conn());
  expect_ok(hdr(PduType::capsule_resp, 0, 24, 0, 24), h, conn());
  expect_ok(hdr(PduType::h2c_data, flag::last_pdu, 24, 24, 24 + 512), c, conn());
  expect_ok(hdr(PduType::c2h_data, flag::last_pdu | flag::success, 24, 24, 24 + 512), h, conn());
  expect_ok(hdr(PduType::r2t, 0, 24, 0, 24), h, conn());
  expect_ok(hdr(PduType::h2c_term_req, 0, 24, 0, 24), c, conn());
  expect_ok(hdr(PduType::c2h_term_req, 0, 24, 24, 152), h, conn());
  // Digests: header digest inside PLEN, data after it, data digest at the end.
  expect_ok(hdr(PduType::capsule_cmd, 3, 72, 76, 76 + 512 + 4), c, conn(true, true));
  expect_ok(hdr(PduType::capsule_resp, 1, 24, 0, 28), h, conn(true, true));
  expect_ok(hdr(PduType::r2t, 1, 24, 0, 28), h, conn(true, true));
  expect_ok(hdr(PduType::h2c_data, 3 | flag::last_pdu, 24, 28, 28 + 512 + 4), c, conn(true, true));
  expect_ok(hdr(PduType::c2h_data, 3, 24, 28, 28 + 512 + 4), h, conn(true, true));
}

TEST(CheckCommon, UnknownTypeFei0) {
  for (const uint8_t t : {uint8_t{0x08}, uint8_t{0x0a}, uint8_t{0x0b}, uint8_t{0x10}, uint8_t{0x7f}, uint8_t{0xff}}) {
    for (const Role r : {Role::controller, Role::host}) {
      expect_error(hdr_raw(t, 0, 24, 0, 24), r, conn(), Fes::invalid_header_field, field::type);
      expect_error(hdr_raw(t, 0, 24, 0, 24), r, before_ic(), Fes::invalid_header_field, field::type);
    }
  }
}

TEST(CheckCommon, WrongDirectionTypeFei0) {
  // A controller only reads host-to-controller PDUs ...
  expect_error(hdr(PduType::icresp, 0, 128, 0, 128), Role::controller, before_ic(), Fes::invalid_header_field, 0);
  expect_error(hdr(PduType::c2h_term_req, 0, 24, 0, 24), Role::controller, conn(), Fes::invalid_header_field, 0);
  expect_error(hdr(PduType::capsule_resp, 0, 24, 0, 24), Role::controller, conn(), Fes::invalid_header_field, 0);
  expect_error(hdr(PduType::c2h_data, 4, 24, 24, 536), Role::controller, conn(), Fes::invalid_header_field, 0);
  expect_error(hdr(PduType::r2t, 0, 24, 0, 24), Role::controller, conn(), Fes::invalid_header_field, 0);
  // ... and a host only controller-to-host PDUs.
  expect_error(hdr(PduType::icreq, 0, 128, 0, 128), Role::host, before_ic(), Fes::invalid_header_field, 0);
  expect_error(hdr(PduType::h2c_term_req, 0, 24, 0, 24), Role::host, conn(), Fes::invalid_header_field, 0);
  expect_error(hdr(PduType::capsule_cmd, 0, 72, 0, 72), Role::host, conn(), Fes::invalid_header_field, 0);
  expect_error(hdr(PduType::h2c_data, 4, 24, 24, 536), Role::host, conn(), Fes::invalid_header_field, 0);
}

TEST(CheckCommon, IcPduAfterConnectionIsSequenceError) {
  expect_error(hdr(PduType::icreq, 0, 128, 0, 128), Role::controller, conn(), Fes::pdu_sequence_error, 0);
  expect_error(hdr(PduType::icreq, 0, 128, 0, 128), Role::controller, conn(true, true), Fes::pdu_sequence_error, 0);
  expect_error(hdr(PduType::icresp, 0, 128, 0, 128), Role::host, conn(), Fes::pdu_sequence_error, 0);
}

TEST(CheckCommon, NonIcPduBeforeConnectionIsSequenceError) {
  expect_error(hdr(PduType::capsule_cmd, 0, 72, 0, 72), Role::controller, before_ic(), Fes::pdu_sequence_error, 0);
  expect_error(hdr(PduType::h2c_data, 4, 24, 24, 536), Role::controller, before_ic(), Fes::pdu_sequence_error, 0);
  expect_error(hdr(PduType::capsule_resp, 0, 24, 0, 24), Role::host, before_ic(), Fes::pdu_sequence_error, 0);
  expect_error(hdr(PduType::c2h_data, 4, 24, 24, 536), Role::host, before_ic(), Fes::pdu_sequence_error, 0);
  expect_error(hdr(PduType::r2t, 0, 24, 0, 24), Role::host, before_ic(), Fes::pdu_sequence_error, 0);
}

TEST(CheckCommon, TermReqIsValidBeforeTheIcExchange) {
  // A controller that refuses an ICReq answers with a C2HTermReq instead of an ICResp; the
  // host must be able to read it (and the controller an H2CTermReq) at any point.
  expect_ok(hdr(PduType::c2h_term_req, 0, 24, 0, 24 + 128), Role::host, before_ic());
  expect_ok(hdr(PduType::h2c_term_req, 0, 24, 0, 24), Role::controller, before_ic());
}

TEST(CheckCommon, BadHlenFei2) {
  const auto c = Role::controller, h = Role::host;
  expect_error(hdr(PduType::icreq, 0, 127, 0, 128), c, before_ic(), Fes::invalid_header_field, field::hlen);
  expect_error(hdr(PduType::icresp, 0, 0, 0, 128), h, before_ic(), Fes::invalid_header_field, field::hlen);
  for (const uint8_t hl : {uint8_t{0}, uint8_t{8}, uint8_t{71}, uint8_t{73}, uint8_t{76}, uint8_t{128}})
    expect_error(hdr(PduType::capsule_cmd, 0, hl, 0, 72), c, conn(), Fes::invalid_header_field, field::hlen);
  expect_error(hdr(PduType::capsule_resp, 0, 16, 0, 24), h, conn(), Fes::invalid_header_field, field::hlen);
  // An HLEN that counts the header digest is wrong too.
  expect_error(hdr(PduType::h2c_data, 3, 28, 28, 28 + 512 + 4), c, conn(true, true), Fes::invalid_header_field,
               field::hlen);
  expect_error(hdr(PduType::r2t, 0, 32, 0, 32), h, conn(), Fes::invalid_header_field, field::hlen);
  expect_error(hdr(PduType::c2h_term_req, 0, 8, 0, 24), h, conn(), Fes::invalid_header_field, field::hlen);
}

TEST(CheckCommon, HeaderDigestFlagMismatchFei1) {
  const auto c = Role::controller, h = Role::host;
  // HDGSTF set but header digests were not negotiated ...
  expect_error(hdr(PduType::capsule_cmd, flag::hdgstf, 72, 0, 76), c, conn(), Fes::invalid_header_field, field::flags);
  expect_error(hdr(PduType::capsule_resp, flag::hdgstf, 24, 0, 28), h, conn(), Fes::invalid_header_field, field::flags);
  expect_error(hdr(PduType::r2t, flag::hdgstf, 24, 0, 28), h, conn(), Fes::invalid_header_field, field::flags);
  // ... or negotiated and missing.
  expect_error(hdr(PduType::capsule_cmd, 0, 72, 0, 72), c, conn(true), Fes::invalid_header_field, field::flags);
  expect_error(hdr(PduType::capsule_resp, 0, 24, 0, 24), h, conn(true), Fes::invalid_header_field, field::flags);
  expect_error(hdr(PduType::h2c_data, flag::ddgstf, 24, 24, 24 + 516), c, conn(true, true), Fes::invalid_header_field,
               field::flags);
  expect_error(hdr(PduType::c2h_data, flag::ddgstf, 24, 24, 24 + 516), h, conn(true, true), Fes::invalid_header_field,
               field::flags);
}

TEST(CheckCommon, PlenShorterThanHeaderFei4) {
  const auto c = Role::controller, h = Role::host;
  expect_error(hdr(PduType::icreq, 0, 128, 0, 100), c, before_ic(), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::capsule_cmd, 0, 72, 0, 71), c, conn(), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::capsule_cmd, 0, 72, 0, 0), c, conn(), Fes::invalid_header_field, field::plen);
  // With header digests the digest belongs to the header: PLEN 72 is short by 4.
  expect_error(hdr(PduType::capsule_cmd, flag::hdgstf, 72, 0, 72), c, conn(true), Fes::invalid_header_field,
               field::plen);
  expect_error(hdr(PduType::capsule_resp, 0, 24, 0, 23), h, conn(), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::r2t, flag::hdgstf, 24, 0, 24), h, conn(true), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::c2h_term_req, 0, 24, 0, 20), h, conn(), Fes::invalid_header_field, field::plen);
}

TEST(CheckCommon, DataOnPduTypeWithoutDataFei4) {
  const auto c = Role::controller, h = Role::host;
  expect_error(hdr(PduType::icreq, 0, 128, 0, 132), c, before_ic(), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::icresp, 0, 128, 128, 256), h, before_ic(), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::capsule_resp, 0, 24, 0, 28), h, conn(), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::capsule_resp, 0, 24, 24, 24 + 4096), h, conn(), Fes::invalid_header_field, field::plen);
  expect_error(hdr(PduType::r2t, flag::hdgstf, 24, 28, 28 + 512), h, conn(true), Fes::invalid_header_field,
               field::plen);
}

TEST(CheckCommon, PdoBelowHeaderOrMisalignedFei3) {
  const auto c = Role::controller, h = Role::host;
  expect_error(hdr(PduType::capsule_cmd, 0, 72, 0, 72 + 512), c, conn(), Fes::invalid_header_field, field::pdo);
  expect_error(hdr(PduType::capsule_cmd, 0, 72, 64, 72 + 512), c, conn(), Fes::invalid_header_field, field::pdo);
  expect_error(hdr(PduType::h2c_data, 0, 24, 8, 24 + 512), c, conn(), Fes::invalid_header_field, field::pdo);
  // Data may not start inside the header digest.
  expect_error(hdr(PduType::capsule_cmd, 1, 72, 72, 76 + 512), c, conn(true), Fes::invalid_header_field, field::pdo);
  expect_error(hdr(PduType::c2h_data, 1, 24, 24, 28 + 512), h, conn(true), Fes::invalid_header_field, field::pdo);
  // PDA 3: data must start on a 16-byte boundary (76 is not, 80 is).
  expect_error(hdr(PduType::capsule_cmd, 1, 72, 76, 76 + 512), c, conn(true, false, 3), Fes::invalid_header_field,
               field::pdo);
  expect_ok(hdr(PduType::capsule_cmd, 1, 72, 80, 80 + 512), c, conn(true, false, 3));
  // PDA 1 (8 bytes) on data PDUs: 28 is misaligned, 32 is fine.
  expect_error(hdr(PduType::h2c_data, 3, 24, 28, 28 + 512 + 4), c, conn(true, true, 1), Fes::invalid_header_field,
               field::pdo);
  expect_ok(hdr(PduType::h2c_data, 3, 24, 32, 32 + 512 + 4), c, conn(true, true, 1));
  expect_error(hdr(PduType::c2h_data, 0, 24, 26, 26 + 512), h, conn(), Fes::invalid_header_field, field::pdo);
  // PDA 31: 128-byte alignment.
  expect_error(hdr(PduType::c2h_data, 0, 24, 64, 64 + 512), h, conn(false, false, 31), Fes::invalid_header_field,
               field::pdo);
  expect_ok(hdr(PduType::c2h_data, 0, 24, 128, 128 + 512), h, conn(false, false, 31));
}

TEST(CheckCommon, DataDigestFlagMismatchFei1) {
  const auto c = Role::controller, h = Role::host;
  // Data digests negotiated, data present, DDGSTF missing.
  expect_error(hdr(PduType::capsule_cmd, flag::hdgstf, 72, 76, 76 + 512 + 4), c, conn(true, true),
               Fes::invalid_header_field, field::flags);
  expect_error(hdr(PduType::h2c_data, 0, 24, 24, 24 + 516), c, conn(false, true), Fes::invalid_header_field,
               field::flags);
  expect_error(hdr(PduType::c2h_data, flag::last_pdu, 24, 24, 24 + 516), h, conn(false, true),
               Fes::invalid_header_field, field::flags);
  // Not negotiated, DDGSTF set.
  expect_error(hdr(PduType::capsule_cmd, flag::ddgstf, 72, 72, 72 + 512 + 4), c, conn(), Fes::invalid_header_field,
               field::flags);
  expect_error(hdr(PduType::c2h_data, flag::ddgstf, 24, 24, 24 + 516), h, conn(), Fes::invalid_header_field,
               field::flags);
  // DDGSTF on a PDU without data, negotiated or not.
  expect_error(hdr(PduType::capsule_cmd, flag::hdgstf | flag::ddgstf, 72, 0, 76), c, conn(true, true),
               Fes::invalid_header_field, field::flags);
  expect_error(hdr(PduType::capsule_resp, flag::ddgstf, 24, 0, 24), h, conn(false, true), Fes::invalid_header_field,
               field::flags);
  expect_error(hdr(PduType::r2t, flag::ddgstf, 24, 0, 24), h, conn(), Fes::invalid_header_field, field::flags);
}

TEST(CheckCommon, DataPduWhosePlenEndsBeforeItsDataFei4) {
  const auto c = Role::controller;
  // PDO past PLEN.
  expect_error(hdr(PduType::h2c_data, 0, 24, 32, 30), c, conn(), Fes::invalid_header_field, field::plen);
  // Room for the data digest only, no data byte.
  expect_error(hdr(PduType::h2c_data, flag::ddgstf, 24, 24, 28), c, conn(false, true), Fes::invalid_header_field,
               field::plen);
}

TEST(CheckCommon, TermReqPlenOver152Fei4) {
  const auto c = Role::controller, h = Role::host;
  expect_ok(hdr(PduType::c2h_term_req, 0, 24, 24, 152), h, conn());
  expect_ok(hdr(PduType::h2c_term_req, 0, 24, 24, 152), c, conn(true, true));
  for (const uint32_t plen : {153u, 256u, 4096u, 0xffffffffu}) {
    expect_error(hdr(PduType::c2h_term_req, 0, 24, 24, plen), h, conn(), Fes::invalid_header_field, field::plen);
    expect_error(hdr(PduType::h2c_term_req, 0, 24, 24, plen), c, conn(), Fes::invalid_header_field, field::plen);
  }
}

// ------------------------------------------------------------------------- pcap reader + walker

// A TCP byte stream of one direction, rebuilt from captured segments.
struct Flow {
  bool syn = false;
  uint32_t isn = 0;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> segs;  // seq, payload
};

struct FlowKey {
  uint32_t src = 0, dst = 0;
  uint16_t sport = 0, dport = 0;
  auto tie() const { return std::tie(src, sport, dst, dport); }
  bool operator<(const FlowKey& o) const { return tie() < o.tie(); }
  FlowKey reversed() const { return FlowKey{dst, src, dport, sport}; }
};

struct Capture {
  // Every flow per 4-tuple; a SYN on a 4-tuple that already carried data starts a new one.
  std::map<FlowKey, std::vector<Flow>> flows;
  size_t frames = 0, tcp_segments = 0, truncated_frames = 0;
};

class Bytes {
 public:
  explicit Bytes(std::span<const uint8_t> b, bool swap = false) : b_(b), swap_(swap) {}
  bool has(size_t off, size_t n) const { return off <= b_.size() && n <= b_.size() - off; }
  uint16_t u16(size_t off) const {
    const uint16_t v = get_le<uint16_t>(b_.data(), off);
    return swap_ ? static_cast<uint16_t>((v >> 8) | (v << 8)) : v;
  }
  uint32_t u32(size_t off) const {
    const uint32_t v = get_le<uint32_t>(b_.data(), off);
    return swap_ ? __builtin_bswap32(v) : v;
  }

 private:
  std::span<const uint8_t> b_;
  bool swap_;
};

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// One link-layer frame: find IPv4/TCP and record the segment.
void add_frame(Capture& cap, uint32_t linktype, std::span<const uint8_t> f, uint32_t orig_len) {
  ++cap.frames;
  size_t ip = 0;
  switch (linktype) {
    case 1: {  // Ethernet, optionally VLAN-tagged
      size_t off = 12;
      if (f.size() < 14) return;
      uint16_t et = be16(&f[off]);
      while ((et == 0x8100 || et == 0x88a8) && f.size() >= off + 6) {
        off += 4;
        et = be16(&f[off]);
      }
      if (et != 0x0800) return;
      ip = off + 2;
      break;
    }
    case 113:  // Linux cooked v1
      if (f.size() < 16 || be16(&f[14]) != 0x0800) return;
      ip = 16;
      break;
    case 276:  // Linux cooked v2
      if (f.size() < 20 || be16(&f[0]) != 0x0800) return;
      ip = 20;
      break;
    case 0:  // BSD loopback: host-order address family
      if (f.size() < 4 || (get_le<uint32_t>(f.data(), 0) != 2 && be32(&f[0]) != 2)) return;
      ip = 4;
      break;
    case 12:
    case 101:
    case 228:  // raw IPv4
      ip = 0;
      break;
    default:
      return;
  }
  if (f.size() < ip + 20 || (f[ip] >> 4) != 4) return;
  const size_t ihl = (f[ip] & 0x0f) * 4u;
  const size_t total = be16(&f[ip + 2]);
  if (f[ip + 9] != 6 || ihl < 20 || total < ihl) return;
  if ((be16(&f[ip + 6]) & 0x3fff) != 0) return;  // fragments: not on loopback NVMe/TCP traffic
  const size_t tcp = ip + ihl;
  if (f.size() < tcp + 20) {
    ++cap.truncated_frames;
    return;
  }
  const size_t thl = (f[tcp + 12] >> 4) * 4u;
  if (thl < 20 || total < ihl + thl) return;
  const size_t payload_len = total - ihl - thl;
  const size_t payload = tcp + thl;
  FlowKey k{be32(&f[ip + 12]), be32(&f[ip + 16]), be16(&f[tcp]), be16(&f[tcp + 2])};
  const uint32_t seq = be32(&f[tcp + 4]);
  const uint8_t flags = f[tcp + 13];
  auto& list = cap.flows[k];
  if (flags & 0x02) {  // SYN
    if (list.empty() || list.back().syn || !list.back().segs.empty()) list.emplace_back();
    list.back().syn = true;
    list.back().isn = seq;
  }
  if (payload_len == 0) return;
  if (f.size() < payload + payload_len || orig_len < f.size()) {
    ++cap.truncated_frames;  // snapped: leaves a hole, the stream ends there
    return;
  }
  if (list.empty()) list.emplace_back();
  ++cap.tcp_segments;
  list.back().segs.emplace_back(seq, std::vector<uint8_t>(f.begin() + payload, f.begin() + payload + payload_len));
}

// Classic libpcap (either byte order, usec or nsec) and pcapng (EPB, SPB, obsolete PB).
std::optional<Capture> read_capture(const std::filesystem::path& p, std::string& err) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    err = "cannot open " + p.string();
    return std::nullopt;
  }
  const std::vector<uint8_t> d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Capture cap;
  if (d.size() < 24) {
    err = "too short for a capture file";
    return std::nullopt;
  }
  const uint32_t magic = get_le<uint32_t>(d.data(), 0);
  if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d || magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) {
    const Bytes b(d, magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1);
    const uint32_t linktype = b.u32(20) & 0x0fffffff;
    size_t off = 24;
    while (b.has(off, 16)) {
      const uint32_t incl = b.u32(off + 8), orig = b.u32(off + 12);
      if (!b.has(off + 16, incl)) {
        err = "truncated record at offset " + std::to_string(off);
        break;  // keep what was read: a capture cut short mid-record
      }
      add_frame(cap, linktype, std::span<const uint8_t>(d.data() + off + 16, incl), orig);
      off += 16 + incl;
    }
    return cap;
  }
  if (magic == 0x0a0d0d0a) {  // pcapng
    std::vector<uint32_t> iface_linktype;
    bool swap = false;
    size_t off = 0;
    while (off + 12 <= d.size()) {
      const uint32_t raw_type = get_le<uint32_t>(d.data(), off);
      if (raw_type == 0x0a0d0d0a) {  // section header: byte order and a fresh interface list
        const uint32_t bom = get_le<uint32_t>(d.data(), off + 8);
        if (bom != 0x1a2b3c4d && bom != 0x4d3c2b1a) {
          err = "bad pcapng byte-order magic";
          return std::nullopt;
        }
        swap = bom == 0x4d3c2b1a;
        iface_linktype.clear();
      }
      const Bytes b(d, swap);
      const uint32_t type = b.u32(off), len = b.u32(off + 4);
      if (len < 12 || len % 4 != 0 || !b.has(off, len)) {
        err = "bad pcapng block at offset " + std::to_string(off);
        break;
      }
      if (type == 1 && len >= 20) {
        iface_linktype.push_back(b.u16(off + 8));
      } else if ((type == 6 || type == 2) && len >= 32) {
        const uint32_t iface = type == 6 ? b.u32(off + 8) : b.u16(off + 8);
        const uint32_t caplen = b.u32(off + 20), orig = b.u32(off + 24);
        if (iface < iface_linktype.size() && caplen <= len - 32)
          add_frame(cap, iface_linktype[iface], std::span<const uint8_t>(d.data() + off + 28, caplen), orig);
      } else if (type == 3 && len >= 16 && !iface_linktype.empty()) {
        const uint32_t orig = b.u32(off + 8);
        const uint32_t caplen = std::min<uint32_t>(orig, len - 16);
        add_frame(cap, iface_linktype[0], std::span<const uint8_t>(d.data() + off + 12, caplen), orig);
      }
      off += len;
    }
    return cap;
  }
  err = "not a pcap or pcapng file";
  return std::nullopt;
}

// Orders segments by sequence number (relative to the ISN when the SYN was captured, else to
// the lowest one), drops retransmitted/overlapping bytes, and stops at the first hole.
struct Stream {
  std::vector<uint8_t> bytes;
  bool from_syn = false;
  bool hole = false;
};

Stream reassemble(const Flow& f) {
  Stream s;
  s.from_syn = f.syn;
  if (f.segs.empty()) return s;
  uint32_t base = f.syn ? f.isn + 1 : f.segs.front().first;
  if (!f.syn) {
    for (const auto& seg : f.segs)
      if (static_cast<int32_t>(seg.first - base) < 0) base = seg.first;
  }
  std::vector<std::pair<int64_t, const std::vector<uint8_t>*>> order;
  for (const auto& seg : f.segs) order.emplace_back(static_cast<int32_t>(seg.first - base), &seg.second);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [off, data] : order) {
    const int64_t end = off + static_cast<int64_t>(data->size());
    const auto have = static_cast<int64_t>(s.bytes.size());
    if (end <= have) continue;  // retransmission
    if (off > have) {
      s.hole = true;
      break;
    }
    s.bytes.insert(s.bytes.end(), data->begin() + (have - off), data->end());
  }
  return s;
}

// Where the first ICReq (or ICResp) starts: offset 0 when the stream starts at the SYN, else
// the first 8 bytes that look like its common header (the capture started mid-stream).
std::optional<size_t> find_ic_start(const std::vector<uint8_t>& s, PduType t, bool from_syn) {
  const std::array<uint8_t, 8> pat{static_cast<uint8_t>(t), 0, ic_hlen, 0, ic_hlen, 0, 0, 0};
  if (from_syn) {
    if (s.size() >= ch_len && std::equal(pat.begin(), pat.end(), s.begin())) return 0;
    return std::nullopt;
  }
  const auto it = std::search(s.begin(), s.end(), pat.begin(), pat.end());
  if (it == s.end()) return std::nullopt;
  return static_cast<size_t>(it - s.begin());
}

struct WalkStats {
  std::map<PduType, size_t> types;
  size_t connections = 0, skipped = 0, hdgst_verified = 0, ddgst_verified = 0, incomplete_tail = 0;
  std::vector<std::string> errors;
};

// Walks one direction's PDUs from an ICReq/ICResp on with parse_common + check_common, the way
// a receiver does, verifying digests and the type-specific lengths.
void walk(const std::vector<uint8_t>& s, size_t start, Role role, Negotiated after_ic, const std::string& where,
          WalkStats& st) {
  Negotiated n;  // before the IC exchange
  size_t off = start;
  while (off + ch_len <= s.size()) {
    const auto ch = parse_common(std::span<const uint8_t, ch_len>(s.data() + off, ch_len));
    const auto res = check_common(ch, role, n);
    auto error = [&](const std::string& what) {
      st.errors.push_back(where + " @" + std::to_string(off) + " " + describe(ch) + ": " + what);
    };
    if (res.error) {
      error("check_common fes=" + std::to_string(int(res.error->fes)) + " fei=" + std::to_string(res.error->fei));
      return;
    }
    const Framing& f = res.framing;
    if (f.total() != ch.plen) error("framing total " + std::to_string(f.total()) + " != plen");
    if (s.size() - off < ch.plen) {
      st.incomplete_tail += s.size() - off;  // the capture ends inside this PDU
      return;
    }
    const std::span<const uint8_t> pdu(s.data() + off, ch.plen);
    if (f.has_hdgst) {
      if (!header_digest_ok(pdu.first(f.header_len), ch.hlen)) {
        error("header digest mismatch");
        return;
      }
      ++st.hdgst_verified;
    }
    if (f.has_ddgst && f.data_len > 0) {
      if (crc32c(pdu.data() + f.data_off, f.data_len) != get_le<uint32_t>(pdu.data(), f.data_off + f.data_len)) {
        error("data digest mismatch");
        return;
      }
      ++st.ddgst_verified;
    }
    switch (ch.type) {
      case PduType::icreq:
      case PduType::icresp:
        n = after_ic;
        break;
      case PduType::capsule_cmd:
        if (f.data_len > 0) {
          const auto sqe = parse_capsule_cmd(pdu);
          if (sqe.sgl_id() != nvme::sgl_data_block_offset) error("in-capsule data without an offset SGL");
          if (sqe.sgl_length() != f.data_len) error("SGL length != in-capsule data length");
        }
        break;
      case PduType::h2c_data:
      case PduType::c2h_data:
        if (parse_data(pdu).datal != f.data_len) error("DATAL != data bytes in PDU");
        break;
      case PduType::r2t:
        if (parse_r2t(pdu).r2tl == 0) error("R2T of 0 bytes");
        break;
      default:
        break;
    }
    ++st.types[ch.type];
    off += ch.plen;
  }
  if (off < s.size()) st.incomplete_tail += s.size() - off;
}

void walk_capture(const Capture& cap, uint16_t port, const std::string& name, WalkStats& st) {
  for (const auto& [key, h2c_flows] : cap.flows) {
    if (key.dport != port) continue;  // host -> controller; the reverse key is the other half
    const auto rev = cap.flows.find(key.reversed());
    for (size_t i = 0; i < h2c_flows.size(); ++i) {
      const Stream h2c = reassemble(h2c_flows[i]);
      const Stream c2h = rev != cap.flows.end() && i < rev->second.size() ? reassemble(rev->second[i]) : Stream{};
      const std::string where = name + " :" + std::to_string(key.sport);
      const auto req_at = find_ic_start(h2c.bytes, PduType::icreq, h2c.from_syn);
      const auto resp_at = find_ic_start(c2h.bytes, PduType::icresp, c2h.from_syn);
      if (!req_at) {  // no ICReq captured: digests and alignment unknown, cannot frame it
        ++st.skipped;
        continue;
      }
      ++st.connections;
      const IcReq req = h2c.bytes.size() >= *req_at + ic_hlen
                            ? parse_icreq(std::span<const uint8_t>(h2c.bytes).subspan(*req_at))
                            : IcReq{};
      const IcResp resp = resp_at && c2h.bytes.size() >= *resp_at + ic_hlen
                              ? parse_icresp(std::span<const uint8_t>(c2h.bytes).subspan(*resp_at))
                              : IcResp{};
      // The controller receives with the CPDA it chose, the host with the HPDA it asked for.
      walk(h2c.bytes, *req_at, Role::controller, Negotiated{true, resp.hdgst, resp.ddgst, resp.cpda}, where + " h2c",
           st);
      if (resp_at)
        walk(c2h.bytes, *resp_at, Role::host, Negotiated{true, resp.hdgst, resp.ddgst, req.hpda}, where + " c2h", st);
    }
  }
}

std::filesystem::path traces_dir() {
  if (const char* e = std::getenv("NVMETUNE_INTEROP_TRACES")) return e;
  return test_support::source_dir() / ".." / "shared" / "interop" / "traces";
}

std::string type_name(PduType t) {
  switch (t) {
    case PduType::icreq: return "ICReq";
    case PduType::icresp: return "ICResp";
    case PduType::h2c_term_req: return "H2CTermReq";
    case PduType::c2h_term_req: return "C2HTermReq";
    case PduType::capsule_cmd: return "CapsuleCmd";
    case PduType::capsule_resp: return "CapsuleResp";
    case PduType::h2c_data: return "H2CData";
    case PduType::c2h_data: return "C2HData";
    case PduType::r2t: return "R2T";
  }
  return "type" + std::to_string(int(static_cast<uint8_t>(t)));
}

// ----------------------------------------------------------------- reader/walker self-checks

TEST(TraceWalker, ReassemblesOutOfOrderRetransmittedAndOverlapping) {
  Flow f;
  f.syn = true;
  f.isn = 0xfffffff0;  // the sequence space wraps inside the stream
  auto seg = [&](uint32_t rel, std::initializer_list<uint8_t> b) { f.segs.emplace_back(f.isn + 1 + rel, b); };
  seg(4, {4, 5, 6, 7});
  seg(0, {0, 1, 2, 3});
  seg(0, {0, 1, 2, 3});            // retransmission
  seg(6, {6, 7, 8, 9, 10});        // overlaps the tail
  seg(20, {20, 21});               // after a hole
  const Stream s = reassemble(f);
  EXPECT_EQ(s.bytes, (std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_TRUE(s.hole);
}

TEST(TraceWalker, MidStreamStartBeginsAtFirstIcPdu) {
  // A capture that starts mid-stream: garbage (the tail of an earlier PDU), then a complete
  // exchange with digests and PDA 1 written by the codec.
  std::vector<uint8_t> h2c(37, 0x5a), c2h(11, 0xa5);
  Buf b;
  auto put = [&](std::vector<uint8_t>& s, size_t hdr_len, uint32_t data_len, bool ddgst) {
    s.insert(s.end(), b.begin(), b.begin() + hdr_len);
    std::vector<uint8_t> data(data_len);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13);
    s.insert(s.end(), data.begin(), data.end());
    if (ddgst && data_len) {
      std::array<uint8_t, 4> dg{};
      nvme::put_le(dg.data(), 0, crc32c(data.data(), data.size()));
      s.insert(s.end(), dg.begin(), dg.end());
    }
  };
  put(h2c, write_icreq(b, IcReq{0, 1, true, true, 0}), 0, false);
  put(c2h, write_icresp(b, IcResp{0, 0, true, true, 131072}), 0, false);
  put(h2c, write_capsule_cmd(b, sample_sqe(), 4096, {true, true}, 0), 4096, true);
  put(c2h, write_r2t(b, R2t{1, 2, 0, 8192}, {true, true}), 0, false);
  put(h2c, write_h2c_data(b, DataHeader{1, 2, 0, 8192}, true, {true, true}, 0), 8192, true);
  put(c2h, write_c2h_data(b, DataHeader{1, 0, 0, 512}, flag::last_pdu | flag::success, {true, true}, 1), 512, true);
  put(c2h, write_capsule_resp(b, nvme::Cqe{}, {true, true}), 0, false);
  h2c.resize(h2c.size() - 100);  // the capture also ends inside the last PDU

  const auto req_at = find_ic_start(h2c, PduType::icreq, false);
  const auto resp_at = find_ic_start(c2h, PduType::icresp, false);
  ASSERT_EQ(req_at, 37u);
  ASSERT_EQ(resp_at, 11u);
  EXPECT_FALSE(find_ic_start(h2c, PduType::icreq, true)) << "from a SYN, the ICReq must be first";
  WalkStats st;
  walk(h2c, *req_at, Role::controller, Negotiated{true, true, true, 0}, "synthetic h2c", st);
  walk(c2h, *resp_at, Role::host, Negotiated{true, true, true, 1}, "synthetic c2h", st);
  EXPECT_TRUE(st.errors.empty()) << st.errors.front();
  EXPECT_EQ(st.types[PduType::icreq], 1u);
  EXPECT_EQ(st.types[PduType::icresp], 1u);
  EXPECT_EQ(st.types[PduType::capsule_cmd], 1u);
  EXPECT_EQ(st.types[PduType::r2t], 1u);
  EXPECT_EQ(st.types[PduType::h2c_data], 0u) << "cut short by the capture";
  EXPECT_EQ(st.types[PduType::c2h_data], 1u);
  EXPECT_EQ(st.types[PduType::capsule_resp], 1u);
  EXPECT_EQ(st.hdgst_verified, 4u);
  EXPECT_EQ(st.ddgst_verified, 2u);
  EXPECT_GT(st.incomplete_tail, 0u);

  // A corrupted data byte is a data digest mismatch; a corrupted header a header digest one.
  auto bad = c2h;
  bad[*resp_at + ic_hlen + 28 + 32 + 7] ^= 1;  // inside the C2HData payload (after R2T+digest, PDO 32)
  WalkStats st2;
  walk(bad, *resp_at, Role::host, Negotiated{true, true, true, 1}, "corrupt", st2);
  ASSERT_EQ(st2.errors.size(), 1u);
  EXPECT_NE(st2.errors[0].find("data digest mismatch"), std::string::npos) << st2.errors[0];
  bad = c2h;
  bad[*resp_at + ic_hlen + 12] ^= 1;  // R2TO of the R2T
  WalkStats st3;
  walk(bad, *resp_at, Role::host, Negotiated{true, true, true, 1}, "corrupt", st3);
  ASSERT_EQ(st3.errors.size(), 1u);
  EXPECT_NE(st3.errors[0].find("header digest mismatch"), std::string::npos) << st3.errors[0];
}

// ------------------------------------------------------------------------- the Linux traces

TEST(LinuxTraces, EveryPduOfKernelHostAndTargetPassesTheCodec) {
  const auto dir = traces_dir();
  ASSERT_TRUE(std::filesystem::is_directory(dir))
      << "no trace directory " << dir
      << " (../shared/interop/traces from NVMETUNE_SOURCE_DIR, which CTest sets; or set NVMETUNE_INTEROP_TRACES)";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".pcap" || e.path().extension() == ".pcapng") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no *.pcap in " << dir;
  bool saw_digests_trace = false;
  for (const auto& p : files) {
    SCOPED_TRACE(p.filename().string());
    std::string err;
    const auto cap = read_capture(p, err);
    ASSERT_TRUE(cap) << err;
    WalkStats st;
    walk_capture(*cap, 4420, p.filename().string(), st);
    std::ostringstream summary;
    summary << p.filename().string() << ": " << cap->frames << " frames, " << cap->tcp_segments << " segments, "
            << st.connections << " connections (" << st.skipped << " without ICReq), " << st.hdgst_verified
            << " header / " << st.ddgst_verified << " data digests verified, " << st.incomplete_tail
            << " bytes in PDUs cut off by the capture end;";
    for (const auto& [t, c] : st.types) summary << " " << type_name(t) << "=" << c;
    std::cout << summary.str() << "\n";
    RecordProperty(p.stem().string(), summary.str());
    for (const auto& e : st.errors) ADD_FAILURE() << e;
    EXPECT_TRUE(st.errors.empty());
    EXPECT_GT(st.connections, 0u);
    EXPECT_EQ(st.types[PduType::icreq], st.connections);
    EXPECT_GT(st.types[PduType::icresp], 0u);
    EXPECT_GT(st.types[PduType::capsule_cmd], 0u);
    EXPECT_GT(st.types[PduType::capsule_resp], 0u);
    EXPECT_GT(st.types[PduType::c2h_data], 0u);
    EXPECT_EQ(st.types[PduType::h2c_term_req] + st.types[PduType::c2h_term_req], 0u);
    if (p.filename().string().find("digest") != std::string::npos) {
      saw_digests_trace = true;
      EXPECT_GT(st.types[PduType::r2t], 0u);
      EXPECT_GT(st.types[PduType::h2c_data], 0u);
      EXPECT_GT(st.hdgst_verified, 0u);
      EXPECT_GT(st.ddgst_verified, 0u);
      // Every digest-bearing PDU was verified.
      EXPECT_EQ(st.hdgst_verified, st.types[PduType::capsule_cmd] + st.types[PduType::capsule_resp] +
                                       st.types[PduType::h2c_data] + st.types[PduType::c2h_data] +
                                       st.types[PduType::r2t]);
    }
  }
  EXPECT_TRUE(saw_digests_trace) << "no *digest*.pcap trace in " << dir;
}

// Any other capture, e.g. one kept by tests/interop/linux_host.sh (KEEP_WORK=1):
//   NVMETUNE_PCAP=FILE NVMETUNE_PCAP_PORT=PORT codec_test --gtest_filter=ExternalCapture.*
TEST(ExternalCapture, EveryPduPassesTheCodec) {
  const char* file = std::getenv("NVMETUNE_PCAP");
  if (!file) GTEST_SKIP() << "set NVMETUNE_PCAP (and NVMETUNE_PCAP_PORT, default 4420)";
  const char* port = std::getenv("NVMETUNE_PCAP_PORT");
  std::string err;
  const auto cap = read_capture(file, err);
  ASSERT_TRUE(cap) << err;
  WalkStats st;
  walk_capture(*cap, static_cast<uint16_t>(port ? std::atoi(port) : 4420), file, st);
  std::cout << file << ": " << cap->frames << " frames, " << st.connections << " connections, "
            << st.hdgst_verified << " header / " << st.ddgst_verified << " data digests verified;";
  for (const auto& [t, c] : st.types) std::cout << " " << type_name(t) << "=" << c;
  std::cout << "\n";
  for (const auto& e : st.errors) ADD_FAILURE() << e;
  EXPECT_GT(st.connections, 0u);
}

}  // namespace
