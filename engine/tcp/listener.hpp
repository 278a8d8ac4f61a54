#pragma once
// The NVMe/TCP transport: listening sockets, accepting connections, owning their queues.
#include <atomic>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include <netinet/in.h>
#include <vector>

#include "engine/exec/connect_deadlines.hpp"
#include "engine/exec/connection_cap.hpp"
#include "engine/exec/executor.hpp"
#include "engine/exec/queue_move.hpp"
#include "engine/tcp/queue.hpp"
#include "engine/transport/transport.hpp"

namespace core {
class Target;
}

namespace tcp {

struct TransportStats {
  uint64_t pdus_rx = 0, pdus_tx = 0, bytes_rx = 0, bytes_tx = 0, term_sent = 0;
  // Connections closed at accept: over max_connections, or no memory for the queue; accept
  // pauses for lack of fds or memory; connections closed for not connecting in time.
  uint64_t refused = 0, accept_pauses = 0, connect_timeouts = 0;

  uint32_t queues = 0;
};

// Options set on the listening socket and on every accepted one. -1 / 0 / false = not set.
struct SocketOptions {
  int priority = -1;          // SO_PRIORITY (nvmet-tcp's so_priority)
  unsigned busy_poll_us = 0;  // SO_BUSY_POLL: busy-poll the NIC queue this long on a blocking read/poll
  bool prefer_busy_poll = false;  // SO_PREFER_BUSY_POLL: busy polling before softirq processing
  uint64_t buffer_bytes = 0;      // SO_SNDBUF and SO_RCVBUF (forced when privileged); 0 = autotuning
};

class TcpTransport final : public transport::Transport {
 public:
  // registry: where each queue's statistics block is registered while it lives. cap: the
  // engine's connection limit, shared with its other transports.
  TcpTransport(core::Target& target, exec::Executor& executor, QueueLimits limits, Budgets budgets,
               stats::Registry& registry, exec::ConnectionCap& cap);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // For sockets opened from now on; call before listen().
  void set_socket_options(const SocketOptions& o) { _sockopts = o; }
  std::string_view name() const override { return "tcp"; }
  uint8_t trtype() const override;
  // Binds and listens; returns the bound port, or 0 with error set (an option the kernel
  // refuses is an error too, naming it).
  uint16_t listen(const std::string& traddr, const std::string& trsvcid, std::string& error) override;
  void start() override;
  // Stops accepting. Queues are retired by the executor's stop().
  void stop_accepting() override;

  // Live tuning. New connections go to the executor set last; moving existing queues is the
  // caller's (Engine's) job, through Executor::release and TcpQueue::set_executor.
  void set_executor(exec::Executor& e);
  // Live switch: new connections go to `to`, and every queue is released by its executor at an
  // io_work boundary and attached to `to`. Returns once all moved (or closed), or an error
  // after timeout_ms.
  std::string move_queues(exec::Executor& to, unsigned timeout_ms) override;
  exec::Executor& executor() const;
  void set_budgets(const Budgets& b) override { _budgets.set(b); }
  // For connections accepted from now on; a connected queue keeps the mechanism it started
  // with (its receive is armed on its own ring or registered with its executor's epoll).
  void set_io_mechanism(IoMechanism m) override { _mechanism.store(m, std::memory_order_relaxed); }
  Budgets budgets() const { return _budgets.load(); }

  TransportStats stats() const;
  transport::Stats totals() const override;

 private:
  void accept_loop();
  // Accepts what is pending on lfd. False when accepting must pause (out of fds or memory).
  bool accept_one(int lfd);
  void serve_fd(int fd, const sockaddr_in& peer);
  void pause_accepting(int err);
  void resume_accepting();
  int next_timeout_ms();
  void expire_handshakes();
  void on_retire(TcpQueue* q);
  static void add_queue(TransportStats& s, const TcpQueue& q);

  core::Target& _target;
  stats::Registry& _registry;
  uint64_t _next_queue_id = 1;  // guarded by _mutex
  exec::Executor* _executor;  // guarded by _mutex
  QueueLimits _limits;
  exec::ConnectionCap& _cap;
  SocketOptions _sockopts;
  LiveBudgets _budgets;
  std::atomic<IoMechanism> _mechanism{IoMechanism::epoll};
  std::vector<int> _listen_fds;
  int _epoll_fd = -1;
  int _stop_fd = -1;
  std::thread _thread;
  // Recursive: a handover or a retirement may run on the thread that holds it (an executor
  // that hands over or retires inline). Taken on connect, close and switch, never per command.
  mutable std::recursive_mutex _mutex;
  exec::QueueMove<TcpQueue> _move;  // a live switch under way
  std::unordered_set<TcpQueue*> _queues;
  // Accept thread only: queues that must complete Connect by a deadline.
  exec::ConnectDeadlines<TcpQueue> _handshakes;
  // Accept thread only: out of fds or memory, accepting pauses until then, backing off.
  std::chrono::steady_clock::time_point _paused_until{};
  unsigned _backoff_ms = 0;
  std::chrono::steady_clock::time_point _last_refusal_log{};
  // Counters of queues already gone, so totals never go backwards.
  TransportStats _retired;
  uint64_t _refused = 0, _accept_pauses = 0, _connect_timeouts = 0;  // guarded by _mutex
  using clock = std::chrono::steady_clock;
};

}  // namespace tcp
