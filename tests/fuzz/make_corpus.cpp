// Writes the seed corpus of fuzz_tcp_receive (tests/fuzz/corpus/).
//
//   make_corpus OUT_DIR [TRACE.pcap|TRACE.pcapng ...]
//   make_corpus --show INPUT...     replay inputs, print the controller's PDUs (debugging)
//
// Every seed is one fuzzer input: a split byte (fuzz_driver.hpp) and a host->controller
// stream. Synthetic seeds are built with the engine's codec (pdu_builder.hpp): admin, discovery
// and I/O-queue sessions with and without digests, the R2T/H2CData path, and one malformed
// exchange per kind of protocol error. Trace seeds are the host->target byte stream of each TCP
// connection in the given captures (first 64 KiB, cut at a PDU boundary), rewritten to this
// harness's subsystem/host NQNs, CNTLID, queue size and namespace size (digests recomputed).
//
// Transfer tags: the target's TTAG is its command slot index, which depends on when earlier
// slots were freed (after their response was sent, i.e. on the split pattern). So seeds are
// replayed through the fuzzer's own driver (fuzz_driver.cpp): the R2Ts the target sends tell
// which TTAG each H2CData must carry, the H2CData headers are patched, and the replay repeats
// until nothing changes. Seeds that are meant to carry a wrong TTAG are not patched.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "engine/nvme/le.hpp"
#include "engine/nvme/spec.hpp"
#include "engine/nvme/status.hpp"
#include "engine/tcp/codec.hpp"
#include "engine/tcp/digest.hpp"
#include "tests/fuzz/fuzz_driver.hpp"
#include "tests/fuzz/pdu_builder.hpp"

