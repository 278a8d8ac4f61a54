#pragma once
// What core/ needs from the transport queue a SubmissionQueue belongs to (the shape of
// nvmet_fabrics_ops): completion, the queue's backend context, cross-thread kick.
// Grows only by appending methods with defaults (STYLE.md).
#include <cstdint>

namespace backend {
class IoContext;
}

namespace core {

struct Request;

class TransportQueue {
 public:
  virtual ~TransportQueue() = default;
  // Called once per command on the queue's own thread: send data and/or the response.
  virtual void complete(Request& req) = 0;
  virtual backend::IoContext& io_context() = 0;
  // Thread-safe: run the queue's io_work soon (events for parked AERs, controller teardown).
  virtual void kick() = 0;
  // The largest in-capsule data this queue accepts (IOCCSZ for I/O queues).
  virtual uint32_t in_capsule_size() const = 0;
  // Connect-time facts for logs: "tcp 127.0.0.1:4420 <- 10.0.0.2:51234".
  virtual const char* peer() const { return ""; }
  // Connect accepted: size the queue for the entries (SQSIZE + 1) the host asked for, as the
  // kernel target does at Connect. False when the memory is not there: that Connect fails and
  // only this queue ends.
  // A long command (DSM or Write Zeroes over huge ranges) yields: the queue calls
  // SubmissionQueue::resume(req) on its next pass. False when the transport cannot defer; the
  // command then goes on at once.
  virtual bool defer(Request& req) {
    (void)req;
    return false;
  }
  virtual bool size_for(uint32_t entries) {
    (void)entries;
    return true;
  }
  // The transport takes Keyed SGL Data Block descriptors (RDMA): Identify Controller SGLS bit 2,
  // which the Linux RDMA host requires.
  virtual bool keyed_sgls() const { return false; }
  // The queue sends a read's data from Request::data() and calls SubmissionQueue::
  // release_data() once it no longer reads it: the backend may then lend its memory.
  virtual bool sends_lent_data() const { return false; }
  // The queue puts a Write's data where Request::data_in() says as it arrives, and the data
  // cannot be spoiled after it landed (no data digest to fail): the backend's memory may then
  // receive it directly.
  virtual bool receives_in_place() const { return false; }
};

}  // namespace core
