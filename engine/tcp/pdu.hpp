#pragma once
// NVMe/TCP PDU layouts (NVMe/TCP Transport Specification 1.0, formerly TP 8000).
// Plain values; the codec (codec.hpp) turns them into bytes and back.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/nvme/spec.hpp"

namespace tcp {

enum class PduType : uint8_t {
  icreq = 0x00,
  icresp = 0x01,
  h2c_term_req = 0x02,
  c2h_term_req = 0x03,
  capsule_cmd = 0x04,
  capsule_resp = 0x05,
  h2c_data = 0x06,
  c2h_data = 0x07,
  r2t = 0x09,
};

namespace flag {
inline constexpr uint8_t hdgstf = 0x01;
inline constexpr uint8_t ddgstf = 0x02;
inline constexpr uint8_t last_pdu = 0x04;  // H2CData, C2HData
inline constexpr uint8_t success = 0x08;   // C2HData: no CapsuleResp follows
}  // namespace flag

inline constexpr uint32_t ch_len = 8;
inline constexpr uint32_t digest_len = 4;
inline constexpr uint32_t ic_hlen = 128;
inline constexpr uint32_t term_hlen = 24;
inline constexpr uint32_t capsule_cmd_hlen = ch_len + nvme::sqe_size;  // 72
inline constexpr uint32_t capsule_resp_hlen = ch_len + nvme::cqe_size;  // 24
inline constexpr uint32_t data_hlen = 24;  // H2CData, C2HData, R2T
inline constexpr uint32_t max_hlen = ic_hlen;
// A TermReq carries the offending PDU header, up to this many bytes of it.
inline constexpr uint32_t term_max_data = 128;
inline constexpr uint32_t term_max_plen = term_hlen + term_max_data;

// Fatal Error Status of H2C/C2HTermReq.
enum class Fes : uint16_t {
  invalid_header_field = 0x01,
  pdu_sequence_error = 0x02,
  header_digest_error = 0x03,
  data_out_of_range = 0x04,
  data_transfer_limit_exceeded = 0x05,  // more data than MAXH2CDATA or the capsule size allow
  unsupported_parameter = 0x06,
};

struct CommonHeader {
  PduType type{};
  uint8_t flags = 0;
  uint8_t hlen = 0;
  uint8_t pdo = 0;
  uint32_t plen = 0;
};

struct IcReq {
  uint16_t pfv = 0;
  uint8_t hpda = 0;
  bool hdgst = false;
  bool ddgst = false;
  uint32_t maxr2t = 0;  // 0-based
};

struct IcResp {
  uint16_t pfv = 0;
  uint8_t cpda = 0;
  bool hdgst = false;
  bool ddgst = false;
  uint32_t maxh2cdata = 0;
};

struct TermReq {
  Fes fes{};
  uint32_t fei = 0;  // Fatal Error Information: for header errors, the byte offset of the field
};

struct DataHeader {  // H2CData and C2HData
  uint16_t cccid = 0;
  uint16_t ttag = 0;  // H2CData only
  uint32_t datao = 0;
  uint32_t datal = 0;
};

struct R2t {
  uint16_t cccid = 0;
  uint16_t ttag = 0;
  uint32_t r2to = 0;
  uint32_t r2tl = 0;
};

// Byte offsets of header fields, for FEI values that point at the bad field.
namespace field {
inline constexpr uint32_t type = 0, flags = 1, hlen = 2, pdo = 3, plen = 4;
inline constexpr uint32_t pfv = 8, hpda = 10, cpda = 10, dgst = 11, maxr2t = 12, maxh2cdata = 12;
inline constexpr uint32_t cccid = 8, ttag = 10, datao = 12, datal = 16;
}  // namespace field

}  // namespace tcp
