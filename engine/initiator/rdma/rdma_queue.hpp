#pragma once
// One NVMe/RDMA queue of the host (NVMe RDMA Transport Specification 1.0b): an RC queue pair
// connected through rdma_cm with the CM request private data (QID, HRQSIZE, HSQSIZE), then
// Fabrics Connect. A command is a SEND of its 64-byte capsule; its data never travels in the
// capsule but as a keyed SGL data block pointing at host memory, which the target RDMA WRITEs
// (reads) or RDMA READs (writes); the response is a RECV of the 16-byte CQE (a SEND with
// invalidate is accepted when it names the command's key). A command completes once both its
// SEND and its response completed, so its capsule slot is never reused early.
//
// Memory: capsules and response buffers are registered once per queue; command data should
// live in memory given to register_memory() (one registration per region, looked up by
// address); other buffers (admin commands) are registered per command on the slow path.
// Per I/O: no allocation, no lock; sends and receive re-posts are batched into one
// ibv_post_send / ibv_post_recv per poll().
#include <infiniband/verbs.h>

#include <memory>
#include <vector>

#include "engine/initiator/queue.hpp"
#include "engine/initiator/rdma/cm_connection.hpp"
#include "engine/initiator/rdma/memory_table.hpp"

namespace initiator {

class RdmaQueue final : public Queue {
 public:
  static Result<std::unique_ptr<RdmaQueue>> connect(const Target& t, const QueueParams& p);
  ~RdmaQueue() override;  // disconnects; outstanding commands are dropped without callbacks
  RdmaQueue(const RdmaQueue&) = delete;
  RdmaQueue& operator=(const RdmaQueue&) = delete;

  std::optional<uint16_t> submit(const Io& io) override;
  std::optional<uint16_t> submit_raw(const RawCommand& c) override;
  int poll() override;
  int wait(int timeout_ms) override;
  bool flush() override;
  void forget(uint16_t cid) override;
  void close() override;
  bool wait_peer_close(int timeout_ms) override;
  Result<Ok> register_memory(void* p, size_t len) override;

  State state() const override { return _state; }
  const Error& error() const override { return _error; }
  uint16_t qid() const override { return _params.qid; }
  uint16_t cntlid() const override { return _cntlid; }
  uint16_t depth() const override { return _params.depth; }
  uint32_t outstanding() const override { return _outstanding; }
  const nvme::Cqe& connect_response() const override { return _connect_cqe; }
  const char* trtype() const override { return "rdma"; }
  uint64_t remote_invalidations() const { return _remote_invalidations; }

 private:
  struct Slot;
  struct MrDeleter {
    void operator()(ibv_mr* mr) const { ibv_dereg_mr(mr); }
  };
  using Mr = std::unique_ptr<ibv_mr, MrDeleter>;

  explicit RdmaQueue(const QueueParams& p);
  Result<Ok> setup(const Target& t);
  Result<Ok> send_connect(const Target& t);
  std::optional<uint16_t> start(const nvme::Sqe& sqe, std::span<uint8_t> data, Callback done);
  bool post_recvs();
  bool on_completion(const ibv_wc& wc);
  bool on_response(const ibv_wc& wc);
  void maybe_finish(uint16_t cid);
  void release(uint16_t cid, Completion& c);
  void fail(Error e);
  Mr reg(void* p, size_t len);

  QueueParams _params;
  State _state = State::idle;
  Error _error;
  uint16_t _cntlid = 0xffff;
  nvme::Cqe _connect_cqe{};
  uint32_t _nrecv = 0;

  // Declared before the registrations: they are deregistered first, then the PD goes.
  std::unique_ptr<rdma_host::CmConnection> _cm;
  std::unique_ptr<Slot[]> _slots;
  std::unique_ptr<nvme::Sqe[]> _capsules;  // one per slot
  std::unique_ptr<nvme::Cqe[]> _responses; // one per receive
  std::vector<ibv_sge> _recv_sge;
  std::vector<ibv_recv_wr> _recv_wr;
  Mr _capsule_mr, _response_mr;
  std::vector<Mr> _user_mrs;
  rdma_host::MemoryTable _memory;

  std::vector<uint16_t> _free;  // stack of free CIDs
  uint32_t _outstanding = 0;
  uint32_t _completed = 0;  // by the current poll()
  ibv_send_wr* _send_head = nullptr;  // SENDs waiting for the next post (batched)
  ibv_send_wr* _send_tail = nullptr;
  ibv_recv_wr* _recv_head = nullptr;  // receives to re-post
  ibv_recv_wr* _recv_tail = nullptr;
  uint32_t _idle_polls = 0;
  uint64_t _remote_invalidations = 0;
};

}  // namespace initiator
