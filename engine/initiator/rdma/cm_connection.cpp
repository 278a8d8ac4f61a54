#include "engine/initiator/rdma/cm_connection.hpp"

#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "engine/initiator/queue.hpp"
#include "engine/initiator/rdma/host_capsule.hpp"
#include "engine/rdma/device.hpp"

namespace initiator::rdma_host {
namespace {

constexpr uint8_t max_retry = 7;  // transport and RNR retries, as the Linux host asks

int left_ms(uint64_t deadline) {
  const uint64_t now = monotonic_ns();
  return now >= deadline ? 0 : static_cast<int>((deadline - now + 999'999) / 1'000'000);
}

}  // namespace

Result<std::unique_ptr<CmConnection>> CmConnection::open(const Target& t, const CmSizes& sizes, int timeout_ms) {
  if (auto why = ::rdma::rdma_unavailable(); !why.empty()) return Error::transport(0, why);
  std::unique_ptr<CmConnection> c(new CmConnection());
  c->_channel = rdma_create_event_channel();
  if (!c->_channel) return Error::transport(errno, "rdma_create_event_channel (is rdma_ucm loaded?)");
  if (rdma_create_id(c->_channel, &c->_id, nullptr, RDMA_PS_TCP) != 0) return Error::transport(errno, "rdma_create_id");
  if (auto r = c->resolve(t, timeout_ms); !r) return r.error();
  if (auto r = c->create_qp(sizes); !r) return r.error();
  return c;
}

Result<Ok> CmConnection::resolve(const Target& t, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(t.port), where = t.traddr + ":" + port;
  if (int rc = getaddrinfo(t.traddr.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Error::transport(0, "resolve " + t.traddr + ": " + gai_strerror(rc));
  const int rc = rdma_resolve_addr(_id, nullptr, res->ai_addr, timeout_ms);
  const int err = errno;
  freeaddrinfo(res);
  if (rc != 0) return Error::transport(err, "rdma_resolve_addr " + where + " (no RDMA device on its route?)");
  if (auto r = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms, "address resolution"); !r) return r;
  if (rdma_resolve_route(_id, timeout_ms) != 0) return Error::transport(errno, "rdma_resolve_route " + where);
  return expect_event(RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms, "route resolution");
}

Result<Ok> CmConnection::create_qp(const CmSizes& sizes) {
  _pd = ibv_alloc_pd(_id->verbs);
  if (!_pd) return Error::transport(errno, "ibv_alloc_pd");
  _cq = ibv_create_cq(_id->verbs, static_cast<int>(sizes.send_wr + sizes.recv_wr), nullptr, nullptr, 0);
  if (!_cq) return Error::transport(errno, "ibv_create_cq");
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = _cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = sizes.send_wr;
  qa.cap.max_recv_wr = sizes.recv_wr;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(_id, _pd, &qa) != 0) return Error::transport(errno, "rdma_create_qp");
  return Ok{};
}

Result<Ok> CmConnection::establish(std::span<const uint8_t> private_data, int timeout_ms) {
  ibv_device_attr attr{};
  if (ibv_query_device(_id->verbs, &attr) != 0) return Error::transport(errno, "ibv_query_device");
  rdma_conn_param p{};
  p.private_data = private_data.data();
  p.private_data_len = static_cast<uint8_t>(private_data.size());
  // The target RDMA READs host writes' data: it may have as many reads outstanding as we serve.
  p.responder_resources = static_cast<uint8_t>(std::clamp(attr.max_qp_rd_atom, 0, 255));
  p.flow_control = 1;
  p.retry_count = max_retry;
  p.rnr_retry_count = max_retry;
  if (rdma_connect(_id, &p) != 0) return Error::transport(errno, "rdma_connect");
  if (auto r = expect_event(RDMA_CM_EVENT_ESTABLISHED, timeout_ms, "connect"); !r) return r;
  _connected = true;
  return Ok{};
}

Result<Ok> CmConnection::expect_event(rdma_cm_event_type expected, int timeout_ms, const char* what) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(std::max(timeout_ms, 0)) * 1'000'000;
  pollfd pfd{_channel->fd, POLLIN, 0};
  int rc;
  while ((rc = ::poll(&pfd, 1, left_ms(deadline))) < 0 && errno == EINTR) {
  }
  if (rc == 0) return Error::timeout(std::string("rdma_cm ") + what);
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(_channel, &ev) != 0) return Error::transport(errno, "rdma_get_cm_event");
  const rdma_cm_event_type type = ev->event;
  const int status = ev->status;
  std::string reject;
  if (type == RDMA_CM_EVENT_REJECTED)
    reject = cm_reject_reason({static_cast<const uint8_t*>(ev->param.conn.private_data), ev->param.conn.private_data_len});
  rdma_ack_cm_event(ev);
  if (type == expected) return Ok{};
  if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL) _peer_closed = true;
  std::string msg = std::string("rdma_cm ") + what + ": " + rdma_event_str(type);
  if (!reject.empty()) msg += ", " + reject;
  else if (status) msg += " (status " + std::to_string(status) + ")";
  return Error::transport(0, msg);
}

void CmConnection::disconnect() {
  if (!_connected) return;
  _connected = false;
  rdma_disconnect(_id);
}

bool CmConnection::peer_closed(int timeout_ms) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(std::max(timeout_ms, 0)) * 1'000'000;
  while (!_peer_closed) {
    pollfd pfd{_channel->fd, POLLIN, 0};
    const int rc = ::poll(&pfd, 1, left_ms(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(_channel, &ev) != 0) break;
    if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
        ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
      _peer_closed = true;
    rdma_ack_cm_event(ev);
  }
  return _peer_closed;
}

CmConnection::~CmConnection() {
  disconnect();
  if (_id && _id->qp) rdma_destroy_qp(_id);
  if (_cq) ibv_destroy_cq(_cq);
  if (_pd) ibv_dealloc_pd(_pd);
  if (_id) rdma_destroy_id(_id);
  if (_channel) rdma_destroy_event_channel(_channel);
}

}  // namespace initiator::rdma_host
