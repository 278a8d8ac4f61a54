#pragma once
// Lock-free multi-producer / single-consumer list, intrusive through Node::*Next so pushing
// never allocates. Producers push onto a Treiber stack; the consumer takes the whole stack at
// once (one exchange, no ABA) and reverses it, which yields the nodes in push (FIFO) order.
// seq_cst: a push pairs with the consumer's "sleeping = true; re-check empty()" (a Dekker pair).
#include <atomic>

namespace exec {

template <typename Node, Node* Node::*Next>
class MpscStack {
 public:
  // Any thread. True when the list was empty before this push: that producer is the one
  // responsible for waking the consumer.
  bool push(Node& n) {
    Node* head = _head.load(std::memory_order_relaxed);
    do {
      n.*Next = head;
    } while (!_head.compare_exchange_weak(head, &n, std::memory_order_seq_cst, std::memory_order_relaxed));
    return head == nullptr;
  }

  bool empty() const { return _head.load(std::memory_order_seq_cst) == nullptr; }

  // Consumer: detaches every pushed node and returns them oldest first, linked through Next
  // and terminated by nullptr.
  Node* take_all() {
    Node* lifo = _head.exchange(nullptr, std::memory_order_seq_cst);
    Node* fifo = nullptr;
    while (lifo != nullptr) {
      Node* next = lifo->*Next;
      lifo->*Next = fifo;
      fifo = lifo;
      lifo = next;
    }
    return fifo;
  }

 private:
  std::atomic<Node*> _head{nullptr};
};

}  // namespace exec
