#pragma once
// The core's side of one NVMe queue pair: which controller it belongs to, SQ head, and the
// command lifecycle prepare → execute → complete. Owned by the transport queue and used only
// by the thread running its io_work.
#include <array>
#include <cstdint>
#include <memory>

#include "engine/core/controller.hpp"
#include "engine/core/request.hpp"
#include "engine/core/transport_queue.hpp"
#include "engine/stats/counter.hpp"
#include "engine/stats/registry.hpp"

namespace core {

class Target;

// What SMART needs besides the queue's stats block (which holds commands and bytes).
struct QueueCounters {
  stats::Counter read_commands, write_commands, errors;
};

inline constexpr unsigned max_parked_aers = 4;  // AERL + 1

class SubmissionQueue {
 public:
  SubmissionQueue(Target& target, TransportQueue& transport, stats::QueueStats& stats);
  ~SubmissionQueue();
  SubmissionQueue(const SubmissionQueue&) = delete;
  SubmissionQueue& operator=(const SubmissionQueue&) = delete;

  Target& target() const { return _target; }
  TransportQueue& transport() const { return _transport; }
  uint16_t qid() const { return _qid; }
  uint16_t sqsize() const { return _sqsize; }
  Controller* controller() const { return _ctrl.get(); }
  bool connected() const { return _ctrl != nullptr; }
  bool sq_flow_disabled() const { return _sqflow_disabled; }
  const QueueCounters& counters() const { return _counters; }
  const stats::QueueStats& stats() const { return _stats; }
  stats::QueueStats& stats_mut() { return _stats; }
  // The queue's latency histograms; nullptr before Connect (nothing is timed then).
  stats::QueueLatency* latency() const { return _lat; }

  // Step 1 (after the SQE arrived): pick the handler, compute direction and transfer length,
  // check them against the SGL. A non-success status is completed by the caller through
  // complete() once any in-capsule data has been consumed.
  nvme::Status prepare(Request& req);
  // Step 2 (data present): run the command. Completes now or when the backend is done.
  // now_ns: the caller's clock read of this moment (exec::monotonic_ns), if it has one; 0 =
  // read it here. It stamps the backend submission.
  void execute(Request& req, uint64_t now_ns = 0);
  // The one way a command ends.
  void complete(Request& req, nvme::Status st);
  // The transport no longer reads req's response data (sent, or the queue is going away):
  // a lent read's namespace hold ends. Idempotent.
  void release_data(Request& req);
  // The transport sent req's response: its submit-to-completion time goes to the queue's read,
  // write (I/O queues) or other histogram and to the cmd_complete USDT point, keyed by the
  // transport's queue (queue, as its queue_wait_end point names it). A command that failed
  // before it started (start_ns 0: a bad SGL) is not timed. Ends at req.done_ns when the
  // backend's completion led here, else now.
  // Also stamps req.completed_ns (the send stage starts there).
  void record_latency(Request& req, const void* queue);
  // The moments of one io_work pass the stages are measured against: when the executor saw the
  // queue ready (0 = not known) and when the pass began.
  struct PassTimes {
    uint64_t ready_ns = 0, start_ns = 0;
  };
  // req's capsule is parsed (req.start_ns): from its arrival (the kernel's receive stamp; 0 = no
  // stamp, the pass's readiness stands in) to now go the scheduling, queue and receive stages.
  // Each stage starts where the previous ended or later: a capsule that arrived while the pass
  // ran waited for no wake-up.
  void record_received(Request& req, uint64_t arrival_ns, const PassTimes& pass);
  // A write asked for its data (R2T) when it was parsed; the last of it arrived at now_ns.
  void record_data_wait(const Request& req, uint64_t now_ns);
  // req's response's last byte was handed to the kernel at now_ns (the sendmsg call; RDMA: its
  // send completion): its target latency and send stage. A command never received is not timed.
  void record_sent(const Request& req, uint64_t now_ns);
  // A backend Io reaped from the queue's IoContext.
  void on_backend_done(backend::Io& io);
  // A command the transport deferred (TransportQueue::defer) goes on.
  void resume(Request& req);
  // Called on every io_work pass: delivers pending events to parked AERs. Returns true when
  // the queue must close: the controller died (KATO, shutdown of the association), was reset
  // (CC.EN 1 -> 0) since this I/O queue connected, or the host sent Fabrics Disconnect.
  bool poll_events();
  // Fabrics Disconnect was answered: the queue closes once the response is sent.
  void disconnect_requested();

  // Used by the Connect handler.
  void bind(std::shared_ptr<Controller> ctrl, uint16_t qid, uint16_t sqsize, bool sqflow_disabled);
  void unbind();
  QueueCounters& counters_mut() { return _counters; }
  bool park_aer(Request& req);

 private:
  void fill_cqe(Request& req, nvme::Status st);
  // The read, write or other histogram of the pair the command's opcode and queue pick.
  stats::Histogram& by_opcode(const Request& req, stats::Histogram& read, stats::Histogram& write,
                              stats::Histogram& other) const;
  void advance_sqhd() {
    if (_sqsize) _sqhd = static_cast<uint16_t>((_sqhd + 1) % _sqsize);
  }

  Target& _target;
  TransportQueue& _transport;
  stats::QueueStats& _stats;
  stats::QueueLatency* _lat = nullptr;  // _stats' histograms, made at Connect (bind)
  std::shared_ptr<Controller> _ctrl;
  uint16_t _qid = 0;
  uint16_t _sqsize = 0;
  uint16_t _sqhd = 0;
  bool _sqflow_disabled = false;
  bool _disconnecting = false;
  uint32_t _bound_resets = 0;  // the controller's reset_count() when this queue connected
  QueueCounters _counters;
  std::array<Request*, max_parked_aers> _aers{};
};

}  // namespace core
