#pragma once
// The Connect deadlines of a transport's new queues (connect_timeout_ms), kept by the one thread
// that accepts them (TCP's accept thread, RDMA's CM thread). One timeout for all, so arrival
// order is deadline order and a FIFO is the whole schedule. The queues are the transport's:
// whether one still exists and has connected is its to check when the deadline passes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>

namespace exec {

template <class Q>
class ConnectDeadlines {
 public:
  using clock = std::chrono::steady_clock;

  explicit ConnectDeadlines(unsigned timeout_ms) : _timeout(timeout_ms) {}

  unsigned timeout_ms() const { return static_cast<unsigned>(_timeout.count()); }
  void add(Q* q, clock::time_point now = clock::now()) { _list.emplace_back(now + _timeout, q); }
  // The next deadline; time_point::max() when none is pending.
  clock::time_point next() const { return _list.empty() ? clock::time_point::max() : _list.front().first; }
  // Hands each queue whose deadline passed by now to expired(q), oldest first, and forgets it.
  template <class F>
  void expire(clock::time_point now, F&& expired) {
    while (!_list.empty() && _list.front().first <= now) {
      Q* q = _list.front().second;
      _list.pop_front();
      expired(q);
    }
  }

 private:
  std::chrono::milliseconds _timeout;
  std::deque<std::pair<clock::time_point, Q*>> _list;
};

// An epoll_wait timeout until `until` (-1: max(), nothing to wait for), in whole ms rounded up
// and at most cap_ms, so a wait never ends just before its deadline and spins.
inline int wait_ms_until(std::chrono::steady_clock::time_point until, int cap_ms = 1000) {
  if (until == std::chrono::steady_clock::time_point::max()) return -1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, cap_ms));
}

}  // namespace exec
