#include "engine/rdma/sgl.hpp"

namespace rdma {
namespace {

inline constexpr uint8_t fabrics_opcode = 0x7f;

uint32_t get_le24(const uint8_t* p) { return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16); }

SglResult parse_in_capsule(const nvme::Sqe& sqe, const CapsuleFacts& capsule) {
  SglResult r;
  const uint64_t offset = sqe.sgl_addr();
  const uint32_t length = sqe.sgl_length();
  // In-capsule data only carries data to the controller.
  if (!host_to_controller(sqe)) return r.status = nvme::status::invalid_field.at(sgl_field::opcode), r;
  if (offset > capsule.icd_capacity || length > capsule.icd_capacity - offset)
    return r.status = nvme::status::sgl_offset_invalid.at(sgl_field::address), r;
  if (offset + length > capsule.icd_received)
    return r.status = nvme::status::sgl_length_invalid.at(sgl_field::length), r;
  if (length) r.data = {DataKind::in_capsule, offset, length, 0, false};
  return r;
}

SglResult parse_keyed(const nvme::Sqe& sqe, bool invalidate) {
  SglResult r;
  const uint32_t length = get_le24(sqe.b.data() + sgl_field::length);
  if (length == 0) return r;  // no data: nothing to read or write
  const uint32_t key = nvme::get_le<uint32_t>(sqe.b.data(), sgl_field::key);
  r.data = {DataKind::keyed, sqe.sgl_addr(), length, key, invalidate};
  return r;
}

}  // namespace

bool host_to_controller(const nvme::Sqe& sqe) {
  return ((sqe.opcode() == fabrics_opcode ? sqe.fctype() : sqe.opcode()) & 1) != 0;
}

SglResult parse_sgl(const nvme::Sqe& sqe, const CapsuleFacts& capsule) {
  const uint8_t type = sqe.sgl_id() >> 4, subtype = sqe.sgl_id() & 0xf;
  const nvme::Status bad_subtype = nvme::status::invalid_field.at(sgl_field::id);
  switch (type) {
    case sgl_type_data_block:
      if (subtype == sgl_subtype_offset) return parse_in_capsule(sqe, capsule);
      return {bad_subtype, {}};
    case sgl_type_keyed_data_block:
      if (subtype == sgl_subtype_address) return parse_keyed(sqe, false);
      if (subtype == sgl_subtype_invalidate) return parse_keyed(sqe, true);
      return {bad_subtype, {}};
    default:
      return {nvme::status::sgl_type_invalid.at(sgl_field::id), {}};
  }
}

void set_keyed_sgl(nvme::Sqe& sqe, uint64_t address, uint32_t length, uint32_t key, bool invalidate) {
  nvme::put_le(sqe.b.data(), sgl_field::address, address);
  sqe.b[sgl_field::length] = static_cast<uint8_t>(length);
  sqe.b[sgl_field::length + 1] = static_cast<uint8_t>(length >> 8);
  sqe.b[sgl_field::length + 2] = static_cast<uint8_t>(length >> 16);
  nvme::put_le(sqe.b.data(), sgl_field::key, key);
  sqe.b[sgl_field::id] = static_cast<uint8_t>(sgl_type_keyed_data_block << 4 |
                                              (invalidate ? sgl_subtype_invalidate : sgl_subtype_address));
  sqe.b[1] = (sqe.b[1] & 0x3f) | (1 << 6);  // PSDT=01: SGL for data
}

}  // namespace rdma
