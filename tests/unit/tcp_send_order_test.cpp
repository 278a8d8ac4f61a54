// The order of a batch on the wire: CapsuleResps go after the data sent with them, at least once
// per 64 KiB of data (engine/tcp/send.cpp, resp_trail_bytes), and a command's C2HData always
// precedes its response. Interleaved responses let the host complete and answer commands while
// the rest of the batch was still being sent, which split its command batches and made this CPU
// process them from the socket backlog.
//
// Real socketpair, real core/ and RAM namespace; only the executor is a double
// (test_support::ConnectedQueueTest says why).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/nvme/le.hpp"
#include "engine/tcp/pdu.hpp"
#include "tests/support/connected_queue_test.hpp"

namespace {

using namespace fuzz;

struct WirePdu {
  tcp::PduType type;
  uint16_t cid;
};

// Splits what the controller sent into PDUs: type and command id (C2HData: CCCID at byte 8;
// CapsuleResp: the CQE's CID, byte 12 of the CQE that starts at byte 8).
std::vector<WirePdu> parse(const std::vector<uint8_t>& wire) {
  std::vector<WirePdu> out;
  for (size_t at = 0; at + tcp::ch_len <= wire.size();) {
    const auto type = static_cast<tcp::PduType>(wire[at]);
    const uint32_t plen = nvme::get_le<uint32_t>(wire.data(), at + 4);
    EXPECT_GE(plen, tcp::ch_len);
    if (plen < tcp::ch_len || at + plen > wire.size()) break;
    const size_t cid_at = type == tcp::PduType::capsule_resp ? at + 8 + 12 : at + 8;
    out.push_back({type, nvme::get_le<uint16_t>(wire.data(), cid_at)});
    at += plen;
  }
  return out;
}

// Sends reads of blocks x 4 KiB each in one go and runs the queue until every answer is in
// (a socketpair holds about 200 KiB: large batches take several passes).
struct TcpSendOrder : test_support::ConnectedQueueTest {
  std::vector<WirePdu> read_batch(uint16_t reads, uint32_t blocks) {
    Stream s;
    for (uint16_t cid = 0; cid < reads; ++cid)
      s.capsule(rw(cid, nvme::NvmOpcode::read, 1, uint64_t{cid} * blocks % 256, blocks, 4096, Xfer::transport));
    test_support::write_all(io_host, s.bytes);
    const size_t expected = size_t{reads} * (tcp::data_hlen + blocks * 4096 + tcp::capsule_resp_hlen);
    std::vector<uint8_t> wire;
    for (int pass = 0; pass < 100 && wire.size() < expected; ++pass) {
      io->io_work();
      const auto got = test_support::drain_all(io_host);
      wire.insert(wire.end(), got.begin(), got.end());
    }
    EXPECT_EQ(wire.size(), expected);
    return parse(wire);
  }
};

std::string sequence(const std::vector<WirePdu>& pdus) {
  std::string s;
  for (const auto& p : pdus) s += p.type == tcp::PduType::c2h_data ? 'D' : p.type == tcp::PduType::capsule_resp ? 'R' : '?';
  return s;
}

TEST_F(TcpSendOrder, FourKReadsTrailTheirResponsesEvery64KiB) {
  // 20 reads of 4 KiB in one pass: 16 of them are 64 KiB of data, then their 16 responses,
  // then the last 4 data PDUs and their responses (sent with the pass).
  const auto pdus = read_batch(20, 1);
  ASSERT_EQ(pdus.size(), 40u);
  EXPECT_EQ(sequence(pdus), std::string(16, 'D') + std::string(16, 'R') + std::string(4, 'D') + std::string(4, 'R'));
}

TEST_F(TcpSendOrder, EveryResponseFollowsItsOwnData) {
  const auto pdus = read_batch(31, 1);
  ASSERT_EQ(pdus.size(), 62u);
  std::vector<int> data_at(64, -1);
  for (size_t i = 0; i < pdus.size(); ++i) {
    const auto& p = pdus[i];
    ASSERT_LT(p.cid, 31) << "PDU " << i;
    if (p.type == tcp::PduType::c2h_data) {
      data_at[p.cid] = static_cast<int>(i);
    } else {
      ASSERT_EQ(p.type, tcp::PduType::capsule_resp);
      EXPECT_GE(data_at[p.cid], 0) << "the response of cid " << p.cid << " came before its data";
    }
  }
}

TEST_F(TcpSendOrder, LargeReadsKeepEachResponseNextToItsData) {
  // 128 KiB reads each pass the 64 KiB mark: nothing is held back, so the host completes each
  // command as soon as its data is in.
  const auto pdus = read_batch(3, 32);
  EXPECT_EQ(sequence(pdus), "DRDRDR");
}

}  // namespace
