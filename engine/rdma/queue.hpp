#pragma once
// One NVMe/RDMA queue: a reliable-connected QP carrying one SQ/CQ pair. Command capsules arrive
// in posted receives; keyed data is fetched with RDMA READ (host writes) or placed with RDMA
// WRITE (host reads); the response goes back in a SEND (with invalidate where the host asked).
// The CQ is polled by the queue's io_work, so every execution model applies: poll threads call
// io_work in a loop, event modes wait on the completion channel's fd (fds()[0]).
// Data buffers come from the device's shared pool through the queue's own cache; a command that
// finds none waits in the queue's buffer_wait ring and the pool wakes the queue (kick) later.
// Everything here runs on the thread executing this queue's io_work, as for TCP.
#include <rdma/rdma_cma.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/io_context.hpp"
#include "engine/core/submission_queue.hpp"
#include "engine/exec/executor.hpp"
#include "engine/rdma/buffer_pool.hpp"
#include "engine/rdma/cm_private_data.hpp"
#include "engine/rdma/shared_device.hpp"
#include "engine/rdma/sgl.hpp"
#include "engine/stats/registry.hpp"
#include "engine/transport/budgets.hpp"

namespace rdma {

struct QueueLimits {
  uint32_t queue_depth = 128;
  uint32_t io_icd_size = 8192;
  uint32_t mdts_bytes = 1 << 20;
  uint16_t max_io_queues = 64;
  uint32_t connect_timeout_ms = 10000;  // established to a completed Connect
};

// Per-command state, changed only through RdmaQueue::set_state. buffer_wait: the device's data
// pool had no buffer of the size the command needs; it waits (in order) for one to come back.
enum class CmdState : uint8_t { free, buffer_wait, reading, executing, sending };

class RdmaQueue final : public exec::Task, public core::TransportQueue, private DataPool::Waiter {
 public:
  // Takes ownership of id (a connect request's id); setup() creates the verbs resources on
  // device's PD, drawing data buffers from its pool.
  RdmaQueue(rdma_cm_id* id, std::string peer, core::Target& target, exec::Executor& executor,
            const QueueLimits& limits, const transport::LiveBudgets& budgets, std::shared_ptr<SharedDevice> device);
  ~RdmaQueue() override;

  // Sizes the queue for the CM request: completion channel, CQ, QP, and what receiving the
  // Connect capsule needs (one receive, one CQE); the receive ring is registered only once
  // Connect is accepted (grow). "" or why not (the request is then rejected with no_resources).
  std::string setup(const CmRequestResult& req);
  uint16_t recv_depth() const { return static_cast<uint16_t>(_nrecv); }
  int comp_vector() const { return _comp_vector; }
  size_t registered_bytes() const { return _connect_pool.bytes() + _pool.bytes(); }  // capsules, CQEs

  // exec::Task
  exec::Progress io_work() override;
  std::array<int, 2> fds() const override;
  void retire() override;
  bool is_admin() const override { return _admin; }
  void placed(int worker) override { _stats.worker.store(worker, std::memory_order_relaxed); }

  // core::TransportQueue
  void complete(core::Request& req) override;
  backend::IoContext& io_context() override { return _ioctx; }
  void kick() override;
  uint32_t in_capsule_size() const override { return _limits.io_icd_size; }
  bool size_for(uint32_t entries) override { return entries <= _nrecv; }
  bool keyed_sgls() const override { return true; }
  const char* peer() const override { return _peer.c_str(); }

  // CM thread: the connection is gone (DISCONNECTED, TIMEWAIT_EXIT, DEVICE_REMOVAL).
  void on_disconnected() {
    _disconnected.store(true, std::memory_order_relaxed);
    kick();
  }
  // CM thread: Connect did not complete within connect_timeout_ms of the connection.
  void expire_handshake() {
    _handshake_expired.store(true, std::memory_order_relaxed);
    kick();
  }
  bool connected() const { return _sq.connected(); }
  rdma_cm_id* cm_id() const { return _id; }
  stats::QueueStats& stats() { return _stats; }
  void set_executor(exec::Executor& e);
  void set_retire_hook(std::function<void(RdmaQueue*)> hook) { _retire_hook = std::move(hook); }

