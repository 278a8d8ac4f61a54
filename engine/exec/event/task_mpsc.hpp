#pragma once
// Lock-free multi-producer / single-consumer list of Tasks, intrusive through Task::exec_next,
// so pushing never allocates. Producers push onto a Treiber stack; the single consumer takes the
// whole stack at once and reverses it, which yields the tasks in push (FIFO) order.
#include <atomic>

#include "engine/exec/executor.hpp"

namespace exec::event {

class TaskMpsc {
 public:
  // Any thread. Returns true when the list was empty before this push: that producer is the one
  // responsible for waking the consumer (see EventExecutor's sleep protocol).
  bool push(Task& task) {
    Task* head = _head.load(std::memory_order_relaxed);
    do {
      task.exec_next = head;
      // seq_cst: pairs with the consumer's "sleeping = true; re-check empty()" (a Dekker pair).
    } while (!_head.compare_exchange_weak(head, &task, std::memory_order_seq_cst,
                                          std::memory_order_relaxed));
    return head == nullptr;
  }

  // Consumer only. seq_cst for the same Dekker pairing as push().
  bool empty() const { return _head.load(std::memory_order_seq_cst) == nullptr; }

  // Consumer only: detaches every pushed task and returns them oldest first, linked through
  // exec_next and terminated by nullptr.
  Task* take_all() {
    Task* lifo = _head.exchange(nullptr, std::memory_order_seq_cst);
    Task* fifo = nullptr;
    while (lifo != nullptr) {
      Task* next = lifo->exec_next;
      lifo->exec_next = fifo;
      fifo = lifo;
      lifo = next;
    }
    return fifo;
  }

 private:
  std::atomic<Task*> _head{nullptr};
};

}  // namespace exec::event
