#include "engine/initiator/connect_queue.hpp"

#include "engine/initiator/tcp/tcp_queue.hpp"
#include "engine/initiator/rdma/rdma_queue.hpp"

namespace initiator {

namespace {
template <typename Q>
Result<std::unique_ptr<Queue>> upcast(Result<std::unique_ptr<Q>> r) {
  if (!r) return r.error();
  return std::unique_ptr<Queue>(std::move(r.value()));
}
}  // namespace

Result<std::unique_ptr<Queue>> connect_queue(const Target& t, const QueueParams& p) {
  if (t.trtype == Transport::rdma) return upcast(RdmaQueue::connect(t, p));
  return upcast(TcpQueue::connect(t, p));
}

}  // namespace initiator
