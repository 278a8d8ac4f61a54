#pragma once
// Synchronous wrappers for tests and admin paths: submit one command and poll the queue until it
// completes or timeout_ms passes. Completions of other commands on the queue still run their
// callbacks meanwhile. A non-success NVMe status comes back as Error{Kind::nvme} with the CQE.
#include "engine/initiator/error.hpp"
#include "engine/initiator/queue.hpp"

namespace initiator {

inline constexpr int default_sync_timeout_ms = 10000;

// io.done is ignored (the wrapper waits itself). Waits for a free slot if the queue is full.
Result<Completion> sync_io(Queue& q, Io io, int timeout_ms = default_sync_timeout_ms);
Result<Completion> sync_raw(Queue& q, RawCommand c, int timeout_ms = default_sync_timeout_ms);

}  // namespace initiator
