#pragma once
// A verbs provider in the test process, so rdma::RdmaQueue and rdma::SharedDevice run their real
// code on a host without an RDMA device (these build machines: no RDMA in the kernel at all, so
// not even soft-RoCE). The data path's verbs (ibv_poll_cq, ibv_post_send/recv/srq_recv,
// ibv_req_notify_cq) are inline calls through the context's ops table, which this file fills;
// the control-path functions the engine calls (ibv_create_cq, ibv_reg_mr, rdma_create_qp, …)
// are defined here, and a definition in the test executable wins over libibverbs' at link time.
// Include it in exactly one translation unit of a test executable, and in none that needs the
// real rdma-core (rdma_host_test's "no RDMA device" check does).
//
// The fake host is the test: it places a capsule in the next posted receive (host_send), and
// the target's RDMA READ and WRITE copy straight from and to the keyed SGL's address, which is
// a pointer into the test's own memory. Every completion lands in the CQ at once; a CQ given
// more than the size it was created with records an overrun (a real one raises a CQ error and
// takes the device's queues down) and drops the completion.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace fake_verbs {

struct Posted {
  uint64_t wr_id = 0;
  ibv_sge sge{};
};

struct Cq {
  ibv_cq cq{};
  int size = 0;
  std::deque<ibv_wc> wcs;
  bool overrun = false;
};

struct Qp {
  ibv_qp qp{};
  ibv_qp_init_attr attr{};
  std::deque<Posted> recvs;
  std::vector<std::array<uint8_t, 16>> responses;  // CQEs the target sent, in order
  unsigned rdma_writes = 0;
};

struct Srq {
  ibv_srq srq{};
  std::deque<Posted> recvs;
};

// Everything the provider holds; one test at a time (reset() between tests).
struct World {
  std::mutex mu;
  ibv_device device{};
  ibv_context context{};
  std::map<ibv_cq*, std::unique_ptr<Cq>> cqs;
  std::map<ibv_qp*, std::unique_ptr<Qp>> qps;
  std::map<ibv_srq*, std::unique_ptr<Srq>> srqs;
  size_t registered = 0;       // bytes under a live ibv_reg_mr
  size_t peak_registered = 0;  // the most at once
  unsigned disconnects = 0;
  uint32_t next_key = 1;
  int max_cqe = 1 << 16;
};

inline World& world() {
  static World w;
  return w;
}

inline Cq& cq_of(ibv_cq* cq) { return *world().cqs.at(cq); }
inline Qp& qp_of(ibv_qp* qp) { return *world().qps.at(qp); }

inline void push_wc(ibv_cq* cq, const ibv_wc& wc) {
  Cq& c = cq_of(cq);
  if (static_cast<int>(c.wcs.size()) >= c.size) {
    c.overrun = true;
    return;
  }
  c.wcs.push_back(wc);
}

inline ibv_wc make_wc(uint64_t wr_id, ibv_wc_opcode op, uint32_t len = 0) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = op;
  wc.byte_len = len;
  return wc;
}

inline int poll_cq(ibv_cq* cq, int n, ibv_wc* out) {
  std::lock_guard lk(world().mu);
  Cq& c = cq_of(cq);
  int got = 0;
  for (; got < n && !c.wcs.empty(); ++got) {
    out[got] = c.wcs.front();
    c.wcs.pop_front();
  }
  return got;
}

inline int req_notify_cq(ibv_cq*, int) { return 0; }

inline int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::lock_guard lk(world().mu);
  for (; wr; wr = wr->next) world().srqs.at(srq)->recvs.push_back({wr->wr_id, wr->sg_list[0]});
  *bad = nullptr;
  return 0;
}

inline int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::lock_guard lk(world().mu);
  Qp& q = qp_of(qp);
  for (; wr; wr = wr->next) {
    if (q.recvs.size() >= q.attr.cap.max_recv_wr) return *bad = wr, ENOMEM;
    q.recvs.push_back({wr->wr_id, wr->sg_list[0]});
  }
  *bad = nullptr;
  return 0;
}

inline int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  std::lock_guard lk(world().mu);
  Qp& q = qp_of(qp);
  for (; wr; wr = wr->next) {
    auto* local = reinterpret_cast<uint8_t*>(wr->sg_list[0].addr);
    auto* remote = reinterpret_cast<uint8_t*>(wr->wr.rdma.remote_addr);
    const uint32_t len = wr->sg_list[0].length;
    switch (wr->opcode) {
      case IBV_WR_RDMA_READ:
        std::memcpy(local, remote, len);
        break;
      case IBV_WR_RDMA_WRITE:
        std::memcpy(remote, local, len);
        ++q.rdma_writes;
        break;
      case IBV_WR_SEND:
      case IBV_WR_SEND_WITH_INV:
        std::memcpy(q.responses.emplace_back().data(), local, 16);
        break;
      default:
        return *bad = wr, EINVAL;
    }
    if (wr->send_flags & IBV_SEND_SIGNALED)
      push_wc(qp->send_cq, make_wc(wr->wr_id, wr->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_SEND));
  }
  *bad = nullptr;
  return 0;
}

