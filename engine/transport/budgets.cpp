// transport::LiveBudgets: what a transport's queues read once per io_work pass.
#include "engine/transport/budgets.hpp"

namespace transport {

void LiveBudgets::set(const Budgets& b) {
  _recv.store(b.recv_pdus, std::memory_order_relaxed);
  _send.store(b.send_pdus, std::memory_order_relaxed);
  _ops.store(b.ops_per_pass, std::memory_order_relaxed);
  _reap.store(b.reap_batch, std::memory_order_relaxed);
  _deadline.store(b.deadline_us, std::memory_order_relaxed);
  _bytes.store(b.bytes_per_pass, std::memory_order_relaxed);
}

Budgets LiveBudgets::load() const {
  return Budgets{_recv.load(std::memory_order_relaxed), _send.load(std::memory_order_relaxed),
                 _ops.load(std::memory_order_relaxed),  _reap.load(std::memory_order_relaxed),
                 _bytes.load(std::memory_order_relaxed), _deadline.load(std::memory_order_relaxed)};
}

}  // namespace transport