namespace {

using namespace fuzz;
using nvme::AdminOpcode;
using nvme::Cns;
using nvme::LogPage;
using nvme::NvmOpcode;
using nvme::Property;
using nvme::get_le;
using nvme::put_le;
namespace fs = std::filesystem;

constexpr size_t max_seed = 64 * 1024 - 1;  // bytes including the split byte

// ------------------------------------------------------------------ PDU walking and patching

struct PduRef {
  size_t off;
  uint32_t plen;
};

// The PDUs of a stream, by PLEN; stops at the first header that does not frame.
std::vector<PduRef> walk(std::span<const uint8_t> s) {
  std::vector<PduRef> out;
  size_t off = 0;
  while (off + tcp::ch_len <= s.size()) {
    const uint32_t plen = get_le<uint32_t>(s.data(), off + 4);
    if (plen < tcp::ch_len || plen > s.size() - off) break;
    out.push_back({off, plen});
    off += plen;
  }
  return out;
}

void rewrite_hdgst(uint8_t* pdu) {
  if (!(pdu[1] & tcp::flag::hdgstf)) return;
  const uint8_t hlen = pdu[2];
  put_le<uint32_t>(pdu, hlen, tcp::crc32c(pdu, hlen));
}

void rewrite_ddgst(uint8_t* pdu) {
  if (!(pdu[1] & tcp::flag::ddgstf)) return;
  const uint8_t pdo = pdu[3];
  const uint32_t plen = get_le<uint32_t>(pdu, 4);
  if (pdo == 0 || plen < pdo + tcp::digest_len) return;
  const uint32_t n = plen - pdo - tcp::digest_len;
  put_le<uint32_t>(pdu, pdo + n, tcp::crc32c(pdu + pdo, n));
}

// Replays stream with this split byte and patches H2CData TTAGs to the R2Ts' until stable.
void fix_ttags(uint8_t split, Bytes& stream) {
  for (int round = 0; round < 16; ++round) {
    Bytes input{split};
    append(input, stream);
    Bytes output;
    const OutputFn collect = [&](std::span<const uint8_t> b) { append(output, b); };
    run_input(input.data(), input.size(), &collect);

    std::map<uint16_t, std::vector<uint16_t>> r2t_ttags;  // cccid -> ttag of each R2T, in order
    for (const auto& p : walk(output)) {
      if (output[p.off] != static_cast<uint8_t>(tcp::PduType::r2t) || p.plen < tcp::data_hlen) continue;
      const tcp::R2t r = tcp::parse_r2t({output.data() + p.off, p.plen});
      if (r.r2to == 0) r2t_ttags[r.cccid].push_back(r.ttag);
    }
    bool changed = false;
    std::map<uint16_t, size_t> instance;  // cccid -> commands seen (a new one at DATAO 0)
    for (const auto& p : walk(stream)) {
      uint8_t* pdu = stream.data() + p.off;
      if (pdu[0] != static_cast<uint8_t>(tcp::PduType::h2c_data) || p.plen < tcp::data_hlen) continue;
      const tcp::DataHeader h = tcp::parse_data({pdu, p.plen});
      if (h.datao == 0) ++instance[h.cccid];
      const auto it = r2t_ttags.find(h.cccid);
      const size_t k = instance[h.cccid];
      if (it == r2t_ttags.end() || k == 0 || k > it->second.size()) continue;
      const uint16_t want = it->second[k - 1];
      if (h.ttag == want) continue;
      put_le<uint16_t>(pdu, tcp::field::ttag, want);
      rewrite_hdgst(pdu);
      changed = true;
    }
    if (!changed) return;
  }
  std::fprintf(stderr, "make_corpus: TTAGs did not settle\n");
}

// ------------------------------------------------------------------------------ seed output

struct Writer {
  fs::path dir;
  int count = 0;
  void seed(const std::string& name, uint8_t split, Stream s, bool patch_ttags = true) {
    Bytes stream = std::move(s.bytes);
    if (patch_ttags) fix_ttags(split, stream);
    write(name, split, stream);
  }
  void write(const std::string& name, uint8_t split, const Bytes& stream) {
    Bytes out{split};
    append(out, stream);
    if (out.size() > max_seed) {
      std::fprintf(stderr, "make_corpus: seed %s is %zu bytes (limit %zu)\n", name.c_str(), out.size(), max_seed);
      std::exit(1);
    }
    std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
    if (!f) {
      std::fprintf(stderr, "make_corpus: cannot write %s\n", (dir / name).c_str());
      std::exit(1);
    }
    ++count;
    std::printf("%-40s %6zu bytes, split 0x%02x\n", name.c_str(), out.size(), split);
  }
};

constexpr uint8_t split(Split s) { return static_cast<uint8_t>(s); }
constexpr uint8_t split_rand(uint8_t log2max_minus1) { return split_random | (log2max_minus1 & 0x0f); }

// ------------------------------------------------------------------------- synthetic seeds

Stream& connect_admin(Stream& s, uint16_t cid, std::string_view sub = subnqn) {
  return s.capsule(connect(cid, 0, queue_depth - 1, Xfer::in_capsule), connect_data(sub, hostnqn));
}

Stream& connect_io(Stream& s, uint16_t cid, uint16_t qid = 1, uint8_t cattr = 0) {
  return s.capsule(connect(cid, qid, queue_depth - 1, Xfer::in_capsule, cattr),
                   connect_data(subnqn, hostnqn, io_cntlid));
}

Stream admin_session(bool hdgst, bool ddgst) {
  Stream s;
  s.icreq(hdgst, ddgst);
  uint16_t cid = 1;
  connect_admin(s, cid++);
  s.capsule(property_get(cid++, Property::cap, true));
  s.capsule(property_get(cid++, Property::vs, false));
  s.capsule(property_get(cid++, Property::cc, false));
  s.capsule(property_set(cid++, Property::cc, cc_enable));
  s.capsule(property_get(cid++, Property::csts, false));
  s.capsule(identify(cid++, Cns::controller));
  s.capsule(identify(cid++, Cns::namespace_, 1));
  s.capsule(identify(cid++, Cns::namespace_, 2));
  s.capsule(identify(cid++, Cns::active_namespace_list, 0));
  s.capsule(identify(cid++, Cns::namespace_id_descriptors, 1));
  s.capsule(get_log_page(cid++, LogPage::error, 64));
  s.capsule(get_log_page(cid++, LogPage::smart, 512));
  s.capsule(get_log_page(cid++, LogPage::firmware_slot, 512));
  s.capsule(get_log_page(cid++, LogPage::changed_namespace_list, 4096));
  s.capsule(get_log_page(cid++, LogPage::ana, 4096));
  s.capsule(get_log_page(cid++, LogPage::ana, 64, 0, 0xffffffff, 1));
  s.capsule(features(cid++, true, nvme::FeatureId::number_of_queues, 0x00030003));
  s.capsule(features(cid++, false, nvme::FeatureId::number_of_queues));
  s.capsule(features(cid++, true, nvme::FeatureId::keep_alive_timer, 5000));
  s.capsule(features(cid++, false, nvme::FeatureId::keep_alive_timer));
  s.capsule(features(cid++, true, nvme::FeatureId::async_event_config, 0x100));
  s.capsule(features(cid++, false, nvme::FeatureId::volatile_write_cache));
  s.capsule(features(cid++, true, nvme::FeatureId::volatile_write_cache, 0));
  s.capsule(admin(cid++, AdminOpcode::keep_alive));
  s.capsule(admin(cid++, AdminOpcode::async_event_request));
  s.capsule(admin(cid++, AdminOpcode::abort, 5u << 16));
  s.capsule(fabrics(cid++, nvme::FabricsType::disconnect));
  return s;
}

// Connect through R2T + H2CData instead of in-capsule data (the TTAG is patched by replay).
Stream admin_connect_r2t(bool hdgst, bool ddgst) {
  Stream s;
  s.icreq(hdgst, ddgst);
  s.capsule(connect(7, 0, 15, Xfer::transport, 0, 10000));
  s.h2c_data(7, 0, 0, connect_data(subnqn, hostnqn), true);
  s.capsule(property_set(8, Property::cc, cc_enable));
  s.capsule(identify(9, Cns::controller));
  s.capsule(get_log_page(10, LogPage::ana, 4096));
  s.capsule(admin(11, AdminOpcode::keep_alive));
  return s;
}

Stream discovery_session() {
  Stream s;
  s.icreq();
  uint16_t cid = 1;
  s.capsule(connect(cid++, 0, 31, Xfer::in_capsule, 0, 30000), connect_data(nvme::discovery_nqn, hostnqn));
  s.capsule(property_get(cid++, Property::cap, true));
  s.capsule(property_set(cid++, Property::cc, cc_enable));
  s.capsule(property_get(cid++, Property::csts, false));
  s.capsule(identify(cid++, Cns::controller));
  s.capsule(identify(cid++, Cns::namespace_, 1));  // not on a discovery controller
  s.capsule(get_log_page(cid++, LogPage::discovery, 1024));
  s.capsule(get_log_page(cid++, LogPage::discovery, 4096));
  s.capsule(get_log_page(cid++, LogPage::discovery, 1024, 1024));
  s.capsule(get_log_page(cid++, LogPage::smart, 512));  // not on a discovery controller
  s.capsule(features(cid++, false, nvme::FeatureId::keep_alive_timer));
  s.capsule(admin(cid++, AdminOpcode::keep_alive));
  s.capsule(admin(cid++, AdminOpcode::async_event_request));
  s.capsule(admin(cid++, AdminOpcode::identify, 0x10));  // bad CNS
  return s;
}

Stream io_session(bool hdgst, bool ddgst) {
  Stream s;
  s.icreq(hdgst, ddgst);
  uint16_t cid = 1;
  connect_io(s, cid++);
  const Bytes a = pattern(4096, 0x11), b = pattern(8192, 0x22);
  s.capsule(rw(cid++, NvmOpcode::write, 1, 0, 8, 512, Xfer::in_capsule), a);
  s.capsule(rw(cid++, NvmOpcode::read, 1, 0, 8, 512, Xfer::transport));
  const uint16_t wcid = cid++;
  s.capsule(rw(wcid, NvmOpcode::write, 1, 8, 16, 512, Xfer::transport));
  s.h2c_data(wcid, 0, 0, b, true);
  s.capsule(rw(cid++, NvmOpcode::read, 1, 8, 16, 512, Xfer::transport));
  s.capsule(rw(cid++, NvmOpcode::compare, 1, 0, 8, 512, Xfer::in_capsule), a);  // equal
  s.capsule(rw(cid++, NvmOpcode::compare, 1, 8, 8, 512, Xfer::in_capsule), a);  // differs
  s.capsule(nvm(cid++, NvmOpcode::flush, 1));
  s.capsule(nvm(cid++, NvmOpcode::write_zeroes, 1, 0, 8));
  s.capsule(dsm(cid++, 1, 2, Xfer::in_capsule), dsm_ranges({{16, 8}, {1000, 24}}));
  s.capsule(rw(cid++, NvmOpcode::write, 1, 2047, 1, 512, Xfer::in_capsule, true), pattern(512, 3));
  s.capsule(rw(cid++, NvmOpcode::read, 1, 0, 256, 512, Xfer::transport));  // MDTS
  s.capsule(fabrics(cid++, nvme::FabricsType::disconnect));
  return s;
}

Stream io_multi_h2c() {
  Stream s;
  s.icreq();
  uint16_t cid = 0x40;
  connect_io(s, cid++, 2);
  const Bytes w = pattern(32768, 0x5a);
  const uint16_t wcid = cid++;
  s.capsule(rw(wcid, NvmOpcode::write, 1, 100, 64, 512, Xfer::transport));
  s.h2c_data(wcid, 0, 0, {w.data(), 16384}, false);
  s.h2c_data(wcid, 0, 16384, {w.data() + 16384, 16384}, true);
  const uint16_t ccid = cid++;
  s.capsule(rw(ccid, NvmOpcode::compare, 1, 100, 8, 512, Xfer::transport));
  s.h2c_data(ccid, 0, 0, {w.data(), 4096}, true);
  const uint16_t dcid = cid++;
  s.capsule(dsm(dcid, 1, 3, Xfer::transport));
  s.h2c_data(dcid, 0, 0, dsm_ranges({{100, 8}, {0, 0}, {2040, 8}}), true);
  s.capsule(rw(cid++, NvmOpcode::read, 1, 100, 64, 512, Xfer::transport));
  return s;
}

Stream io_ns2_and_errors() {
  Stream s;
  s.icreq();
  uint16_t cid = 1;
  connect_io(s, cid++, 3);
  s.capsule(rw(cid++, NvmOpcode::write, 2, 0, 1, 4096, Xfer::in_capsule), pattern(4096, 9));
  s.capsule(rw(cid++, NvmOpcode::read, 2, 0, 2, 4096, Xfer::transport));
  s.capsule(rw(cid++, NvmOpcode::write, 2, 127, 2, 4096, Xfer::in_capsule), pattern(8192, 1));  // LBA range
  s.capsule(rw(cid++, NvmOpcode::read, 3, 0, 1, 512, Xfer::transport));      // no such namespace
  s.capsule(rw(cid++, NvmOpcode::read, 1, 0, 257, 512, Xfer::transport));    // beyond MDTS
  s.capsule(nvm(cid++, NvmOpcode::write_zeroes, 2, 120, 16));                 // LBA range
  s.capsule(nvm(cid++, NvmOpcode::flush, 0xffffffff));
  s.capsule(sqe(0x7e, cid++, 1));                                             // unknown opcode
  nvme::Sqe bad_len = rw(cid++, NvmOpcode::write, 1, 0, 16, 512, Xfer::transport);
  put_le<uint32_t>(bad_len.b.data(), 32, 4096);                               // SGL != NLB
  s.capsule(bad_len);
  nvme::Sqe keyed = rw(cid++, NvmOpcode::write, 1, 0, 1, 512, Xfer::transport);
  s.capsule(keyed, pattern(512, 4));                                          // ICD, wrong SGL type
  s.capsule(rw(cid++, NvmOpcode::read, 1, 0, 1, 512, Xfer::in_capsule), pattern(512, 5));  // ICD on a read
  s.capsule(identify(cid++, Cns::controller));                                // admin op on I/O queue
  s.capsule(property_get(cid++, Property::cap, true));                        // property on I/O queue
  s.capsule(dsm(cid++, 1, 1, Xfer::in_capsule), dsm_ranges({{2047, 2}}));     // range beyond the end
  return s;
}

Stream io_hpda_nosqflow() {
  Stream s;
  s.icreq(false, true, 3, 3);                 // HPDA 3: C2H data at 16-byte alignment
  uint16_t cid = 1;
  connect_io(s, cid++, 4, 1u << 2);           // CATTR: SQ flow control disabled -> SUCCESS flag
  s.capsule(rw(cid++, NvmOpcode::write, 1, 64, 8, 512, Xfer::in_capsule), pattern(4096, 7));
  s.capsule(rw(cid++, NvmOpcode::read, 1, 64, 8, 512, Xfer::transport));
  s.capsule(rw(cid++, NvmOpcode::read, 1, 64, 1, 512, Xfer::transport));
  s.capsule(rw(cid++, NvmOpcode::read, 1, 4096, 1, 512, Xfer::transport));   // LBA range
  return s;
}

// A data digest error fails the command, not the connection.
Stream data_digest_error() {
  Stream s;
  s.icreq(false, true);
  connect_io(s, 1);
  s.capsule(rw(2, NvmOpcode::write, 1, 0, 8, 512, Xfer::in_capsule), pattern(4096, 0x33));
  s.bytes.back() ^= 0xff;  // the last byte of the data digest
  s.capsule(rw(3, NvmOpcode::read, 1, 0, 8, 512, Xfer::transport));
  return s;
}

Stream admin_errors() {
  Stream s;
  s.icreq();
  uint16_t cid = 1;
  connect_admin(s, cid++);
  s.capsule(identify(cid++, Cns::controller));                               // before CC.EN
  s.capsule(property_set(cid++, Property::cc, 1));                           // IOSQES 0: CFS
  s.capsule(property_set(cid++, Property::cc, 0));
  s.capsule(property_set(cid++, Property::cc, cc_enable));
  s.capsule(property_set(cid++, Property::csts, 1));                         // read-only
  s.capsule(property_get(cid++, Property::vs, true));                        // wrong size
  s.capsule(property_get(cid++, static_cast<Property>(0x30), false));        // no such property
  s.capsule(identify(cid++, static_cast<Cns>(0x10)));
  s.capsule(identify(cid++, Cns::namespace_, 0));
  s.capsule(identify(cid++, Cns::namespace_id_descriptors, 5));
  s.capsule(get_log_page(cid++, static_cast<LogPage>(0x80), 512));
  s.capsule(get_log_page(cid++, LogPage::smart, 512, 2));                    // LPO not dword aligned
  s.capsule(get_log_page(cid++, LogPage::smart, 512, 1024));                 // LPO beyond the page
  s.capsule(get_log_page(cid++, LogPage::error, 256 * 1024));                // beyond the buffer
  nvme::Sqe save = features(cid++, true, nvme::FeatureId::keep_alive_timer, 1);
  save.set_cdw(10, save.cdw(10) | (1u << 31));                               // SV: not saveable
  s.capsule(save);
  s.capsule(features(cid++, true, nvme::FeatureId::number_of_queues, 0xffff));
  s.capsule(features(cid++, true, static_cast<nvme::FeatureId>(0x99), 1));
  s.capsule(features(cid++, false, static_cast<nvme::FeatureId>(0x99)));
  for (int i = 0; i < 5; ++i) s.capsule(admin(cid++, AdminOpcode::async_event_request));  // 5th: limit
  nvme::Sqe fused = admin(cid++, AdminOpcode::keep_alive);
  fused.b[1] |= 1;
  s.capsule(fused);
  s.capsule(fabrics(cid++, nvme::FabricsType::authentication_send));
  s.capsule(sqe(0x01, cid++, 1));                                            // NVM Write on admin
  connect_admin(s, cid++);                                                   // already connected
  s.capsule(property_set(cid++, Property::cc, cc_enable | (1u << 14)));      // shutdown
  return s;
}

// More commands than slots before any response could be sent (whole-stream split).
Stream sq_overflow() {
  Stream s;
  s.icreq();
  connect_admin(s, 1);
  s.capsule(property_set(2, Property::cc, cc_enable));
  for (uint16_t cid = 3; cid < 3 + queue_depth; ++cid) s.capsule(admin(cid, AdminOpcode::keep_alive));
  return s;
}

// ------------------------------------------------------------- malformed (fatal) exchanges

Stream bad_icreq_pfv() {
  Stream s;
  s.icreq();
  put_le<uint16_t>(s.bytes.data(), tcp::field::pfv, 1);
  return s;
}

Stream capsule_before_icreq() {
  Stream s;
  connect_admin(s, 1);
  return s;
}

Stream bad_pdu_type() {
  Stream s;
  s.icreq();
  connect_admin(s, 1);
  const uint8_t h[8] = {0x0f, 0, 8, 0, 8, 0, 0, 0};
  s.raw(h);
  return s;
}

Stream header_digest_mismatch() {
  Stream s;
  s.icreq(true, false);
  const size_t at = s.size();
  connect_admin(s, 1);
  s.bytes[at + tcp::capsule_cmd_hlen] ^= 0x01;  // first byte of the header digest
  return s;
}

Stream bad_pdo() {
  Stream s;
  s.icreq();
  const size_t at = s.size();
  connect_admin(s, 1);
  s.bytes[at + 3] = 70;  // PDO inside the header
  return s;
}

Stream icd_too_large() {
  Stream s;
  s.icreq();
  connect_io(s, 1);
  s.capsule(rw(2, NvmOpcode::write, 1, 0, 17, 512, Xfer::in_capsule), pattern(17 * 512, 8));  // > 8192
  return s;
}

Stream h2c_bad_ttag() {
  Stream s;
  s.icreq();
  s.capsule(connect(1, 0, 31, Xfer::transport));
  s.h2c_data(1, 0x1234, 0, connect_data(subnqn, hostnqn), true);
  return s;
}

Stream h2c_beyond_r2t() {
  Stream s;
  s.icreq();
  connect_io(s, 1);
  s.capsule(rw(2, NvmOpcode::write, 1, 0, 8, 512, Xfer::transport));
  s.h2c_data(2, 0, 0, pattern(8192, 1), true);  // 8 KiB for a 4 KiB R2T
  return s;
}

Stream h2c_too_large() {
  Stream s;
  s.icreq();
  connect_io(s, 1);
  s.capsule(rw(2, NvmOpcode::write, 1, 0, 128, 512, Xfer::transport));
  s.h2c_data(2, 0, 0, pattern(maxh2cdata + 4096, 2), false);  // > MAXH2CDATA
  return s;
}

// An H2CData PDU without data (PLEN == HLEN) for a command waiting for data.
Stream h2c_zero_length() {
  Stream s;
  s.icreq();
  connect_io(s, 1);
  s.capsule(rw(2, NvmOpcode::write, 1, 0, 8, 512, Xfer::transport));
  s.h2c_data(2, 0, 0, {}, false);
  s.h2c_data(2, 0, 0, pattern(4096, 6), true);
  s.capsule(rw(3, NvmOpcode::read, 1, 0, 8, 512, Xfer::transport));
  return s;
}

Stream host_term_req() {
  Stream s;
  s.icreq();
  connect_admin(s, 1);
  const uint8_t offending[8] = {0x05, 0, 24, 0, 24, 0, 0, 0};
  s.h2c_term_req(tcp::Fes::invalid_header_field, 0, offending);
  return s;
}

// -------------------------------------------------------------------------- capture seeds

struct Flow {
  bool syn = false, client = false;
  uint32_t isn = 0;
  bool have_base = false;
  std::vector<std::pair<uint32_t, Bytes>> segs;
};

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

struct Capture {
  std::map<std::string, Flow> flows;
  std::vector<std::string> order;  // flows by first appearance
};

void add_frame(Capture& cap, uint32_t linktype, const uint8_t* f, size_t n) {
  size_t ip;
  if (linktype == 1) {  // Ethernet (+ VLAN tags)
    if (n < 14) return;
    size_t off = 12;
    while (be16(f + off) == 0x8100 && n >= off + 6) off += 4;
    if (be16(f + off) != 0x0800 && be16(f + off) != 0x86dd) return;
    ip = off + 2;
  } else if (linktype == 113) {  // Linux cooked
    if (n < 16) return;
    ip = 16;
  } else if (linktype == 101 || linktype == 12 || linktype == 228 || linktype == 229) {
    ip = 0;
  } else {
    return;
  }
  if (n < ip + 20) return;
  size_t tcp, payload_end;
  std::string src, dst;
  if ((f[ip] >> 4) == 4) {
    const size_t ihl = (f[ip] & 0x0f) * 4u;
    if (f[ip + 9] != 6 || n < ip + ihl + 20) return;
    tcp = ip + ihl;
    payload_end = std::min(n, ip + be16(f + ip + 2));
    src = std::to_string(be32(f + ip + 12));
    dst = std::to_string(be32(f + ip + 16));
  } else if ((f[ip] >> 4) == 6) {
    if (n < ip + 60 || f[ip + 6] != 6) return;
    tcp = ip + 40;
    payload_end = std::min(n, tcp + be16(f + ip + 4));
    src.assign(reinterpret_cast<const char*>(f + ip + 8), 16);
    dst.assign(reinterpret_cast<const char*>(f + ip + 24), 16);
  } else {
    return;
  }
  const size_t thl = (f[tcp + 12] >> 4) * 4u;
  const size_t payload = tcp + thl;
  if (thl < 20 || payload > payload_end) return;
  const std::string key = src + ":" + std::to_string(be16(f + tcp)) + ">" + dst + ":" +
                          std::to_string(be16(f + tcp + 2));
  auto [it, fresh] = cap.flows.try_emplace(key);
  if (fresh) cap.order.push_back(key);
  Flow& fl = it->second;
  const uint32_t seq = be32(f + tcp + 4);
  const uint8_t flags = f[tcp + 13];
  if (flags & 0x02) {
    fl.syn = true;
    fl.client = !(flags & 0x10);  // SYN without ACK: the side that connected (the host)
    fl.isn = seq + 1;
    fl.have_base = true;
  }
  if (payload == payload_end) return;
  if (!fl.have_base) {
    fl.isn = seq;
    fl.have_base = true;
  }
  fl.segs.emplace_back(seq - fl.isn, Bytes(f + payload, f + payload_end));
}

bool read_capture(const fs::path& p, Capture& cap) {
  std::ifstream in(p, std::ios::binary);
  const Bytes d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (d.size() < 24) return false;
  const uint32_t magic = get_le<uint32_t>(d.data(), 0);
  if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) {  // classic pcap, little-endian
    const uint32_t linktype = get_le<uint32_t>(d.data(), 20) & 0x0fffffff;
    for (size_t off = 24; off + 16 <= d.size();) {
      const uint32_t incl = get_le<uint32_t>(d.data(), off + 8);
      if (incl > d.size() - off - 16) break;
      add_frame(cap, linktype, d.data() + off + 16, incl);
      off += 16 + incl;
    }
    return true;
  }
  if (magic == 0x0a0d0d0a) {  // pcapng, little-endian sections
    std::vector<uint32_t> linktypes;
    for (size_t off = 0; off + 12 <= d.size();) {
      const uint32_t type = get_le<uint32_t>(d.data(), off), len = get_le<uint32_t>(d.data(), off + 4);
      if (len < 12 || len % 4 || len > d.size() - off) break;
      if (type == 0x0a0d0d0a) {
        if (get_le<uint32_t>(d.data(), off + 8) != 0x1a2b3c4d) return false;
        linktypes.clear();
      } else if (type == 1 && len >= 20) {
        linktypes.push_back(get_le<uint16_t>(d.data(), off + 8));
      } else if (type == 6 && len >= 32) {
        const uint32_t iface = get_le<uint32_t>(d.data(), off + 8), caplen = get_le<uint32_t>(d.data(), off + 20);
        if (iface < linktypes.size() && caplen <= len - 32) add_frame(cap, linktypes[iface], d.data() + off + 28, caplen);
      } else if (type == 3 && len >= 16 && !linktypes.empty()) {
        const uint32_t caplen = std::min<uint32_t>(get_le<uint32_t>(d.data(), off + 8), len - 16);
        add_frame(cap, linktypes[0], d.data() + off + 12, caplen);
      }
      off += len;
    }
    return true;
  }
  return false;
}

