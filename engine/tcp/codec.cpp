#include "engine/tcp/codec.hpp"

#include <algorithm>
#include <cstring>

#include "engine/nvme/le.hpp"
#include "engine/tcp/digest.hpp"

namespace tcp {
namespace {

using nvme::get_le;
using nvme::put_le;

struct TypeRule {
  uint8_t hlen = 0;
  bool may_have_data = false;
  bool digests = false;  // IC and TermReq PDUs never carry digests
  Role reader = Role::controller;
};

std::optional<TypeRule> rule_for(PduType t) {
  switch (t) {
    case PduType::icreq: return TypeRule{ic_hlen, false, false, Role::controller};
    case PduType::icresp: return TypeRule{ic_hlen, false, false, Role::host};
    case PduType::h2c_term_req: return TypeRule{term_hlen, true, false, Role::controller};
    case PduType::c2h_term_req: return TypeRule{term_hlen, true, false, Role::host};
    case PduType::capsule_cmd: return TypeRule{capsule_cmd_hlen, true, true, Role::controller};
    case PduType::capsule_resp: return TypeRule{capsule_resp_hlen, false, true, Role::host};
    case PduType::h2c_data: return TypeRule{data_hlen, true, true, Role::controller};
    case PduType::c2h_data: return TypeRule{data_hlen, true, true, Role::host};
    case PduType::r2t: return TypeRule{data_hlen, false, true, Role::host};
  }
  return std::nullopt;
}

bool is_ic(PduType t) { return t == PduType::icreq || t == PduType::icresp; }
bool is_term(PduType t) { return t == PduType::h2c_term_req || t == PduType::c2h_term_req; }

FramingResult fail(Fes fes, uint32_t fei) { return {Framing{}, ProtocolError{fes, fei}}; }

void put_common(std::span<uint8_t> out, PduType type, uint8_t flags, uint8_t hlen, uint8_t pdo,
                uint32_t plen) {
  out[0] = static_cast<uint8_t>(type);
  out[1] = flags;
  out[2] = hlen;
  out[3] = pdo;
  put_le(out.data(), 4, plen);
}

// Finishes a header whose type-specific part is already in out: common header, digest, padding.
size_t finish_header(std::span<uint8_t> out, PduType type, uint8_t flags, uint8_t hlen,
                     uint32_t data_len, Digests d, uint8_t pda) {
  const bool has_data = data_len > 0;
  if (d.hdgst) flags |= flag::hdgstf;
  if (d.ddgst && has_data) flags |= flag::ddgstf;
  const uint32_t pdo = has_data ? data_offset(hlen, d.hdgst, pda) : 0;
  const uint32_t hdr_end = hlen + (d.hdgst ? digest_len : 0);
  const uint32_t plen = has_data ? pdo + data_len + (d.ddgst ? digest_len : 0) : hdr_end;
  put_common(out, type, flags, hlen, static_cast<uint8_t>(pdo), plen);
  if (d.hdgst) put_le(out.data(), hlen, crc32c(out.data(), hlen));
  if (!has_data) return hdr_end;
  std::fill(out.begin() + hdr_end, out.begin() + pdo, uint8_t{0});
  return pdo;
}

}  // namespace

uint32_t Framing::total() const {
  if (data_len == 0) return header_len;
  return data_off + data_len + (has_ddgst ? digest_len : 0);
}

uint32_t data_offset(uint32_t hlen, bool hdgst, uint8_t pda) {
  const uint32_t end = hlen + (hdgst ? digest_len : 0);
  const uint32_t align = (static_cast<uint32_t>(pda) + 1) * 4;
  return (end + align - 1) / align * align;
}

CommonHeader parse_common(std::span<const uint8_t, ch_len> ch) {
  return CommonHeader{static_cast<PduType>(ch[0]), ch[1], ch[2], ch[3], get_le<uint32_t>(ch.data(), 4)};
}

FramingResult check_common(const CommonHeader& ch, Role reader, const Negotiated& n) {
  const auto rule = rule_for(ch.type);
  if (!rule || rule->reader != reader) return fail(Fes::invalid_header_field, field::type);
  // TermReqs may come at any time, even in answer to a bad ICReq.
  if (!is_term(ch.type) && is_ic(ch.type) == n.connected) return fail(Fes::pdu_sequence_error, field::type);
  if (ch.hlen != rule->hlen) return fail(Fes::invalid_header_field, field::hlen);

  Framing f;
  f.has_hdgst = rule->digests && n.hdgst;
  if (rule->digests && ((ch.flags & flag::hdgstf) != 0) != n.hdgst)
    return fail(Fes::invalid_header_field, field::flags);
  f.header_len = ch.hlen + (f.has_hdgst ? digest_len : 0);
  if (ch.plen < f.header_len) return fail(Fes::invalid_header_field, field::plen);

  if (is_term(ch.type)) {  // header plus up to 128 bytes of the offending PDU, no digests
    if (ch.plen > term_max_plen) return fail(Fes::invalid_header_field, field::plen);
    f.data_len = ch.plen - f.header_len;
    f.data_off = f.data_len ? f.header_len : 0;
    return {f, std::nullopt};
  }
  if (ch.plen == f.header_len) {
    if (ch.flags & flag::ddgstf) return fail(Fes::invalid_header_field, field::flags);
    return {f, std::nullopt};
  }
  if (!rule->may_have_data) return fail(Fes::invalid_header_field, field::plen);

  f.has_ddgst = n.ddgst;
  if (((ch.flags & flag::ddgstf) != 0) != n.ddgst) return fail(Fes::invalid_header_field, field::flags);
  const uint32_t align = (static_cast<uint32_t>(n.pda) + 1) * 4;
  if (ch.pdo < f.header_len || ch.pdo % align != 0) return fail(Fes::invalid_header_field, field::pdo);
  const uint32_t trailer = f.has_ddgst ? digest_len : 0;
  if (ch.plen <= static_cast<uint32_t>(ch.pdo) + trailer) return fail(Fes::invalid_header_field, field::plen);
  f.data_off = ch.pdo;
  f.data_len = ch.plen - ch.pdo - trailer;
  return {f, std::nullopt};
}

bool header_digest_ok(std::span<const uint8_t> h, uint32_t hlen) {
  return h.size() >= hlen + digest_len && crc32c(h.data(), hlen) == get_le<uint32_t>(h.data(), hlen);
}

IcReq parse_icreq(std::span<const uint8_t> h) {
  return IcReq{get_le<uint16_t>(h.data(), field::pfv), h[field::hpda], (h[field::dgst] & 1) != 0,
               (h[field::dgst] & 2) != 0, get_le<uint32_t>(h.data(), field::maxr2t)};
}

IcResp parse_icresp(std::span<const uint8_t> h) {
  return IcResp{get_le<uint16_t>(h.data(), field::pfv), h[field::cpda], (h[field::dgst] & 1) != 0,
                (h[field::dgst] & 2) != 0, get_le<uint32_t>(h.data(), field::maxh2cdata)};
}

TermReq parse_term_req(std::span<const uint8_t> h) {
  return TermReq{static_cast<Fes>(get_le<uint16_t>(h.data(), 8)), get_le<uint32_t>(h.data(), 10)};
}

nvme::Sqe parse_capsule_cmd(std::span<const uint8_t> h) {
  nvme::Sqe sqe;
  std::memcpy(sqe.b.data(), h.data() + ch_len, nvme::sqe_size);
  return sqe;
}

nvme::Cqe parse_capsule_resp(std::span<const uint8_t> h) {
  nvme::Cqe cqe;
  std::memcpy(&cqe, h.data() + ch_len, nvme::cqe_size);
  return cqe;
}

DataHeader parse_data(std::span<const uint8_t> h) {
  return DataHeader{get_le<uint16_t>(h.data(), field::cccid), get_le<uint16_t>(h.data(), field::ttag),
                    get_le<uint32_t>(h.data(), field::datao), get_le<uint32_t>(h.data(), field::datal)};
}

R2t parse_r2t(std::span<const uint8_t> h) {
  return R2t{get_le<uint16_t>(h.data(), 8), get_le<uint16_t>(h.data(), 10), get_le<uint32_t>(h.data(), 12),
             get_le<uint32_t>(h.data(), 16)};
}

size_t write_icreq(std::span<uint8_t> out, const IcReq& r) {
  std::fill_n(out.begin(), ic_hlen, uint8_t{0});
  put_common(out, PduType::icreq, 0, ic_hlen, 0, ic_hlen);
  put_le(out.data(), field::pfv, r.pfv);
  out[field::hpda] = r.hpda;
  out[field::dgst] = static_cast<uint8_t>((r.hdgst ? 1 : 0) | (r.ddgst ? 2 : 0));
  put_le(out.data(), field::maxr2t, r.maxr2t);
  return ic_hlen;
}

size_t write_icresp(std::span<uint8_t> out, const IcResp& r) {
  std::fill_n(out.begin(), ic_hlen, uint8_t{0});
  put_common(out, PduType::icresp, 0, ic_hlen, 0, ic_hlen);
  put_le(out.data(), field::pfv, r.pfv);
  out[field::cpda] = r.cpda;
  out[field::dgst] = static_cast<uint8_t>((r.hdgst ? 1 : 0) | (r.ddgst ? 2 : 0));
  put_le(out.data(), field::maxh2cdata, r.maxh2cdata);
  return ic_hlen;
}

size_t write_term_req(std::span<uint8_t> out, PduType type, const TermReq& t,
                      std::span<const uint8_t> offending) {
  const size_t n = std::min<size_t>(offending.size(), term_max_data);
  std::fill_n(out.begin(), term_hlen, uint8_t{0});
  // PDO stays 0 as SPDK sends it: the quoted header is not data of the usual kind.
  put_common(out, type, 0, term_hlen, 0, static_cast<uint32_t>(term_hlen + n));
  put_le(out.data(), 8, static_cast<uint16_t>(t.fes));
  put_le(out.data(), 10, t.fei);
  if (n) std::memcpy(out.data() + term_hlen, offending.data(), n);  // data() may be null when empty
  return term_hlen + n;
}

size_t write_capsule_cmd(std::span<uint8_t> out, const nvme::Sqe& sqe, uint32_t icd_len, Digests d,
                         uint8_t pda) {
  std::memcpy(out.data() + ch_len, sqe.b.data(), nvme::sqe_size);
  return finish_header(out, PduType::capsule_cmd, 0, capsule_cmd_hlen, icd_len, d, pda);
}

size_t write_capsule_resp(std::span<uint8_t> out, const nvme::Cqe& cqe, Digests d) {
  std::memcpy(out.data() + ch_len, &cqe, nvme::cqe_size);
  return finish_header(out, PduType::capsule_resp, 0, capsule_resp_hlen, 0, d, 0);
}

namespace {
void put_data_header(std::span<uint8_t> out, const DataHeader& h) {
  put_le(out.data(), field::cccid, h.cccid);
  put_le(out.data(), field::ttag, h.ttag);
  put_le(out.data(), field::datao, h.datao);
  put_le(out.data(), field::datal, h.datal);
  put_le(out.data(), 20, uint32_t{0});
}
}  // namespace

size_t write_c2h_data(std::span<uint8_t> out, const DataHeader& h, uint8_t flags, Digests d, uint8_t pda) {
  DataHeader c2h = h;
  c2h.ttag = 0;
  put_data_header(out, c2h);
  return finish_header(out, PduType::c2h_data, flags & (flag::last_pdu | flag::success), data_hlen,
                       h.datal, d, pda);
}

size_t write_h2c_data(std::span<uint8_t> out, const DataHeader& h, bool last, Digests d, uint8_t pda) {
  put_data_header(out, h);
  return finish_header(out, PduType::h2c_data, last ? flag::last_pdu : 0, data_hlen, h.datal, d, pda);
}

size_t write_r2t(std::span<uint8_t> out, const R2t& r, Digests d) {
  put_le(out.data(), 8, r.cccid);
  put_le(out.data(), 10, r.ttag);
  put_le(out.data(), 12, r.r2to);
  put_le(out.data(), 16, r.r2tl);
  put_le(out.data(), 20, uint32_t{0});
  return finish_header(out, PduType::r2t, 0, data_hlen, 0, d, 0);
}

}  // namespace tcp
