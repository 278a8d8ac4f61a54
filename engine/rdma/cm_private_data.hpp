#pragma once
// NVMe/RDMA connection private data (NVMe RDMA Transport Specification 1.0b, "RDMA_CM_REQUEST",
// "RDMA_CM_ACCEPT", "RDMA_CM_REJECT"; Linux include/linux/nvme-rdma.h). Pure functions over
// bytes: what the host asks for in the CM request, what we answer on accept, and the status a
// reject carries. No rdma_cm calls here.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace rdma {

inline constexpr uint16_t cm_recfmt_1_0 = 0x0;
inline constexpr size_t cm_request_size = 32;  // bytes 09:08 CNTLID (reserved in 1.0b), 31:10 reserved
inline constexpr size_t cm_accept_size = 32;   // bytes 31:04 reserved
inline constexpr size_t cm_reject_size = 4;
// The admin queue's largest size (NVME_AQ_DEPTH of the Linux host and target).
inline constexpr uint32_t admin_queue_depth = 32;

// RDMA_CM_REJECT status values (STS).
enum class CmStatus : uint16_t {
  ok = 0x00,  // not on the wire: the request was accepted
  invalid_length = 0x01,
  invalid_recfmt = 0x02,
  invalid_qid = 0x03,
  invalid_hsqsize = 0x04,
  invalid_hrqsize = 0x05,
  no_resources = 0x06,
  invalid_ird = 0x07,
  invalid_ord = 0x08,
  invalid_cntlid = 0x09,
};
std::string_view cm_status_text(CmStatus s);

struct CmRequest {
  uint16_t recfmt = cm_recfmt_1_0;
  uint16_t qid = 0;
  uint16_t hrqsize = 0;  // host receive queue entries (1's based)
  uint16_t hsqsize = 0;  // host send queue size, 0's based (SQSIZE of Connect)
  uint16_t cntlid = 0;
};

// What the target allows; checked in the order the kernel target checks.
struct CmLimits {
  uint16_t max_io_queues = 64;  // largest QID accepted
  uint32_t io_queue_depth = 128;  // largest HSQSIZE + 1 and HRQSIZE of an I/O queue
};

struct CmRequestResult {
  CmStatus status = CmStatus::ok;
  CmRequest request;
  // Sizes the queue needs when accepted: receive entries (HSQSIZE + 1, one per command the
  // host may have outstanding) and send entries (HRQSIZE, one response per host receive).
  uint32_t recv_depth = 0;
  uint32_t send_depth = 0;
};

// Decodes and validates the host's CM request private data.
CmRequestResult parse_cm_request(std::span<const uint8_t> private_data, const CmLimits& limits);
std::array<uint8_t, cm_request_size> encode_cm_request(const CmRequest& r);

// RDMA_CM_ACCEPT: CRQSIZE is the controller's receive queue size for this queue.
std::array<uint8_t, cm_accept_size> encode_cm_accept(uint16_t crqsize);
struct CmAccept {
  bool valid = false;
  uint16_t recfmt = 0;
  uint16_t crqsize = 0;
};
CmAccept parse_cm_accept(std::span<const uint8_t> private_data);

std::array<uint8_t, cm_reject_size> encode_cm_reject(CmStatus sts);
struct CmReject {
  bool valid = false;
  uint16_t recfmt = 0;
  CmStatus sts = CmStatus::ok;
};
CmReject parse_cm_reject(std::span<const uint8_t> private_data);

// Responder resources / initiator depth of the accept: never more than the device offers.
inline uint8_t negotiate_rd_atomic(uint8_t host_asks, int device_max) {
  return device_max < host_asks ? static_cast<uint8_t>(device_max < 0 ? 0 : device_max) : host_asks;
}

}  // namespace rdma
