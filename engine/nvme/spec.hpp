#pragma once
// NVMe Base / Fabrics spec types: SQE, CQE, opcodes. Names follow the specification.
#include <array>
#include <cstdint>

#include "engine/nvme/le.hpp"

namespace nvme {

inline constexpr uint32_t sqe_size = 64;
inline constexpr uint32_t cqe_size = 16;

// Submission queue entry: kept as bytes; accessors name the spec fields.
struct Sqe {
  std::array<uint8_t, sqe_size> b{};

  uint8_t opcode() const { return b[0]; }
  uint8_t fuse() const { return b[1] & 0x3; }
  uint8_t psdt() const { return (b[1] >> 6) & 0x3; }
  uint16_t cid() const { return get_le<uint16_t>(b.data(), 2); }
  uint32_t nsid() const { return get_le<uint32_t>(b.data(), 4); }
  uint8_t fctype() const { return b[4]; }  // fabrics commands reuse the NSID bytes
  uint32_t cdw(unsigned n) const { return get_le<uint32_t>(b.data(), n * 4); }
  // DPTR as an SGL descriptor (fabrics always use SGLs).
  uint64_t sgl_addr() const { return get_le<uint64_t>(b.data(), 24); }
  uint32_t sgl_length() const { return get_le<uint32_t>(b.data(), 32); }
  uint8_t sgl_id() const { return b[39]; }
  uint64_t slba() const { return get_le<uint64_t>(b.data(), 40); }
  uint32_t nlb0() const { return cdw(12) & 0xffff; }  // 0-based
  bool fua() const { return (cdw(12) >> 30) & 1; }

  void set_opcode(uint8_t v) { b[0] = v; }
  void set_cid(uint16_t v) { put_le(b.data(), 2, v); }
  void set_nsid(uint32_t v) { put_le(b.data(), 4, v); }
  void set_cdw(unsigned n, uint32_t v) { put_le(b.data(), n * 4, v); }
  void set_sgl(uint64_t addr, uint32_t len, uint8_t id) {
    put_le(b.data(), 24, addr);
    put_le(b.data(), 32, len);
    b[36] = b[37] = b[38] = 0;
    b[39] = id;
    b[1] = (b[1] & 0x3f) | (1 << 6);  // PSDT=01: SGL for data
  }
};
static_assert(sizeof(Sqe) == sqe_size);

// SGL descriptor identifiers (type << 4 | subtype) used by NVMe/TCP.
inline constexpr uint8_t sgl_data_block_offset = 0x01;  // in-capsule data
inline constexpr uint8_t sgl_transport_data_block = 0x5a;  // data via R2T/H2CData or C2HData

struct Cqe {
  uint32_t dw0 = 0;
  uint32_t dw1 = 0;
  uint16_t sqhd = 0;
  uint16_t sqid = 0;
  uint16_t cid = 0;
  uint16_t status = 0;  // bit 0: phase tag; bits 15:1 the Status Field
};
static_assert(sizeof(Cqe) == cqe_size);

enum class AdminOpcode : uint8_t {
  get_log_page = 0x02,
  identify = 0x06,
  abort = 0x08,
  set_features = 0x09,
  get_features = 0x0a,
  async_event_request = 0x0c,
  keep_alive = 0x18,
  fabrics = 0x7f,
};

enum class NvmOpcode : uint8_t {
  flush = 0x00,
  write = 0x01,
  read = 0x02,
  compare = 0x05,
  write_zeroes = 0x08,
  dataset_management = 0x09,
};

enum class FabricsType : uint8_t {
  property_set = 0x00,
  connect = 0x01,
  property_get = 0x04,
  authentication_send = 0x05,
  authentication_receive = 0x06,
  disconnect = 0x08,
};

enum class Cns : uint8_t {
  namespace_ = 0x00,
  controller = 0x01,
  active_namespace_list = 0x02,
  namespace_id_descriptors = 0x03,
};

enum class LogPage : uint8_t {
  error = 0x01,
  smart = 0x02,
  firmware_slot = 0x03,
  changed_namespace_list = 0x04,
  ana = 0x0c,
  discovery = 0x70,
};

enum class FeatureId : uint8_t {
  volatile_write_cache = 0x06,
  number_of_queues = 0x07,
  async_event_config = 0x0b,
  keep_alive_timer = 0x0f,
};

// Controller properties (Fabrics Property Get/Set offsets).
enum class Property : uint32_t { cap = 0x00, vs = 0x08, cc = 0x14, csts = 0x1c, nssr = 0x20 };

inline constexpr uint32_t version_2_0 = 0x00020000;
inline constexpr uint32_t version_1_3 = 0x00010300;
inline constexpr const char* discovery_nqn = "nqn.2014-08.org.nvmexpress.discovery";
// An NQN is UTF-8 of at most 223 bytes; fields that carry one are 256 bytes, null-terminated.
inline constexpr size_t nqn_max_bytes = 223;

// Connect command data (1024 bytes) field offsets.
namespace connect_data {
inline constexpr size_t size = 1024;
inline constexpr size_t hostid = 0;
inline constexpr size_t cntlid = 16;
inline constexpr size_t subnqn = 256;
inline constexpr size_t hostnqn = 512;
inline constexpr size_t nqn_width = 256;
}  // namespace connect_data

// Asynchronous event: type notice, info, log page.
inline constexpr uint32_t aen_notice_ns_changed = 0x02 | (0x00 << 8) | (0x04 << 16);
inline constexpr uint32_t aen_notice_ana_changed = 0x02 | (0x03 << 8) | (0x0c << 16);

}  // namespace nvme
