#pragma once
// What the queues of one RDMA device (one ibv_context) share: the protection domain, the command
// data pool registered once on it (data_pool.hpp), and with use_srq one shared receive queue
// whose capsule buffers serve every queue of the device (nvmet-rdma's use_srq). Each queue keeps
// its own CQ: a receive taken from the SRQ completes on the CQ of the QP that consumed it, so
// the queue's own io_work sees it and no completion crosses threads.
#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "engine/rdma/buffer_pool.hpp"
#include "engine/rdma/data_pool.hpp"
#include "engine/rdma/options.hpp"

namespace rdma {

class SharedDevice {
 public:
  // "" with *out set, or why not (the connection is then rejected with no_resources).
  static std::string open(ibv_context* verbs, const RdmaOptions& opts, uint32_t mdts_bytes, uint32_t capsule_size,
                          std::shared_ptr<SharedDevice>& out);
  ~SharedDevice();
  SharedDevice(const SharedDevice&) = delete;
  SharedDevice& operator=(const SharedDevice&) = delete;

  ibv_context* verbs() const { return _verbs; }
  ibv_pd* pd() const { return _pd; }
  DataPool& data() { return _data; }
  uint32_t data_lkey() const { return _data_mr ? _data_mr->lkey : 0; }
  ibv_srq* srq() const { return _srq; }
  uint32_t srq_size() const { return _srq_size; }
  uint8_t* srq_capsule(uint32_t i) const { return _capsules.capsule(i); }
  bool post_srq_recv(uint32_t i);
  const RdmaOptions& options() const { return _opts; }
  // Bytes registered (pinned) for the device: data pool plus SRQ capsules.
  size_t registered_bytes() const { return _data.bytes() + _capsules.bytes(); }
  std::string describe() const;

 private:
  SharedDevice(ibv_context* verbs, const RdmaOptions& opts) : _verbs(verbs), _opts(opts) {}
  std::string create_srq(uint32_t capsule_size);

  ibv_context* _verbs;
  RdmaOptions _opts;
  ibv_pd* _pd = nullptr;
  DataPool _data;
  ibv_mr* _data_mr = nullptr;
  ibv_srq* _srq = nullptr;
  uint32_t _srq_size = 0;
  BufferPool _capsules;  // SRQ receive buffers (responses: none)
  std::unique_ptr<ibv_sge[]> _srq_sge;
};

}  // namespace rdma