 private:
  struct Command {
    core::Request req;
    DataDescriptor data;
    CmdState state = CmdState::free;
    uint32_t index = 0;
    BufferCache::Buffer buffer;  // from the device's pool while the command holds one
    uint32_t held_recv = no_recv;  // in-capsule data still in this receive buffer (buffer_wait)
    ibv_sge data_sge{}, cqe_sge{};
    ibv_send_wr wr[2]{};
  };
  static constexpr uint32_t no_recv = ~0u;
  struct Received {
    uint32_t recv = 0, len = 0;
  };

  unsigned poll_cq(unsigned budget);
  void on_completion(const ibv_wc& wc);
  void on_recv(const ibv_wc& wc);
  void refuse_capsule(uint32_t r, const std::string& why);
  std::string grow();
  uint8_t* cqe_of(const Command& c) const { return _grown ? _pool.cqe(c.index) : _connect_pool.cqe(0); }
  void take_capsule(Received r);
  bool attach_buffer(Command& c);
  void serve_buffer_waits();
  void release_buffer(Command& c);
  void return_srq_receives();
  void buffers_returned() override { kick(); }
  uint8_t* capsule(uint32_t r) const {
    return _srq ? _device->srq_capsule(r) : _grown ? _pool.capsule(r) : _connect_pool.capsule(0);
  }
  bool repost(uint32_t r);
  void on_send_done(Command& c);
  void start_command(Command& c);
  bool post_recv(uint32_t i);
  void post_send(ibv_send_wr* wr);
  void fail(const std::string& why);
  void set_state(Command& c, CmdState s) { c.state = s; }
  void drain_channel();
  void identify();

  std::shared_ptr<SharedDevice> _device;  // first: outlives everything registered on its PD
  rdma_cm_id* _id;
  std::string _peer;
  core::Target& _target;
  stats::QueueStats _stats;  // before _sq, which records into it
  std::mutex _exec_mu;       // kicks from other threads vs a live switch; never per command
  exec::Executor* _executor;
  bool _kicks_closed = false;  // guarded by _exec_mu: set by the closing pass
  QueueLimits _limits;
  const transport::LiveBudgets& _live_budgets;
  ibv_comp_channel* _channel = nullptr;
  bool _srq = false;
  int _comp_vector = 0;
  ibv_cq* _cq = nullptr;
  bool _qp = false;
  // Before Connect is accepted: one receive buffer (without SRQ) and one CQE, as the host sends
  // Connect alone and waits for its response. After: the ring of receive buffers and a CQE per
  // command slot (_grown).
  BufferPool _connect_pool, _pool;
  bool _grown = false;
  // Before _ioctx: the buffers go back to the device only after backend I/O into them ended.
  BufferCache _buffers;
  backend::IoContext _ioctx;
  core::SubmissionQueue _sq;
  std::unique_ptr<Command[]> _cmds;
  std::vector<uint32_t> _free;
  std::unique_ptr<ibv_sge[]> _recv_sge;
  // Receives whose capsule waits for a free command slot (FIFO ring).
  std::vector<Received> _pending;
  uint32_t _pending_head = 0, _pending_count = 0;
  // Commands waiting for a data buffer (FIFO ring of command slots).
  std::vector<uint32_t> _buf_wait;
  uint32_t _buf_wait_head = 0, _buf_wait_count = 0;
  core::SubmissionQueue::PassTimes _pass;  // this io_work pass's readiness and start (stages)
  uint64_t _buffer_waits = 0;  // commands that waited for a data buffer (logged at close)
  uint32_t _nrecv = 0, _ncmds = 0;
  std::atomic<bool> _disconnected{false}, _handshake_expired{false};
  bool _closing = false, _admin = false, _identified = false, _ring_watched = false;
  std::function<void(RdmaQueue*)> _retire_hook;
};

}  // namespace rdma
