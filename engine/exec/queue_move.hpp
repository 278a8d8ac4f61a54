#pragma once
// A live switch of one transport's queues (TCP, RDMA): each is released from its executor at
// its next io_work boundary and attached to the new one; the switch waits until every queue
// arrived or a deadline passed. The transport's own recursive mutex guards this state: move()
// is called with it held (and waits on it), forget() too, the handover takes it briefly.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/exec/executor.hpp"

namespace exec {

template <class Queue>
class QueueMove {
 public:
  // Queue::set_executor(Executor&) is told the new executor during the handover. Returns "" or
  // why the switch is incomplete ("N queue(s) did not reach an io_work boundary in T ms").
  std::string move(std::unique_lock<std::recursive_mutex>& lk, Executor& from, Executor& to,
                   const std::vector<Queue*>& queues, unsigned timeout_ms, const char* what) {
    _moving.insert(queues.begin(), queues.end());
    std::recursive_mutex& mu = *lk.mutex();
    for (Queue* q : queues) {
      from.release(*q, [this, &mu, &to](Task& t) {
        auto& q = static_cast<Queue&>(t);
        q.set_executor(to);
        std::lock_guard g(mu);
        _moving.erase(&q);
        to.attach(q);
        _moved.notify_all();
      });
    }
    if (_moved.wait_for(lk, std::chrono::milliseconds(timeout_ms), [this] { return _moving.empty(); })) return {};
    const size_t left = _moving.size();
    _moving.clear();
    return std::to_string(left) + " " + what + "(s) did not reach an io_work boundary in " +
           std::to_string(timeout_ms) + " ms";
  }
  // A queue closed while a switch was moving it: no longer waited for.
  void forget(Queue* q) {
    if (_moving.erase(q)) _moved.notify_all();
  }

 private:
  std::unordered_set<Queue*> _moving;
  std::condition_variable_any _moved;
};

}  // namespace exec
