#pragma once
// The rdma_cm side of one NVMe/RDMA host queue: event channel, CM ID, protection domain,
// completion queue and RC queue pair, and the connect handshake (resolve address and route,
// RDMA_CM_REQUEST private data, wait for ESTABLISHED or the target's reject). Slow path only;
// the data path (rdma_queue.cpp) uses qp() and cq() directly. Teardown in the destructor.
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <memory>
#include <span>

#include "engine/initiator/error.hpp"
#include "engine/initiator/target.hpp"

namespace initiator::rdma_host {

struct CmSizes {
  uint32_t send_wr = 0;  // commands in flight (one SEND each)
  uint32_t recv_wr = 0;  // response receives
};

class CmConnection {
 public:
  // Resolves t's address and route and creates the QP; "no RDMA device ..." when this host has
  // none. Receives can be posted on qp() before establish().
  static Result<std::unique_ptr<CmConnection>> open(const Target& t, const CmSizes& sizes, int timeout_ms);
  ~CmConnection();
  CmConnection(const CmConnection&) = delete;
  CmConnection& operator=(const CmConnection&) = delete;

  // rdma_connect with the CM request private data; waits for ESTABLISHED.
  Result<Ok> establish(std::span<const uint8_t> private_data, int timeout_ms);
  // Moves the QP to error (outstanding work requests flush) and tells the target; idempotent.
  void disconnect();
  // True once the target disconnected (or the device went away); waits up to timeout_ms.
  bool peer_closed(int timeout_ms);

  ibv_pd* pd() const { return _pd; }
  ibv_cq* cq() const { return _cq; }
  ibv_qp* qp() const { return _id->qp; }

 private:
  CmConnection() = default;
  Result<Ok> resolve(const Target& t, int timeout_ms);
  Result<Ok> create_qp(const CmSizes& sizes);
  // Waits for the next CM event; an event other than expected is an error naming it.
  Result<Ok> expect_event(rdma_cm_event_type expected, int timeout_ms, const char* what);

  rdma_event_channel* _channel = nullptr;
  rdma_cm_id* _id = nullptr;
  ibv_pd* _pd = nullptr;
  ibv_cq* _cq = nullptr;
  bool _connected = false, _peer_closed = false;
};

}  // namespace initiator::rdma_host
