#include "engine/rdma/cm_private_data.hpp"

#include "engine/nvme/le.hpp"

namespace rdma {
namespace {
// Byte offsets of the private data fields.
namespace off {
inline constexpr size_t recfmt = 0, qid = 2, hrqsize = 4, hsqsize = 6, cntlid = 8;
inline constexpr size_t crqsize = 2, sts = 2;
}  // namespace off
}  // namespace

std::string_view cm_status_text(CmStatus s) {
  switch (s) {
    case CmStatus::ok: return "accepted";
    case CmStatus::invalid_length: return "invalid private data length";
    case CmStatus::invalid_recfmt: return "invalid record format";
    case CmStatus::invalid_qid: return "invalid queue ID";
    case CmStatus::invalid_hsqsize: return "invalid host send queue size";
    case CmStatus::invalid_hrqsize: return "invalid host receive queue size";
    case CmStatus::no_resources: return "no resources";
    case CmStatus::invalid_ird: return "invalid IRD";
    case CmStatus::invalid_ord: return "invalid ORD";
    case CmStatus::invalid_cntlid: return "invalid controller ID";
  }
  return "unknown status";
}

CmRequestResult parse_cm_request(std::span<const uint8_t> pd, const CmLimits& limits) {
  CmRequestResult r;
  if (pd.size() < cm_request_size) return r.status = CmStatus::invalid_length, r;
  CmRequest& q = r.request;
  q.recfmt = nvme::get_le<uint16_t>(pd.data(), off::recfmt);
  q.qid = nvme::get_le<uint16_t>(pd.data(), off::qid);
  q.hrqsize = nvme::get_le<uint16_t>(pd.data(), off::hrqsize);
  q.hsqsize = nvme::get_le<uint16_t>(pd.data(), off::hsqsize);
  q.cntlid = nvme::get_le<uint16_t>(pd.data(), off::cntlid);
  if (q.recfmt != cm_recfmt_1_0) return r.status = CmStatus::invalid_recfmt, r;
  if (q.qid > limits.max_io_queues) return r.status = CmStatus::invalid_qid, r;
  r.recv_depth = uint32_t{q.hsqsize} + 1;
  r.send_depth = q.hrqsize;
  const uint32_t max_depth = q.qid == 0 ? admin_queue_depth : limits.io_queue_depth;
  // A queue of one entry can hold no command (SQ full is head == tail + 1).
  if (r.recv_depth < 2 || r.recv_depth > max_depth) return r.status = CmStatus::invalid_hsqsize, r;
  if (r.send_depth == 0 || r.send_depth > max_depth) return r.status = CmStatus::invalid_hrqsize, r;
  return r;
}

std::array<uint8_t, cm_request_size> encode_cm_request(const CmRequest& q) {
  std::array<uint8_t, cm_request_size> b{};
  nvme::put_le(b.data(), off::recfmt, q.recfmt);
  nvme::put_le(b.data(), off::qid, q.qid);
  nvme::put_le(b.data(), off::hrqsize, q.hrqsize);
  nvme::put_le(b.data(), off::hsqsize, q.hsqsize);
  nvme::put_le(b.data(), off::cntlid, q.cntlid);
  return b;
}

std::array<uint8_t, cm_accept_size> encode_cm_accept(uint16_t crqsize) {
  std::array<uint8_t, cm_accept_size> b{};
  nvme::put_le(b.data(), off::recfmt, cm_recfmt_1_0);
  nvme::put_le(b.data(), off::crqsize, crqsize);
  return b;
}

CmAccept parse_cm_accept(std::span<const uint8_t> pd) {
  CmAccept a;
  if (pd.size() < cm_accept_size) return a;
  a.recfmt = nvme::get_le<uint16_t>(pd.data(), off::recfmt);
  a.crqsize = nvme::get_le<uint16_t>(pd.data(), off::crqsize);
  a.valid = a.recfmt == cm_recfmt_1_0;
  return a;
}

std::array<uint8_t, cm_reject_size> encode_cm_reject(CmStatus sts) {
  std::array<uint8_t, cm_reject_size> b{};
  nvme::put_le(b.data(), off::recfmt, cm_recfmt_1_0);
  nvme::put_le(b.data(), off::sts, static_cast<uint16_t>(sts));
  return b;
}

CmReject parse_cm_reject(std::span<const uint8_t> pd) {
  CmReject j;
  if (pd.size() < cm_reject_size) return j;
  j.recfmt = nvme::get_le<uint16_t>(pd.data(), off::recfmt);
  j.sts = static_cast<CmStatus>(nvme::get_le<uint16_t>(pd.data(), off::sts));
  j.valid = j.recfmt == cm_recfmt_1_0;
  return j;
}

}  // namespace rdma
