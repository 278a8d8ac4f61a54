#pragma once
// The queue limits every transport applies alike (nvmet's port parameters and SPDK's transport
// opts hold the same): what a host may ask of one queue, and how long it may take to connect.
// Each transport adds its own (TCP: MAXH2CDATA, arrival stamps) to these.
#include <cstdint>

namespace transport {

struct QueueLimits {
  uint32_t queue_depth = 128;           // MQES + 1
  uint32_t io_icd_size = 8192;          // in-capsule data accepted on I/O queues (IOCCSZ - SQE)
  uint32_t mdts_bytes = 1 << 20;        // largest transfer per command
  uint32_t max_io_queues = 64;          // per controller
  uint32_t connect_timeout_ms = 10000;  // accepted (RDMA: established) to a completed Connect
};

}  // namespace transport
