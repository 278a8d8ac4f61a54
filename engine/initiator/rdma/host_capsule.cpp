#include "engine/initiator/rdma/host_capsule.hpp"

#include <algorithm>

#include "engine/rdma/sgl.hpp"

namespace initiator::rdma_host {

::rdma::CmRequest cm_request(uint16_t qid, uint16_t sqsize, uint16_t depth) {
  ::rdma::CmRequest r;
  r.recfmt = ::rdma::cm_recfmt_1_0;
  r.qid = qid;
  r.hsqsize = sqsize;
  r.hrqsize = static_cast<uint16_t>(std::max<uint32_t>(uint32_t{sqsize} + 1, depth));
  return r;
}

std::string cm_reject_reason(std::span<const uint8_t> private_data) {
  const auto j = ::rdma::parse_cm_reject(private_data);
  if (!j.valid) return "rejected by the target (no NVMe/RDMA reject status)";
  return "rejected by the target: " + std::string(::rdma::cm_status_text(j.sts)) + " (STS " +
         std::to_string(static_cast<unsigned>(j.sts)) + ")";
}

bool set_host_data(nvme::Sqe& sqe, uint64_t address, uint32_t length, uint32_t rkey) {
  if (length > ::rdma::keyed_sgl_max_length) return false;
  if (length == 0) address = 0, rkey = 0;
  ::rdma::set_keyed_sgl(sqe, address, length, rkey, false);
  return true;
}

}  // namespace initiator::rdma_host
