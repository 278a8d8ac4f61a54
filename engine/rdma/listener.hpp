#pragma once
// The NVMe/RDMA transport: an rdma_cm listener per configured address, one CM event thread that
// accepts (or rejects, with the NVMe/RDMA status) connection requests, and the queues it owns.
// A transport::Transport, so the engine drives it as it does TCP. On a host without an RDMA
// device listen() fails with "no RDMA device …" and the engine serves its other listeners
// (listen_failure()).
#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/exec/connect_deadlines.hpp"
#include "engine/exec/connection_cap.hpp"
#include "engine/exec/executor.hpp"
#include "engine/exec/queue_move.hpp"
#include "engine/rdma/queue.hpp"
#include "engine/transport/transport.hpp"

namespace core {
class Target;
}

namespace rdma {

struct TransportStats {
  uint64_t connects = 0, rejects = 0, disconnects = 0, connect_timeouts = 0;
  uint32_t queues = 0;
};

class RdmaTransport final : public transport::Transport {
 public:
  // cap: the engine's connection limit, shared with its other transports.
  RdmaTransport(core::Target& target, exec::Executor& executor, QueueLimits limits, const transport::Budgets& budgets,
                stats::Registry& registry, exec::ConnectionCap& cap, const RdmaOptions& options = {});
  ~RdmaTransport() override;
  RdmaTransport(const RdmaTransport&) = delete;
  RdmaTransport& operator=(const RdmaTransport&) = delete;

  // Binds and listens; the bound port, or 0 with error set ("no RDMA device …" on a host
  // without one).
  std::string_view name() const override { return "rdma"; }
  uint8_t trtype() const override;
  uint16_t listen(const std::string& traddr, const std::string& trsvcid, std::string& error) override;
  void start() override;
  void stop_accepting() override;
  transport::ListenFailure listen_failure() const override { return transport::ListenFailure::serves_the_rest; }

  void set_budgets(const transport::Budgets& b) override { _budgets.set(b); }
  void set_executor(exec::Executor& e);
  // Live switch, as TcpTransport::move_queues.
  std::string move_queues(exec::Executor& to, unsigned timeout_ms) override;
  TransportStats stats() const;
  transport::Stats totals() const override;

 private:
  struct Entry {
    RdmaQueue* queue = nullptr;
    bool attached = false;
  };
  void cm_loop();
  void on_event(rdma_cm_event& ev, std::vector<RdmaQueue*>& dead);
  void on_connect_request(rdma_cm_event& ev, std::vector<rdma_cm_id*>& rejected, std::vector<RdmaQueue*>& dead);
  void on_established(rdma_cm_id* id);
  void on_retire(RdmaQueue* q);
  void expire_handshakes();
  bool open_channel(std::string& error);
  std::string device_for(ibv_context* verbs, std::shared_ptr<SharedDevice>& out);

  core::Target& _target;
  stats::Registry& _registry;
  exec::Executor* _executor;  // guarded by _mutex
  QueueLimits _limits;
  exec::ConnectionCap& _cap;
  RdmaOptions _options;
  transport::LiveBudgets _budgets;
  // One per device, opened by its first connection, kept until the transport goes (guarded by
  // _mutex); each queue holds a reference, so the last queue or the transport frees it.
  std::unordered_map<ibv_context*, std::shared_ptr<SharedDevice>> _devices;
  rdma_event_channel* _channel = nullptr;
  std::vector<rdma_cm_id*> _listen_ids;
  int _epoll_fd = -1, _stop_fd = -1;
  std::thread _thread;
  // CM thread only: established queues that must complete Connect by a deadline, by CM id (the
  // key of _queues, so one closed meanwhile is found gone).
  exec::ConnectDeadlines<rdma_cm_id> _handshakes;
  // Taken on connect, disconnect and switch, never per command. Recursive: a handover or a
  // retirement may run on the thread that holds it.
  mutable std::recursive_mutex _mutex;
  std::unordered_map<rdma_cm_id*, Entry> _queues;
  exec::QueueMove<RdmaQueue> _move;  // a live switch under way
  uint64_t _next_queue_id = uint64_t{1} << 32;  // apart from TCP's numbers in the same registry
  TransportStats _counts;
};

}  // namespace rdma
