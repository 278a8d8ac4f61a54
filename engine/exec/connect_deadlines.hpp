#pragma once
// The Connect deadlines of a transport's new queues (connect_timeout_ms), kept by the one thread
// that accepts them (TCP's accept thread, RDMA's CM thread). One timeout for all, so arrival
// order is deadline order and a FIFO is the whole schedule. The queues are the transport's:
// whether one still exists and has connected is its to check when the deadline passes. A queue is
// named by its address and its queue_id: under churn a new queue is often allocated where a closed
// one was, and must not be expired at the dead one's deadline (issue 33).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>

namespace exec {

template <class Q>
class ConnectDeadlines {
 public:
  using clock = std::chrono::steady_clock;

  explicit ConnectDeadlines(unsigned timeout_ms) : _timeout(timeout_ms) {}

  void add(Q* q, uint64_t queue_id, clock::time_point now = clock::now()) {
    _list.push_back({now + _timeout, q, queue_id});
  }
  // The next deadline; time_point::max() when none is pending.
  clock::time_point next() const { return _list.empty() ? clock::time_point::max() : _list.front().deadline; }
  // Hands each queue whose deadline passed by now to expired(q, queue_id), oldest first, and
  // forgets it.
  template <class F>
  void expire(clock::time_point now, F&& expired) {
    while (!_list.empty() && _list.front().deadline <= now) {
      const Entry e = _list.front();
      _list.pop_front();
      expired(e.queue, e.queue_id);
    }
  }

 private:
  struct Entry {
    clock::time_point deadline;
    Q* queue;
    uint64_t queue_id;
  };
  std::chrono::milliseconds _timeout;
  std::deque<Entry> _list;
};

// An epoll_wait timeout until `until` (-1: max(), nothing to wait for), in whole ms rounded up
// and at most cap_ms, so a wait never ends just before its deadline and spins.
inline int wait_ms_until(std::chrono::steady_clock::time_point until, int cap_ms = 1000) {
  if (until == std::chrono::steady_clock::time_point::max()) return -1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, cap_ms));
}

}  // namespace exec
