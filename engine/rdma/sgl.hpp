#pragma once
// The data pointer of an NVMe/RDMA command capsule (NVMe RDMA Transport Specification 1.0b,
// "Data Transfer"; nvmet_rdma_map_sgl in Linux drivers/nvme/target/rdma.c). Fabrics use one SGL
// descriptor in DPTR (SQE bytes 39:24):
//   Keyed SGL Data Block (type 4): ADDRESS 31:24, LENGTH 34:32 (24 bits), KEY 38:35, ID 39;
//     subtype 0 = address, 0xF = address + invalidate the key with the response.
//   SGL Data Block (type 0) with subtype 1 (offset): data in the capsule at ADDRESS bytes after
//     the SQE, LENGTH 35:32.
// Pure functions: a descriptor becomes a DataDescriptor or the NVMe status the command fails with.
#include <cstdint>

#include "engine/nvme/spec.hpp"
#include "engine/nvme/status.hpp"

namespace rdma {

inline constexpr uint8_t sgl_type_data_block = 0x0;
inline constexpr uint8_t sgl_type_keyed_data_block = 0x4;
inline constexpr uint8_t sgl_subtype_address = 0x0;
inline constexpr uint8_t sgl_subtype_offset = 0x1;
inline constexpr uint8_t sgl_subtype_invalidate = 0xf;
inline constexpr uint32_t keyed_sgl_max_length = (1u << 24) - 1;

// SQE byte offsets of the DPTR fields (the error location of a status).
namespace sgl_field {
inline constexpr uint16_t opcode = 0, address = 24, length = 32, key = 35, id = 39;
}

enum class DataKind : uint8_t { none, in_capsule, keyed };

struct DataDescriptor {
  DataKind kind = DataKind::none;
  uint64_t address = 0;  // keyed: the host's virtual address; in_capsule: offset after the SQE
  uint32_t length = 0;
  uint32_t key = 0;      // keyed: the host's rkey
  bool invalidate = false;  // keyed: respond with SEND_WITH_INV of key
};

struct SglResult {
  nvme::Status status;
  DataDescriptor data;
};

// What the queue knows about the capsule the descriptor came in.
struct CapsuleFacts {
  uint32_t icd_capacity = 0;  // the in-capsule data this queue accepts (its receive buffers)
  uint32_t icd_received = 0;  // bytes that came after the SQE in this capsule
};

// Whether the command moves data from host to controller (nvme_is_write: bit 0 of the opcode,
// of FCTYPE for fabrics commands).
bool host_to_controller(const nvme::Sqe& sqe);

SglResult parse_sgl(const nvme::Sqe& sqe, const CapsuleFacts& capsule);

// Writes a keyed data block descriptor into sqe (the host side; tests and tools).
void set_keyed_sgl(nvme::Sqe& sqe, uint64_t address, uint32_t length, uint32_t key, bool invalidate);

}  // namespace rdma
