#pragma once
// What the NVMe/RDMA host puts on the wire, as pure functions (no verbs calls): the CM request
// private data of a queue (as the Linux host fills it in nvme_rdma_route_resolved) and the keyed
// SGL data block a command capsule points at the host's registered memory with.
#include <cstdint>
#include <span>
#include <string>

#include "engine/nvme/spec.hpp"
#include "engine/rdma/cm_private_data.hpp"

namespace initiator::rdma_host {

// HSQSIZE is Connect's SQSIZE (0's based); HRQSIZE the receives the host posts for responses,
// one per SQ entry (sqsize + 1). The queue posts at least depth receives, so depth > sqsize + 1
// widens HRQSIZE to depth.
::rdma::CmRequest cm_request(uint16_t qid, uint16_t sqsize, uint16_t depth);

// Why a target rejected the connect, from the reject's private data (the NVMe/RDMA status
// when it sent one).
std::string cm_reject_reason(std::span<const uint8_t> private_data);

// DPTR of a capsule whose data is [address, address + length) under rkey, for the target to
// RDMA READ (host writes) or RDMA WRITE (host reads). No invalidate: the host's keys live as
// long as the queue. length 0 writes a null descriptor (all zero, keyed type), as Linux does.
// False when length does not fit the keyed descriptor's 24 bits.
bool set_host_data(nvme::Sqe& sqe, uint64_t address, uint32_t length, uint32_t rkey);

}  // namespace initiator::rdma_host
