#pragma once
// The NVMe/TCP transport: listening sockets, accepting connections, owning their queues.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "engine/exec/executor.hpp"
#include "engine/tcp/queue.hpp"

namespace core {
class Target;
}

namespace tcp {

struct TransportStats {
  uint64_t pdus_rx = 0, pdus_tx = 0, bytes_rx = 0, bytes_tx = 0, term_sent = 0;
  uint64_t commands = 0, read_bytes = 0, write_bytes = 0;
  uint32_t queues = 0;
};

class TcpTransport {
 public:
  TcpTransport(core::Target& target, exec::Executor& executor, QueueLimits limits, Budgets budgets);
  ~TcpTransport();
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // Binds and listens; returns the bound port, or 0 with error set.
  uint16_t listen(const std::string& traddr, const std::string& trsvcid, std::string& error);
  void start();
  // Stops accepting. Queues are retired by the executor's stop().
  void stop_accepting();

  TransportStats stats() const;

 private:
  void accept_loop();
  void accept_one(int lfd);
  void on_retire(TcpQueue* q);
  static void add_queue(TransportStats& s, const TcpQueue& q);

  core::Target& _target;
  exec::Executor& _executor;
  QueueLimits _limits;
  Budgets _budgets;
  std::vector<int> _listen_fds;
  int _epoll_fd = -1;
  int _stop_fd = -1;
  std::thread _thread;
  mutable std::mutex _mutex;
  std::unordered_set<TcpQueue*> _queues;
  // Counters of queues already gone, so totals never go backwards.
  TransportStats _retired;
};

}  // namespace tcp
