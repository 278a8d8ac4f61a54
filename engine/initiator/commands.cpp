#include "engine/initiator/commands.hpp"

#include <algorithm>

#include "engine/nvme/le.hpp"

namespace initiator::cmd {
namespace {

using nvme::put_le;

nvme::Sqe admin(nvme::AdminOpcode op, uint32_t nsid = 0) {
  nvme::Sqe s;
  s.set_opcode(static_cast<uint8_t>(op));
  s.set_nsid(nsid);
  return s;
}

nvme::Sqe fabrics(nvme::FabricsType t) {
  nvme::Sqe s;
  s.set_opcode(static_cast<uint8_t>(nvme::AdminOpcode::fabrics));
  s.b[4] = static_cast<uint8_t>(t);  // FCTYPE
  return s;
}

nvme::Sqe nvm(nvme::NvmOpcode op, uint32_t nsid, uint64_t slba, uint16_t nlb0, bool fua) {
  nvme::Sqe s;
  s.set_opcode(static_cast<uint8_t>(op));
  s.set_nsid(nsid);
  put_le(s.b.data(), 40, slba);  // CDW10-11: SLBA
  s.set_cdw(12, nlb0 | (fua ? 1u << 30 : 0u));
  return s;
}

}  // namespace

nvme::Sqe connect(uint16_t qid, uint16_t sqsize, uint32_t kato_ms, bool disable_sqflow) {
  auto s = fabrics(nvme::FabricsType::connect);
  put_le(s.b.data(), 40, uint16_t{0});  // RECFMT
  put_le(s.b.data(), 42, qid);
  put_le(s.b.data(), 44, sqsize);
  s.b[46] = disable_sqflow ? cattr_disable_sqflow : 0;  // CATTR
  put_le(s.b.data(), 48, kato_ms);
  return s;
}

std::array<uint8_t, nvme::connect_data::size> connect_data(const std::array<uint8_t, 16>& hostid,
                                                           uint16_t cntlid, std::string_view subnqn,
                                                           std::string_view hostnqn) {
  namespace cd = nvme::connect_data;
  std::array<uint8_t, cd::size> d{};
  std::copy(hostid.begin(), hostid.end(), d.begin() + cd::hostid);
  put_le(d.data(), cd::cntlid, cntlid);
  nvme::put_ascii(d.data(), cd::subnqn, cd::nqn_width, subnqn, '\0');
  nvme::put_ascii(d.data(), cd::hostnqn, cd::nqn_width, hostnqn, '\0');
  return d;
}

nvme::Sqe property_get(nvme::Property p, bool eight_bytes) {
  auto s = fabrics(nvme::FabricsType::property_get);
  s.b[40] = eight_bytes ? 1 : 0;  // ATTRIB.SIZE
  put_le(s.b.data(), 44, static_cast<uint32_t>(p));
  return s;
}

nvme::Sqe property_set(nvme::Property p, uint64_t value, bool eight_bytes) {
  auto s = fabrics(nvme::FabricsType::property_set);
  s.b[40] = eight_bytes ? 1 : 0;
  put_le(s.b.data(), 44, static_cast<uint32_t>(p));
  put_le(s.b.data(), 48, eight_bytes ? value : (value & 0xffffffffu));
  return s;
}

nvme::Sqe disconnect() {
  auto s = fabrics(nvme::FabricsType::disconnect);
  put_le(s.b.data(), 40, uint16_t{0});  // RECFMT
  return s;
}

nvme::Sqe identify(uint8_t cns, uint32_t nsid, uint16_t cntid) {
  auto s = admin(nvme::AdminOpcode::identify, nsid);
  s.set_cdw(10, cns | (static_cast<uint32_t>(cntid) << 16));
  return s;
}

nvme::Sqe get_log_page(uint8_t lid, uint32_t len, uint64_t offset, uint8_t lsp, uint32_t nsid,
                       bool rae) {
  auto s = admin(nvme::AdminOpcode::get_log_page, nsid);
  const uint32_t numd = len / 4 - 1;  // 0-based dwords
  s.set_cdw(10, lid | (static_cast<uint32_t>(lsp & 0x7f) << 8) | (rae ? 1u << 15 : 0u) |
                    ((numd & 0xffff) << 16));
  s.set_cdw(11, numd >> 16);
  s.set_cdw(12, static_cast<uint32_t>(offset));
  s.set_cdw(13, static_cast<uint32_t>(offset >> 32));
  return s;
}

nvme::Sqe get_features(uint8_t fid, uint32_t cdw11, uint32_t nsid, uint8_t sel) {
  auto s = admin(nvme::AdminOpcode::get_features, nsid);
  s.set_cdw(10, fid | (static_cast<uint32_t>(sel & 7) << 8));
  s.set_cdw(11, cdw11);
  return s;
}

nvme::Sqe set_features(uint8_t fid, uint32_t cdw11, uint32_t nsid, bool save) {
  auto s = admin(nvme::AdminOpcode::set_features, nsid);
  s.set_cdw(10, fid | (save ? 1u << 31 : 0u));
  s.set_cdw(11, cdw11);
  return s;
}

nvme::Sqe keep_alive() { return admin(nvme::AdminOpcode::keep_alive); }
nvme::Sqe async_event_request() { return admin(nvme::AdminOpcode::async_event_request); }

nvme::Sqe abort(uint16_t sqid, uint16_t cid) {
  auto s = admin(nvme::AdminOpcode::abort);
  s.set_cdw(10, sqid | (static_cast<uint32_t>(cid) << 16));
  return s;
}

nvme::Sqe read(uint32_t nsid, uint64_t slba, uint16_t nlb0, bool fua) {
  return nvm(nvme::NvmOpcode::read, nsid, slba, nlb0, fua);
}
nvme::Sqe write(uint32_t nsid, uint64_t slba, uint16_t nlb0, bool fua) {
  return nvm(nvme::NvmOpcode::write, nsid, slba, nlb0, fua);
}
nvme::Sqe compare(uint32_t nsid, uint64_t slba, uint16_t nlb0) {
  return nvm(nvme::NvmOpcode::compare, nsid, slba, nlb0, false);
}
nvme::Sqe write_zeroes(uint32_t nsid, uint64_t slba, uint16_t nlb0, bool fua) {
  return nvm(nvme::NvmOpcode::write_zeroes, nsid, slba, nlb0, fua);
}
nvme::Sqe flush(uint32_t nsid) {
  nvme::Sqe s;
  s.set_opcode(static_cast<uint8_t>(nvme::NvmOpcode::flush));
  s.set_nsid(nsid);
  return s;
}

nvme::Sqe dataset_management(uint32_t nsid, uint32_t ranges, bool deallocate) {
  nvme::Sqe s;
  s.set_opcode(static_cast<uint8_t>(nvme::NvmOpcode::dataset_management));
  s.set_nsid(nsid);
  s.set_cdw(10, (ranges - 1) & 0xff);  // NR, 0-based
  s.set_cdw(11, deallocate ? 1u << 2 : 0u);  // AD
  return s;
}

void put_dsm_range(std::span<uint8_t> data, uint32_t index, uint64_t slba, uint32_t nlb,
                   uint32_t cattr) {
  const size_t off = static_cast<size_t>(index) * 16;
  put_le(data.data(), off, cattr);
  put_le(data.data(), off + 4, nlb);
  put_le(data.data(), off + 8, slba);
}

}  // namespace initiator::cmd
