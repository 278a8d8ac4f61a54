#pragma once
// SQE builders for the commands a host sends (Fabrics, Admin, NVM). Each returns a complete
// SQE except CID and DPTR, which TcpQueue fills when the command is submitted. Field names and
// bit positions follow the NVMe Base 2.0 and Fabrics 1.1 specifications.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "engine/nvme/spec.hpp"

namespace initiator::cmd {

// CC value the host writes to enable a controller: EN=1, CSS=NVM, MPS=4 KiB, IOSQES=6, IOCQES=4.
inline constexpr uint32_t cc_enable = 1u | (6u << 16) | (4u << 20);
inline constexpr uint32_t cc_shn_normal = 1u << 14;
inline constexpr uint32_t csts_rdy = 1u << 0;
inline constexpr uint32_t csts_cfs = 1u << 1;
inline constexpr uint32_t csts_shst_mask = 3u << 2;
inline constexpr uint32_t csts_shst_complete = 2u << 2;

// Fabrics. sqsize is 0-based (entries - 1); kato in milliseconds (admin queue only);
// disable_sqflow sets CATTR bit 2 (SQ flow control off: SQHD not maintained, and an NVMe/TCP
// controller may then complete reads with the C2HData SUCCESS flag instead of a CapsuleResp).
inline constexpr uint8_t cattr_disable_sqflow = 1u << 2;
nvme::Sqe connect(uint16_t qid, uint16_t sqsize, uint32_t kato_ms, bool disable_sqflow = false);
// The 1024-byte Connect data: host identifier, CNTLID (0xFFFF = dynamic), SUBNQN, HOSTNQN.
std::array<uint8_t, nvme::connect_data::size> connect_data(const std::array<uint8_t, 16>& hostid,
                                                           uint16_t cntlid, std::string_view subnqn,
                                                           std::string_view hostnqn);
nvme::Sqe property_get(nvme::Property p, bool eight_bytes);
nvme::Sqe property_set(nvme::Property p, uint64_t value, bool eight_bytes);
nvme::Sqe disconnect();

// Admin.
nvme::Sqe identify(uint8_t cns, uint32_t nsid, uint16_t cntid = 0);
// len in bytes (a multiple of 4), offset in bytes; lsp is the log specific field.
nvme::Sqe get_log_page(uint8_t lid, uint32_t len, uint64_t offset, uint8_t lsp, uint32_t nsid,
                       bool rae = false);
nvme::Sqe get_features(uint8_t fid, uint32_t cdw11, uint32_t nsid = 0, uint8_t sel = 0);
nvme::Sqe set_features(uint8_t fid, uint32_t cdw11, uint32_t nsid = 0, bool save = false);
nvme::Sqe keep_alive();
nvme::Sqe async_event_request();
nvme::Sqe abort(uint16_t sqid, uint16_t cid);

// NVM. nlb0 is the 0-based number of logical blocks.
nvme::Sqe read(uint32_t nsid, uint64_t slba, uint16_t nlb0, bool fua = false);
nvme::Sqe write(uint32_t nsid, uint64_t slba, uint16_t nlb0, bool fua = false);
nvme::Sqe compare(uint32_t nsid, uint64_t slba, uint16_t nlb0);
nvme::Sqe write_zeroes(uint32_t nsid, uint64_t slba, uint16_t nlb0, bool fua = false);
nvme::Sqe flush(uint32_t nsid);
// ranges: number of 16-byte DSM ranges in the data (1..256); deallocate sets the AD attribute.
nvme::Sqe dataset_management(uint32_t nsid, uint32_t ranges, bool deallocate = true);
// One 16-byte DSM range (context attributes, length in blocks, starting LBA).
void put_dsm_range(std::span<uint8_t> data, uint32_t index, uint64_t slba, uint32_t nlb,
                   uint32_t cattr = 0);

}  // namespace initiator::cmd
