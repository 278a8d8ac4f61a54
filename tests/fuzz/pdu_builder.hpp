#pragma once
// Host-side NVMe/TCP byte streams for the fuzzer's seeds and its fixed set-up, built only with
// the engine's own codec (engine/tcp/codec.hpp) so they stay correct when the codec changes.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/nvme/le.hpp"
#include "engine/nvme/spec.hpp"
#include "engine/tcp/codec.hpp"
#include "engine/tcp/digest.hpp"
#include "engine/tcp/pdu.hpp"

namespace fuzz {

// The harness's target (fuzz_driver.cpp) and the names its seeds use.
inline constexpr std::string_view subnqn = "nqn.2026-12.io.nvmetune:fuzz";
inline constexpr std::string_view hostnqn = "nqn.2026-12.io.nvmetune:fuzz-host";
// The harness keeps one controller of hostnqn alive for the whole run (connected and enabled
// on a queue of its own), so an input can connect I/O queues to it and reach the NVM paths.
inline constexpr uint16_t io_cntlid = 1;
inline constexpr uint32_t queue_depth = 32;
inline constexpr uint32_t mdts_bytes = 128 * 1024;
inline constexpr uint32_t maxh2cdata = 32 * 1024;
inline constexpr uint32_t io_icd_size = 8192;
// Namespaces: NSID 1 = 1 MiB RAM in 512-byte blocks, NSID 2 = 512 KiB RAM in 4 KiB blocks.
inline constexpr uint64_t ns1_blocks = (1u << 20) / 512;

// CC with EN=1, IOSQES=6, IOCQES=4 (the only entry sizes fabrics allow).
inline constexpr uint32_t cc_enable = 1u | (6u << 16) | (4u << 20);

using Bytes = std::vector<uint8_t>;

inline void append(Bytes& out, std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }
inline void append_le32(Bytes& out, uint32_t v) {
  uint8_t b[4];
  nvme::put_le(b, 0, v);
  append(out, b);
}

// A host->controller byte stream. Digests follow the last ICReq written, as on the wire.
class Stream {
 public:
  Bytes bytes;
  tcp::Digests dg;

  Stream& icreq(bool hdgst = false, bool ddgst = false, uint8_t hpda = 0, uint32_t maxr2t = 0) {
    uint8_t h[tcp::max_hlen + tcp::digest_len]{};
    append(bytes, {h, tcp::write_icreq(h, tcp::IcReq{0, hpda, hdgst, ddgst, maxr2t})});
    dg = {hdgst, ddgst};
    return *this;
  }
  // A CapsuleCmd; icd is in-capsule data (the SQE's SGL must say so, see the SQE helpers).
  Stream& capsule(const nvme::Sqe& sqe, std::span<const uint8_t> icd = {}) {
    uint8_t h[256]{};
    const size_t n = tcp::write_capsule_cmd(h, sqe, static_cast<uint32_t>(icd.size()), dg, 0);
    append(bytes, {h, n});
    data(icd);
    return *this;
  }
  // An H2CData PDU. ttag is the target's transfer tag from its R2T (the command slot index).
  Stream& h2c_data(uint16_t cccid, uint16_t ttag, uint32_t datao, std::span<const uint8_t> d,
                   bool last) {
    uint8_t h[256]{};
    const tcp::DataHeader dh{cccid, ttag, datao, static_cast<uint32_t>(d.size())};
    append(bytes, {h, tcp::write_h2c_data(h, dh, last, dg, 0)});
    data(d);
    return *this;
  }
  Stream& h2c_term_req(tcp::Fes fes, uint32_t fei, std::span<const uint8_t> offending = {}) {
    uint8_t h[tcp::term_max_plen]{};
    append(bytes, {h, tcp::write_term_req(h, tcp::PduType::h2c_term_req, tcp::TermReq{fes, fei}, offending)});
    return *this;
  }
  Stream& raw(std::span<const uint8_t> b) {
    append(bytes, b);
    return *this;
  }
  size_t size() const { return bytes.size(); }

 private:
  void data(std::span<const uint8_t> d) {
    if (d.empty()) return;
    append(bytes, d);
    if (dg.ddgst) append_le32(bytes, tcp::crc32c(d.data(), d.size()));
  }
};

// ---- SQEs -------------------------------------------------------------------------------

enum class Xfer { none, in_capsule, transport };  // how the SGL describes the data

inline void set_data(nvme::Sqe& s, uint32_t len, Xfer x) {
  if (x == Xfer::none || len == 0) return;
  s.set_sgl(0, len, x == Xfer::in_capsule ? nvme::sgl_data_block_offset : nvme::sgl_transport_data_block);
}

inline nvme::Sqe sqe(uint8_t opcode, uint16_t cid, uint32_t nsid = 0) {
  nvme::Sqe s;
  s.set_opcode(opcode);
  s.set_cid(cid);
  s.set_nsid(nsid);
  s.b[1] = 1 << 6;  // PSDT: SGL
  return s;
}

inline nvme::Sqe fabrics(uint16_t cid, nvme::FabricsType t) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(nvme::AdminOpcode::fabrics), cid);
  s.b[4] = static_cast<uint8_t>(t);
  return s;
}

