#pragma once
// NVMe/TCP PDU codec: pure functions over bytes, no I/O and no queue state. Shared by the
// target's receive/send paths (queue.hpp) and the host in engine/initiator/.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "engine/nvme/spec.hpp"
#include "engine/tcp/pdu.hpp"

namespace tcp {

// Which side is reading: the controller accepts only H2C PDUs, the host only C2H PDUs.
enum class Role : uint8_t { controller, host };

// What was agreed in ICReq/ICResp; before that, digests are off and only IC PDUs are valid.
struct Negotiated {
  bool connected = false;  // ICReq/ICResp exchanged
  bool hdgst = false;
  bool ddgst = false;
  uint8_t pda = 0;  // data alignment the *reader* asked for (CPDA at the controller)
};

struct ProtocolError {
  Fes fes{};
  uint32_t fei = 0;
};

// The framing of one PDU once its common header is known.
struct Framing {
  uint32_t header_len = 0;  // hlen plus header digest if present
  uint32_t data_off = 0;    // PDO (0 when no data)
  uint32_t data_len = 0;    // data bytes, without padding or digest
  bool has_hdgst = false;
  bool has_ddgst = false;
  uint32_t total() const;   // == plen
};

CommonHeader parse_common(std::span<const uint8_t, ch_len> ch);

// Checks the common header against the PDU type's fixed rules and the negotiated state.
// On success returns how the rest of the PDU is laid out.
struct FramingResult {
  Framing framing;
  std::optional<ProtocolError> error;
};
FramingResult check_common(const CommonHeader& ch, Role reader, const Negotiated& n);

// Verifies the header digest that follows hlen bytes of header.
bool header_digest_ok(std::span<const uint8_t> header_with_digest, uint32_t hlen);

// Type-specific header parsers; the span holds at least hlen bytes.
IcReq parse_icreq(std::span<const uint8_t> h);
IcResp parse_icresp(std::span<const uint8_t> h);
TermReq parse_term_req(std::span<const uint8_t> h);
nvme::Sqe parse_capsule_cmd(std::span<const uint8_t> h);
nvme::Cqe parse_capsule_resp(std::span<const uint8_t> h);
DataHeader parse_data(std::span<const uint8_t> h);
R2t parse_r2t(std::span<const uint8_t> h);

// Serializers write a complete header (with header digest when hdgst) into out and return the
// bytes written. Data, padding and the data digest are the caller's (they may live elsewhere).
// out must hold at least max_hlen + digest_len bytes.
struct Digests {
  bool hdgst = false;
  bool ddgst = false;
};
size_t write_icreq(std::span<uint8_t> out, const IcReq& r);
size_t write_icresp(std::span<uint8_t> out, const IcResp& r);
// A TermReq copies up to term_max_data bytes of the offending header; never carries digests.
size_t write_term_req(std::span<uint8_t> out, PduType type, const TermReq& t,
                      std::span<const uint8_t> offending);
// CapsuleCmd: icd_len bytes of in-capsule data will follow at PDO (padding to pda included in
// the returned header length, so the caller appends data right after).
size_t write_capsule_cmd(std::span<uint8_t> out, const nvme::Sqe& sqe, uint32_t icd_len,
                         Digests d, uint8_t pda);
size_t write_capsule_resp(std::span<uint8_t> out, const nvme::Cqe& cqe, Digests d);
size_t write_c2h_data(std::span<uint8_t> out, const DataHeader& h, uint8_t flags, Digests d,
                      uint8_t pda);
size_t write_h2c_data(std::span<uint8_t> out, const DataHeader& h, bool last, Digests d,
                      uint8_t pda);
size_t write_r2t(std::span<uint8_t> out, const R2t& r, Digests d);

// Where data starts after a header of hlen bytes: hlen (+ digest) rounded up to (pda+1)*4.
uint32_t data_offset(uint32_t hlen, bool hdgst, uint8_t pda);

}  // namespace tcp