// Before each test: no objects, the ops table filled.
inline void reset() {
  World& w = world();
  std::lock_guard lk(w.mu);
  w.cqs.clear();
  w.qps.clear();
  w.srqs.clear();
  w.registered = w.peak_registered = 0;
  w.disconnects = 0;
  w.max_cqe = 1 << 16;
  std::strcpy(w.device.name, "fake0");
  w.context = {};
  w.context.device = &w.device;
  w.context.num_comp_vectors = 1;
  w.context.ops.poll_cq = poll_cq;
  w.context.ops.req_notify_cq = req_notify_cq;
  w.context.ops.post_srq_recv = post_srq_recv;
  w.context.ops.post_send = post_send;
  w.context.ops.post_recv = post_recv;
}

// The host sends a capsule on qp: it lands in the next receive posted (the QP's, or the shared
// receive queue's) and completes on the QP's receive CQ. False: no receive posted (a real
// host's SEND would wait in RNR retries).
inline bool host_send(ibv_qp* qp, std::span<const uint8_t> capsule) {
  std::lock_guard lk(world().mu);
  std::deque<Posted>& from = qp->srq ? world().srqs.at(qp->srq)->recvs : qp_of(qp).recvs;
  if (from.empty()) return false;
  const Posted r = from.front();
  from.pop_front();
  EXPECT_LE(capsule.size(), r.sge.length) << "capsule larger than the receive buffer";
  std::memcpy(reinterpret_cast<void*>(r.sge.addr), capsule.data(), std::min<size_t>(capsule.size(), r.sge.length));
  push_wc(qp->recv_cq, make_wc(r.wr_id, IBV_WC_RECV, static_cast<uint32_t>(capsule.size())));
  return true;
}

inline size_t srq_posted(ibv_srq* srq) {
  std::lock_guard lk(world().mu);
  return world().srqs.at(srq)->recvs.size();
}

}  // namespace fake_verbs

// ---- the provider's control path, as the engine calls it -------------------------------------

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  auto* pd = new ibv_pd{};
  pd->context = ctx;
  return pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  delete pd;
  return 0;
}

// In parentheses: verbs.h makes ibv_reg_mr a function-like macro.
ibv_mr* (ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int) {
  auto& w = fake_verbs::world();
  std::lock_guard lk(w.mu);
  auto* mr = new ibv_mr{};
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  mr->lkey = mr->rkey = w.next_key++;
  w.registered += length;
  w.peak_registered = std::max(w.peak_registered, w.registered);
  return mr;
}

int ibv_dereg_mr(ibv_mr* mr) {
  auto& w = fake_verbs::world();
  std::lock_guard lk(w.mu);
  w.registered -= mr->length;
  delete mr;
  return 0;
}

int ibv_query_device(ibv_context*, ibv_device_attr* attr) {
  *attr = {};
  attr->max_srq = 16;
  attr->max_srq_wr = 1 << 14;
  attr->max_cqe = fake_verbs::world().max_cqe;
  attr->max_qp_wr = 1 << 14;
  attr->max_qp_init_rd_atom = attr->max_qp_rd_atom = 16;
  return 0;
}

const char* ibv_get_device_name(ibv_device* device) { return device->name; }

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr*) {
  auto& w = fake_verbs::world();
  std::lock_guard lk(w.mu);
  auto s = std::make_unique<fake_verbs::Srq>();
  s->srq.context = pd->context;
  s->srq.pd = pd;
  ibv_srq* p = &s->srq;
  w.srqs[p] = std::move(s);
  return p;
}

int ibv_destroy_srq(ibv_srq* srq) {
  std::lock_guard lk(fake_verbs::world().mu);
  fake_verbs::world().srqs.erase(srq);
  return 0;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx) {
  auto* ch = new ibv_comp_channel{};
  ch->context = ctx;
  ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* ch) {
  ::close(ch->fd);
  delete ch;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel*, ibv_cq**, void**) {
  errno = EAGAIN;
  return -1;
}

void ibv_ack_cq_events(ibv_cq*, unsigned) {}

ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel, int) {
  auto& w = fake_verbs::world();
  std::lock_guard lk(w.mu);
  if (cqe > w.max_cqe) {
    errno = EINVAL;
    return nullptr;
  }
  auto c = std::make_unique<fake_verbs::Cq>();
  c->cq.context = ctx;
  c->cq.channel = channel;
  c->cq.cq_context = cq_context;
  c->cq.cqe = c->size = cqe;
  ibv_cq* p = &c->cq;
  w.cqs[p] = std::move(c);
  return p;
}

int ibv_destroy_cq(ibv_cq* cq) {
  std::lock_guard lk(fake_verbs::world().mu);
  fake_verbs::world().cqs.erase(cq);
  return 0;
}

int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* attr) {
  auto& w = fake_verbs::world();
  std::lock_guard lk(w.mu);
  auto q = std::make_unique<fake_verbs::Qp>();
  q->attr = *attr;
  q->qp.context = id->verbs;
  q->qp.pd = pd;
  q->qp.send_cq = attr->send_cq;
  q->qp.recv_cq = attr->recv_cq;
  q->qp.srq = attr->srq;
  q->qp.qp_type = attr->qp_type;
  id->qp = &q->qp;
  w.qps[id->qp] = std::move(q);
  return 0;
}

void rdma_destroy_qp(rdma_cm_id* id) {
  std::lock_guard lk(fake_verbs::world().mu);
  fake_verbs::world().qps.erase(id->qp);
  id->qp = nullptr;
}

int rdma_disconnect(rdma_cm_id*) {
  ++fake_verbs::world().disconnects;
  return 0;
}

// The test owns its ids (an rdma_cm_id it made itself).
int rdma_destroy_id(rdma_cm_id*) { return 0; }

}  // extern "C"
