#pragma once
// Passing an epoll event's "the peer shut down" on to its task (Task::exec_peer_closed).
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

namespace slots {

// For executors whose events name a slot (unbound, inline): the task may be retired or running
// on another thread, so the event is noted in the type-stable slot, before the claim publishes
// it, and the task's owner hands it on before its next pass (take_hangup).
template <typename Slot>
void note_hangup(Slot& s, uint32_t epoll_events) {
  if (hangup_event(epoll_events)) s.hangup.store(true, std::memory_order_relaxed);
}

template <typename Slot>
void take_hangup(Slot& s, Task& t) {
  if (s.hangup.load(std::memory_order_relaxed) && s.hangup.exchange(false, std::memory_order_relaxed))
    t.exec_peer_closed.store(true, std::memory_order_relaxed);
}

}  // namespace slots
}  // namespace exec
