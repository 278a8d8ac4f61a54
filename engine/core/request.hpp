#pragma once
// A command as core/ sees it: the SQE, its data buffer, the completion it produces.
// Transports embed one Request per preallocated command slot; core/ never allocates them
// and never includes a transport header (DESIGN.md seams).
#include <cstdint>

#include "engine/backend/backend.hpp"
#include "engine/core/namespace_table.hpp"
#include "engine/nvme/spec.hpp"
#include "engine/nvme/status.hpp"

namespace core {

class SubmissionQueue;
class Namespace;

enum class DataDir : uint8_t { none, host_to_controller, controller_to_host };

struct Request {
  nvme::Sqe sqe;
  nvme::Cqe cqe;  // handlers fill dw0/dw1; the queue fills sqhd/sqid/cid/status
  nvme::Status status;

  // Set by the transport from the SGL: how many bytes the host describes and where they go.
  uint32_t sgl_len = 0;
  uint8_t* buf = nullptr;  // capacity buf_cap, preallocated per slot
  uint32_t buf_cap = 0;
  // Set by prepare() for a Write the transport may receive in place (receives_in_place()):
  // where the backend keeps those blocks (RAM). The host's data goes there instead of buf, and
  // the write has nothing left to copy. nullptr otherwise.
  uint8_t* write_dst = nullptr;
  // With write_dst: the logical block size. Identify promises one block atomic (AWUPF 0), so the
  // transport puts only whole blocks there; a block still arriving waits at its offset in buf.
  uint32_t write_unit = 0;

  // Set by prepare(): the data direction and the length the command implies.
  DataDir dir = DataDir::none;
  uint32_t transfer_len = 0;
  // The transfer the response carries back (reads, Identify, log pages): may be < transfer_len.
  uint32_t response_len = 0;

  SubmissionQueue* sq = nullptr;
  // NVM commands: held (ns_hold) from prepare until complete, or for a lent read until the
  // transport has sent the data (SubmissionQueue::release_data).
  Namespace* ns = nullptr;
  NsHold ns_hold;
  backend::Io io;
  uint32_t step = 0;        // multi-step commands (DSM ranges, Compare)
  uint64_t step_offset = 0; // bytes of the current step already done
  uint64_t start_ns = 0;    // when the capsule was complete, for command latency
  // When the backend last finished an Io of this command. The transport sends the response in
  // the same call, so that clock read ends the command's latency too: a clock read is ~30 ns
  // here (kvm-clock), and a read used to take four per I/O. Older than start_ns = stale.
  uint64_t done_ns = 0;
  // The rest of the command's timeline (stats/latency_sources.hpp), monotonic ns: when its
  // capsule arrived (SubmissionQueue::record_received) and when core/ completed it
  // (record_latency). The target latency runs from the first to the response leaving.
  uint64_t arrival_ns = 0;
  uint64_t completed_ns = 0;

  // The response data (response_len bytes): buf, or the backend's memory when a read was
  // lent (backend::Io::lent; the transport must say sends_lent_data()).
  const uint8_t* data() const { return io.lent ? io.lent : buf; }
  // Where the host's data for this command goes: write_dst, or buf.
  uint8_t* data_in() const { return write_dst ? write_dst : buf; }
};

}  // namespace core