// Connect: qid, SQSIZE (0-based), CATTR (bit 2: disable SQ flow control), KATO in ms.
inline nvme::Sqe connect(uint16_t cid, uint16_t qid, uint16_t sqsize0, Xfer x, uint8_t cattr = 0,
                         uint32_t kato = 0) {
  nvme::Sqe s = fabrics(cid, nvme::FabricsType::connect);
  nvme::put_le<uint16_t>(s.b.data(), 42, qid);
  nvme::put_le<uint16_t>(s.b.data(), 44, sqsize0);
  s.b[46] = cattr;
  nvme::put_le<uint32_t>(s.b.data(), 48, kato);
  set_data(s, nvme::connect_data::size, x);
  return s;
}

inline Bytes connect_data(std::string_view sub, std::string_view host, uint16_t cntlid = 0xffff) {
  Bytes d(nvme::connect_data::size, 0);
  for (size_t i = 0; i < 16; ++i) d[nvme::connect_data::hostid + i] = static_cast<uint8_t>(0xa0 + i);
  nvme::put_le<uint16_t>(d.data(), nvme::connect_data::cntlid, cntlid);
  nvme::put_ascii(d.data(), nvme::connect_data::subnqn, nvme::connect_data::nqn_width, sub, '\0');
  nvme::put_ascii(d.data(), nvme::connect_data::hostnqn, nvme::connect_data::nqn_width, host, '\0');
  return d;
}

inline nvme::Sqe property_set(uint16_t cid, nvme::Property p, uint64_t value, bool eight = false) {
  nvme::Sqe s = fabrics(cid, nvme::FabricsType::property_set);
  s.b[40] = eight ? 1 : 0;
  nvme::put_le<uint32_t>(s.b.data(), 44, static_cast<uint32_t>(p));
  nvme::put_le<uint64_t>(s.b.data(), 48, value);
  return s;
}

inline nvme::Sqe property_get(uint16_t cid, nvme::Property p, bool eight) {
  nvme::Sqe s = fabrics(cid, nvme::FabricsType::property_get);
  s.b[40] = eight ? 1 : 0;
  nvme::put_le<uint32_t>(s.b.data(), 44, static_cast<uint32_t>(p));
  return s;
}

inline nvme::Sqe identify(uint16_t cid, nvme::Cns cns, uint32_t nsid = 0) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(nvme::AdminOpcode::identify), cid, nsid);
  s.set_cdw(10, static_cast<uint8_t>(cns));
  set_data(s, 4096, Xfer::transport);
  return s;
}

// Get Log Page of bytes (a multiple of 4) at byte offset lpo.
inline nvme::Sqe get_log_page(uint16_t cid, nvme::LogPage lid, uint32_t bytes, uint64_t lpo = 0,
                              uint32_t nsid = 0xffffffff, uint8_t lsp = 0) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(nvme::AdminOpcode::get_log_page), cid, nsid);
  const uint32_t numd0 = bytes / 4 - 1;
  s.set_cdw(10, static_cast<uint8_t>(lid) | (uint32_t{lsp} << 8) | ((numd0 & 0xffff) << 16));
  s.set_cdw(11, numd0 >> 16);
  s.set_cdw(12, static_cast<uint32_t>(lpo));
  s.set_cdw(13, static_cast<uint32_t>(lpo >> 32));
  set_data(s, bytes, Xfer::transport);
  return s;
}

inline nvme::Sqe features(uint16_t cid, bool set, nvme::FeatureId fid, uint32_t cdw11 = 0) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(set ? nvme::AdminOpcode::set_features
                                             : nvme::AdminOpcode::get_features), cid);
  s.set_cdw(10, static_cast<uint8_t>(fid));
  s.set_cdw(11, cdw11);
  return s;
}

inline nvme::Sqe admin(uint16_t cid, nvme::AdminOpcode op, uint32_t cdw10 = 0) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(op), cid);
  s.set_cdw(10, cdw10);
  return s;
}

// Read/Write/Compare of nlb blocks of block_size bytes at slba on nsid.
inline nvme::Sqe rw(uint16_t cid, nvme::NvmOpcode op, uint32_t nsid, uint64_t slba, uint32_t nlb,
                    uint32_t block_size, Xfer x, bool fua = false) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(op), cid, nsid);
  nvme::put_le<uint64_t>(s.b.data(), 40, slba);
  s.set_cdw(12, (nlb - 1) | (fua ? 1u << 30 : 0));
  set_data(s, nlb * block_size, x);
  return s;
}

inline nvme::Sqe nvm(uint16_t cid, nvme::NvmOpcode op, uint32_t nsid, uint64_t slba = 0,
                     uint32_t nlb = 1) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(op), cid, nsid);
  nvme::put_le<uint64_t>(s.b.data(), 40, slba);
  s.set_cdw(12, nlb - 1);
  return s;
}

// Dataset Management (deallocate) with ranges of (slba, nlb): returns SQE and range data.
inline nvme::Sqe dsm(uint16_t cid, uint32_t nsid, uint32_t nranges, Xfer x) {
  nvme::Sqe s = sqe(static_cast<uint8_t>(nvme::NvmOpcode::dataset_management), cid, nsid);
  s.set_cdw(10, nranges - 1);
  s.set_cdw(11, 1u << 2);  // AD: deallocate
  set_data(s, nranges * 16, x);
  return s;
}

inline Bytes dsm_ranges(std::initializer_list<std::pair<uint64_t, uint32_t>> ranges) {
  Bytes d;
  for (auto [slba, nlb] : ranges) {
    uint8_t r[16]{};
    nvme::put_le<uint32_t>(r, 4, nlb);
    nvme::put_le<uint64_t>(r, 8, slba);
    append(d, r);
  }
  return d;
}

inline Bytes pattern(size_t n, uint8_t seed) {
  Bytes d(n);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 9));
  return d;
}

}  // namespace fuzz