// The contiguous prefix of a flow, up to limit bytes (retransmissions and overlaps dropped).
Bytes reassemble(const Flow& f, size_t limit) {
  Bytes out;
  std::vector<std::pair<uint32_t, const Bytes*>> segs;
  for (const auto& [rel, b] : f.segs) segs.emplace_back(rel, &b);
  std::stable_sort(segs.begin(), segs.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (const auto& [rel, b] : segs) {
    if (rel > out.size() || rel > (1u << 30)) break;  // a hole (or a byte before the base)
    const size_t skip = out.size() - rel;
    if (skip < b->size()) out.insert(out.end(), b->begin() + static_cast<long>(skip), b->end());
    if (out.size() >= limit) break;
  }
  if (out.size() > limit) out.resize(limit);
  return out;
}

// Points a captured host stream at this harness: NQNs, CNTLID, SQSIZE, LBAs; digests redone.
// Returns a short description ("admin", "discovery", "io q1", ...).
std::string rewrite_for_harness(Bytes& s) {
  std::string kind = "unknown";
  bool io = false;
  for (const auto& p : walk(s)) {
    uint8_t* pdu = s.data() + p.off;
    if (pdu[0] != static_cast<uint8_t>(tcp::PduType::capsule_cmd) || p.plen < tcp::capsule_cmd_hlen) continue;
    uint8_t* sqe = pdu + tcp::ch_len;
    bool hdr = false, data = false;
    if (sqe[0] == static_cast<uint8_t>(AdminOpcode::fabrics) &&
        sqe[4] == static_cast<uint8_t>(nvme::FabricsType::connect)) {
      const uint16_t qid = get_le<uint16_t>(sqe, 42);
      if (get_le<uint16_t>(sqe, 44) > queue_depth - 1) {
        put_le<uint16_t>(sqe, 44, static_cast<uint16_t>(queue_depth - 1));
        hdr = true;
      }
      const uint8_t pdo = pdu[3];
      if (pdo && p.plen >= pdo + nvme::connect_data::size) {
        uint8_t* cd = pdu + pdo;
        const std::string_view sub = nvme::get_cstr(cd, nvme::connect_data::subnqn, nvme::connect_data::nqn_width);
        const bool disc = sub == nvme::discovery_nqn;
        if (!disc)
          nvme::put_ascii(cd, nvme::connect_data::subnqn, nvme::connect_data::nqn_width, subnqn, '\0');
        nvme::put_ascii(cd, nvme::connect_data::hostnqn, nvme::connect_data::nqn_width, hostnqn, '\0');
        if (qid != 0) put_le<uint16_t>(cd, nvme::connect_data::cntlid, io_cntlid);
        data = true;
        kind = disc ? "discovery" : qid ? "io-q" + std::to_string(qid) : "admin";
      }
      io = qid != 0;
    } else if (io && get_le<uint32_t>(sqe, 4) == 1 &&
               (sqe[0] == static_cast<uint8_t>(NvmOpcode::read) || sqe[0] == static_cast<uint8_t>(NvmOpcode::write) ||
                sqe[0] == static_cast<uint8_t>(NvmOpcode::compare) ||
                sqe[0] == static_cast<uint8_t>(NvmOpcode::write_zeroes))) {
      const uint64_t nlb = (get_le<uint32_t>(sqe, 48) & 0xffff) + 1u;
      const uint64_t slba = get_le<uint64_t>(sqe, 40);
      if (nlb < ns1_blocks && slba + nlb > ns1_blocks) {
        put_le<uint64_t>(sqe, 40, slba % (ns1_blocks - nlb));
        hdr = true;
      }
    }
    if (hdr) rewrite_hdgst(pdu);
    if (data) rewrite_ddgst(pdu);
  }
  return kind;
}

// sp: the split byte of this capture's seeds.
void capture_seeds(Writer& w, const fs::path& file, uint8_t sp) {
  Capture cap;
  if (!read_capture(file, cap)) {
    std::fprintf(stderr, "make_corpus: %s: not a readable pcap/pcapng capture\n", file.c_str());
    std::exit(1);
  }
  std::string stem = file.stem().string();
  if (stem.rfind("kernel-host-", 0) == 0) stem = stem.substr(12);
  int n = 0;
  for (const auto& key : cap.order) {
    const Flow& f = cap.flows[key];
    if (!f.client || f.segs.empty()) continue;
    Bytes s = reassemble(f, max_seed);
    // Cut at the last whole PDU.
    size_t end = 0;
    for (const auto& p : walk(s)) end = p.off + p.plen;
    s.resize(end);
    if (s.empty()) continue;
    const std::string kind = rewrite_for_harness(s);
    fix_ttags(sp, s);
    w.write("trace-" + stem + "-" + std::to_string(n++) + "-" + kind, sp, s);
  }
}

// --show: replays inputs and prints what the controller answered, one PDU per line.
int show(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    const Bytes input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("== %s (%zu bytes, split 0x%02x)\n", argv[i], input.size(), input.empty() ? 0 : input[0]);
    Bytes output;
    const OutputFn collect = [&](std::span<const uint8_t> b) { append(output, b); };
    run_input(input.data(), input.size(), &collect);
    for (const auto& p : walk(output)) {
      const uint8_t* pdu = output.data() + p.off;
      const std::span<const uint8_t> h(pdu, p.plen);
      switch (static_cast<tcp::PduType>(pdu[0])) {
        case tcp::PduType::icresp: {
          const auto r = tcp::parse_icresp(h);
          std::printf("  ICResp       cpda %u hdgst %d ddgst %d maxh2cdata %u\n", r.cpda, r.hdgst, r.ddgst, r.maxh2cdata);
          break;
        }
        case tcp::PduType::capsule_resp: {
          const auto c = tcp::parse_capsule_resp(h);
          const auto st = nvme::Status::from_field(static_cast<uint16_t>(c.status >> 1));
          std::printf("  CapsuleResp  cid %-5u sct %u sc 0x%02x dw0 0x%08x sqhd %u\n", c.cid,
                      static_cast<unsigned>(st.sct), st.sc, c.dw0, c.sqhd);
          break;
        }
        case tcp::PduType::c2h_data: {
          const auto d = tcp::parse_data(h);
          std::printf("  C2HData      cid %-5u datao %u datal %u flags 0x%02x pdo %u\n", d.cccid, d.datao, d.datal,
                      pdu[1], pdu[3]);
          break;
        }
        case tcp::PduType::r2t: {
          const auto r = tcp::parse_r2t(h);
          std::printf("  R2T          cid %-5u ttag %u r2to %u r2tl %u\n", r.cccid, r.ttag, r.r2to, r.r2tl);
          break;
        }
        case tcp::PduType::c2h_term_req: {
          const auto t = tcp::parse_term_req(h);
          std::printf("  C2HTermReq   fes %u fei %u\n", static_cast<unsigned>(t.fes), t.fei);
          break;
        }
        default:
          std::printf("  type 0x%02x plen %u\n", pdu[0], p.plen);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--show") return show(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [TRACE.pcap ...]\n       %s --show INPUT...\n", argv[0], argv[0]);
    return 2;
  }
  Writer w{argv[1]};
  fs::create_directories(w.dir);

  w.seed("admin-session", split(Split::whole), admin_session(false, false));
  w.seed("admin-session-digests", split_slow_host | split_rand(7), admin_session(true, true));
  w.seed("admin-connect-r2t-digests", split(Split::per_pdu), admin_connect_r2t(true, true));
  w.seed("discovery-session", split(Split::bytes_8), discovery_session());
  w.seed("admin-errors", split_socket | split(Split::whole), admin_errors());
  w.seed("io-session", split(Split::whole), io_session(false, false));
  w.seed("io-session-digests", split_socket | split_slow_host | split_rand(10), io_session(true, true));
  w.seed("io-multi-h2c", split_rand(14), io_multi_h2c());
  w.seed("io-ns2-and-errors", split(Split::per_pdu), io_ns2_and_errors());
  w.seed("io-hpda-no-sqflow", split(Split::bytes_4097), io_hpda_nosqflow());
  w.seed("io-data-digest-error", split(Split::bytes_72), data_digest_error());
  w.seed("sq-overflow", split(Split::whole), sq_overflow());
  w.seed("bad-icreq-pfv", split(Split::bytes_1), bad_icreq_pfv());
  w.seed("capsule-before-icreq", split(Split::whole), capsule_before_icreq());
  w.seed("bad-pdu-type", split(Split::whole), bad_pdu_type());
  w.seed("header-digest-mismatch", split(Split::per_pdu), header_digest_mismatch());
  w.seed("bad-pdo", split(Split::whole), bad_pdo());
  w.seed("icd-too-large", split(Split::bytes_4095), icd_too_large());
  w.seed("h2c-bad-ttag", split(Split::whole), h2c_bad_ttag(), false);
  w.seed("h2c-beyond-r2t", split(Split::whole), h2c_beyond_r2t());
  w.seed("h2c-too-large", split(Split::per_pdu), h2c_too_large());
  w.seed("h2c-zero-length", split(Split::per_pdu), h2c_zero_length());
  w.seed("host-term-req", split(Split::whole), host_term_req());
  // Captures alternate: PDU by PDU through feed(), the whole stream through the socket.
  for (int i = 2; i < argc; ++i)
    capture_seeds(w, argv[i], i % 2 ? split(Split::per_pdu) : split_socket | split(Split::whole));
  std::printf("%d seeds in %s\n", w.count, w.dir.c_str());
  return 0;
}
