#pragma once
// Passing an epoll event's "the peer shut down" on to its task (Task::exec_peer_closed). The
// executors whose events name a slot (unbound, inline) go through slots::note_hangup (slot.hpp).
#include <sys/epoll.h>

#include <atomic>
#include <cstdint>

#include "engine/exec/executor.hpp"

namespace exec {

inline bool hangup_event(uint32_t epoll_events) { return (epoll_events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0; }

// For executors whose events name the task itself (event): it is alive while its event is.
inline void note_hangup(Task& t, uint32_t epoll_events) {
  if (hangup_event(epoll_events)) t.exec_peer_closed.store(true, std::memory_order_relaxed);
}

}  // namespace exec
