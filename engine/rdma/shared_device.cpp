#include "engine/rdma/shared_device.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/rdma/work_request.hpp"

namespace rdma {
namespace {
std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }
}  // namespace

std::string SharedDevice::open(ibv_context* verbs, const RdmaOptions& opts, uint32_t mdts_bytes,
                               uint32_t capsule_size, std::shared_ptr<SharedDevice>& out) {
  std::shared_ptr<SharedDevice> d(new SharedDevice(verbs, opts));
  if (!(d->_pd = ibv_alloc_pd(verbs))) return errno_text("ibv_alloc_pd");
  if (auto err = d->_data.create(opts.data_pool_bytes, mdts_bytes); !err.empty()) return err;
  // Local write only: receives and RDMA READ land here; the target initiates every transfer.
  const int access = IBV_ACCESS_LOCAL_WRITE;  // an int: see BufferPool::create
  if (!(d->_data_mr = ibv_reg_mr(d->_pd, d->_data.base(), d->_data.bytes(), access)))
    return "cannot register the data pool (" + std::to_string(d->_data.bytes()) + " bytes): " + std::strerror(errno) +
           (errno == ENOMEM ? " (locked-memory limit: ulimit -l, or a smaller rdma.data_pool_bytes)" : "");
  if (opts.use_srq)
    if (auto err = d->create_srq(capsule_size); !err.empty()) return err;
  out = std::move(d);
  return {};
}

std::string SharedDevice::create_srq(uint32_t capsule_size) {
  ibv_device_attr attr{};
  if (ibv_query_device(_verbs, &attr) != 0) return errno_text("ibv_query_device");
  if (attr.max_srq <= 0) return "use_srq: this device has no shared receive queues";
  _srq_size = std::min<uint32_t>(_opts.srq_size, static_cast<uint32_t>(attr.max_srq_wr));
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = _srq_size;
  sa.attr.max_sge = 1;
  if (!(_srq = ibv_create_srq(_pd, &sa))) return errno_text("ibv_create_srq");
  if (auto err = _capsules.create(_pd, {_srq_size, capsule_size, 0}); !err.empty()) return err;
  _srq_sge.reset(new ibv_sge[_srq_size]);
  for (uint32_t i = 0; i < _srq_size; ++i) {
    _srq_sge[i] = make_sge(_capsules.capsule(i), capsule_size, _capsules.lkey());
    if (!post_srq_recv(i)) return errno_text("ibv_post_srq_recv");
  }
  return {};
}

// Called by the queues' threads concurrently: the provider serialises posts to one SRQ.
bool SharedDevice::post_srq_recv(uint32_t i) {
  ibv_recv_wr wr = make_recv(i, &_srq_sge[i]);
  ibv_recv_wr* bad = nullptr;
  return ibv_post_srq_recv(_srq, &wr, &bad) == 0;
}

SharedDevice::~SharedDevice() {
  if (_srq) ibv_destroy_srq(_srq);
  _capsules.deregister();
  if (_data_mr) ibv_dereg_mr(_data_mr);
  if (_pd) ibv_dealloc_pd(_pd);
}

std::string SharedDevice::describe() const {
  std::string s = std::string("rdma device ") + ibv_get_device_name(_verbs->device) + ": data pool " +
                  _data.describe() + " registered once";
  if (_srq) s += ", shared receive queue of " + std::to_string(_srq_size) + " capsules";
  return s + ", " + std::to_string(registered_bytes()) + " bytes registered";
}

}  // namespace rdma
