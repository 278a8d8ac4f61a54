#pragma once
// Attachment slots shared by the executors whose queues can be run by more than one thread
// (unbound, inline). Events and run lists carry a Slot*, never a Task*: slots are type-stable
// (allocated in chunks, recycled, freed with the executor), so an event taken just before the
// task was retired or handed over is still safe to look at — its claim fails (slot unused) or,
// when the slot was reused, costs one harmless extra pass of the new task.
//
// Run state (Slot::state): attach moves unused → running. Whoever moves idle → running (an
// event, schedule(), release()) owns the task: it alone runs io_work, detaches or hands it
// over, until it moves the state back to idle. Anyone finding it running moves it to pending;
// the owner consumes that and runs again.
//
// A Slot type for these templates has: std::atomic<uint8_t> state, std::atomic<uint64_t>
// pending_ns, std::atomic<bool> hangup, unsigned index, Task* task, Slot* next.
#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "engine/exec/executor.hpp"
#include "engine/exec/hangup.hpp"
#include "engine/exec/mpsc_stack.hpp"

namespace exec::slots {

enum : uint8_t { idle = 0, running = 1, pending = 2, unused = 3 };

inline constexpr unsigned per_chunk = 256;
inline constexpr unsigned max_chunks = 256;  // 65536 queues per executor

// The queue clears exec_ready_ns when a pass starts; the first readiness after that counts.
inline void mark_ready(Task& t, uint64_t ns) {
  if (t.exec_ready_ns.load(std::memory_order_relaxed) == 0) t.exec_ready_ns.store(ns, std::memory_order_relaxed);
}

// Stable storage for slots: find() is lock-free; allocate() and free() are control path and
// run under the executor's own lock.
template <typename Slot>
class SlotTable {
 public:
  SlotTable() = default;
  SlotTable(const SlotTable&) = delete;
  SlotTable& operator=(const SlotTable&) = delete;
  ~SlotTable() {
    for (auto& chunk : _chunks) delete[] chunk.load(std::memory_order_relaxed);
  }
  Slot* find(int index) const {
    if (index < 0 || unsigned(index) >= per_chunk * max_chunks) return nullptr;
    Slot* chunk = _chunks[unsigned(index) / per_chunk].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[unsigned(index) % per_chunk];
  }
  // Throws std::length_error when full.
  Slot& allocate() {
    if (!_free.empty()) {
      Slot* s = _free.back();
      _free.pop_back();
      return *s;
    }
    const unsigned chunk = _size / per_chunk;
    if (chunk >= max_chunks) throw std::length_error("executor: too many queues");
    if (_size % per_chunk == 0) {
      Slot* fresh = new Slot[per_chunk];
      for (unsigned i = 0; i < per_chunk; ++i) fresh[i].index = _size + i;
      _chunks[chunk].store(fresh, std::memory_order_release);
    }
    return *find(int(_size++));
  }
  void free(Slot& s) { _free.push_back(&s); }

 private:
  std::array<std::atomic<Slot*>, max_chunks> _chunks{};
  std::vector<Slot*> _free;
  unsigned _size = 0;
};

// The run list of slots: push from any thread, take_all (oldest first) by a worker.
template <typename Slot>
using RunList = MpscStack<Slot, &Slot::next>;

// An event or a kick for s. True when the caller now owns the task (idle → running) and must
// run it; false when the owner was asked to run again or the slot is not attached.
template <typename Slot>
bool claim(Slot& s) {
  uint8_t st = s.state.load(std::memory_order_acquire);
  for (;;) {
    if (st == idle) {
      if (s.state.compare_exchange_weak(st, running, std::memory_order_acq_rel, std::memory_order_acquire)) {
        s.pending_ns.store(0, std::memory_order_relaxed);
        mark_ready(*s.task, monotonic_ns());
        return true;
      }
    } else if (st == running) {
      uint64_t none = 0;
      s.pending_ns.compare_exchange_strong(none, monotonic_ns(), std::memory_order_relaxed);
      if (s.state.compare_exchange_weak(st, pending, std::memory_order_acq_rel, std::memory_order_acquire))
        return false;
    } else {
      return false;  // already pending, or a stale event for a detached task
    }
  }
}

// For release(): only an idle task can be taken; a running one is released by its owner.
template <typename Slot>
bool claim_idle(Slot& s) {
  uint8_t expected = idle;
  return s.state.compare_exchange_strong(expected, running, std::memory_order_seq_cst);
}

// The owner consumed a pending mark: its time is when the task became ready again.
template <typename Slot>
void take_pending(Slot& s, Task& t) {
  const uint64_t ns = s.pending_ns.exchange(0, std::memory_order_relaxed);
  mark_ready(t, ns != 0 ? ns : monotonic_ns());
}

// An event that said the peer shut down (Task::exec_peer_closed). The task may be retired or
// running on another thread, so it is noted in the slot, before the claim publishes it, and the
// task's owner hands it on before its next pass (take_hangup).
template <typename Slot>
void note_hangup(Slot& s, uint32_t epoll_events) {
  if (hangup_event(epoll_events)) s.hangup.store(true, std::memory_order_relaxed);
}

template <typename Slot>
void take_hangup(Slot& s, Task& t) {
  if (s.hangup.load(std::memory_order_relaxed) && s.hangup.exchange(false, std::memory_order_relaxed))
    t.exec_peer_closed.store(true, std::memory_order_relaxed);
}

}  // namespace exec::slots
