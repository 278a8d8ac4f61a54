#pragma once
// Opens one queue on the target's transport: an NVMe/TCP connection (TcpQueue) or an NVMe/RDMA
// queue pair (RdmaQueue), connected with Fabrics Connect. The one place that knows both.
#include <memory>

#include "engine/initiator/error.hpp"
#include "engine/initiator/queue.hpp"
#include "engine/initiator/target.hpp"

namespace initiator {

Result<std::unique_ptr<Queue>> connect_queue(const Target& t, const QueueParams& p);

}  // namespace initiator
