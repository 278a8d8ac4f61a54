#include "engine/rdma/listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <span>

#include "engine/core/target.hpp"
#include "engine/rdma/device.hpp"

namespace rdma {
namespace {

inline constexpr int listen_backlog = 128;
inline constexpr uint8_t rnr_retry_infinite = 7;

std::string addr_name(const sockaddr* sa) {
  if (!sa || sa->sa_family != AF_INET) return "?";
  const auto* a = reinterpret_cast<const sockaddr_in*>(sa);
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a->sin_port));
}

}  // namespace

RdmaTransport::RdmaTransport(core::Target& target, exec::Executor& executor, QueueLimits limits,
                             const transport::Budgets& budgets, stats::Registry& registry, exec::ConnectionCap& cap,
                             const RdmaOptions& options)
    : _target(target), _registry(registry), _executor(&executor), _limits(limits), _cap(cap), _options(options),
      _budgets(budgets), _handshakes(limits.connect_timeout_ms) {
  _epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  _stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = _stop_fd;
  epoll_ctl(_epoll_fd, EPOLL_CTL_ADD, _stop_fd, &ev);
}

RdmaTransport::~RdmaTransport() {
  stop_accepting();
  {
    std::lock_guard lk(_mutex);
    for (auto& [id, e] : _queues) {  // only if the executor was never stopped
      delete e.queue;
      _cap.release();
    }
    _queues.clear();
    _devices.clear();  // after their queues: the PD and pool outlive every QP and MR on them
  }
  for (auto* id : _listen_ids) rdma_destroy_id(id);
  if (_channel) rdma_destroy_event_channel(_channel);
  ::close(_epoll_fd);
  ::close(_stop_fd);
}

// The CM event channel is the first thing that needs the kernel's RDMA stack (rdma_ucm).
bool RdmaTransport::open_channel(std::string& error) {
  if (_channel) return true;
  if (auto why = rdma_unavailable(); !why.empty()) return error = why, false;
  if (!(_channel = rdma_create_event_channel())) {
    error = std::string("no RDMA device: cannot open the RDMA CM (") + std::strerror(errno) + "; modprobe rdma_ucm)";
    return false;
  }
  fcntl(_channel->fd, F_SETFL, fcntl(_channel->fd, F_GETFL) | O_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = _channel->fd;
  epoll_ctl(_epoll_fd, EPOLL_CTL_ADD, _channel->fd, &ev);
  return true;
}

uint16_t RdmaTransport::listen(const std::string& traddr, const std::string& trsvcid, std::string& error) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoul(trsvcid)));
  if (inet_pton(AF_INET, traddr.c_str(), &a.sin_addr) != 1) return error = "not an IPv4 address: " + traddr, 0;
  if (!open_channel(error)) return 0;
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(_channel, &id, this, RDMA_PS_TCP) != 0)
    return error = std::string("rdma_create_id: ") + std::strerror(errno), 0;
  if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a)) != 0 || rdma_listen(id, listen_backlog) != 0) {
    const int err = errno;
    error = "cannot listen on rdma " + traddr + ":" + trsvcid + ": " + std::strerror(err);
    if (err == EADDRNOTAVAIL || err == ENODEV) error += " (no RDMA device on this address; " + std::string(soft_rdma_hint) + ")";
    rdma_destroy_id(id);
    return 0;
  }
  _listen_ids.push_back(id);
  return ntohs(rdma_get_src_port(id));
}

void RdmaTransport::start() {
  if (_channel) _thread = std::thread([this] { cm_loop(); });
}

void RdmaTransport::stop_accepting() {
  if (!_thread.joinable()) return;
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(_stop_fd, &one, sizeof one);
  _thread.join();
}

void RdmaTransport::cm_loop() {
  pthread_setname_np(pthread_self(), "nvmt-rdma-cm");
  std::array<epoll_event, 4> evs;
  for (;;) {
    const int n = epoll_wait(_epoll_fd, evs.data(), static_cast<int>(evs.size()), exec::wait_ms_until(_handshakes.next()));
    for (int i = 0; i < n; ++i)
      if (evs[i].data.fd == _stop_fd) return;
    expire_handshakes();
    rdma_cm_event* ev = nullptr;
    while (rdma_get_cm_event(_channel, &ev) == 0) {
      // Ids and queues are destroyed only after their event is acked: rdma_destroy_id waits
      // for the acks of its id's events.
      std::vector<RdmaQueue*> dead;
      std::vector<rdma_cm_id*> rejected;
      if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) on_connect_request(*ev, rejected, dead);
      else on_event(*ev, dead);
      rdma_ack_cm_event(ev);
      for (auto* id : rejected) rdma_destroy_id(id);
      for (auto* q : dead) delete q;
    }
  }
}

void RdmaTransport::on_connect_request(rdma_cm_event& ev, std::vector<rdma_cm_id*>& rejected,
                                       std::vector<RdmaQueue*>& dead) {
  rdma_cm_id* id = ev.id;
  const std::string peer = "rdma " + addr_name(rdma_get_local_addr(id)) + " <- " + addr_name(rdma_get_peer_addr(id));
  const auto& conn = ev.param.conn;
  const auto pd = std::span(static_cast<const uint8_t*>(conn.private_data), conn.private_data ? conn.private_data_len : 0);
  const CmRequestResult req = parse_cm_request(pd, {_limits.max_io_queues, _limits.queue_depth});
  const auto reject = [&](CmStatus sts, const std::string& why) {
    const auto rej = encode_cm_reject(sts);
    rdma_reject(id, rej.data(), static_cast<uint8_t>(rej.size()));
    _target.log(core::EventLevel::warning, "rejected " + peer + ": " + std::string(cm_status_text(sts)) + why);
    std::lock_guard lk(_mutex);
    ++_counts.rejects;
  };
  if (req.status != CmStatus::ok) return reject(req.status, ""), rejected.push_back(id);
  std::lock_guard lk(_mutex);
  if (!_cap.try_acquire())
    return reject(CmStatus::no_resources, " (max_connections " + std::to_string(_cap.max()) + ")"),
           rejected.push_back(id);
  // From here every refusal gives the slot back; an accepted queue gives it back when it goes.
  const auto refuse = [&](const std::string& why) {
    _cap.release();
    reject(CmStatus::no_resources, " (" + why + ")");
  };
  std::shared_ptr<SharedDevice> device;
  if (auto err = device_for(id->verbs, device); !err.empty()) return refuse(err), rejected.push_back(id);
  RdmaQueue* q = nullptr;
  try {
    q = new RdmaQueue(id, peer, _target, *_executor, _limits, _budgets, std::move(device));
  } catch (const std::exception& e) {  // bad_alloc: this connection is refused, the thread goes on
    return refuse(e.what()), rejected.push_back(id);
  }
  if (auto err = q->setup(req); !err.empty()) return refuse(err), dead.push_back(q);
  ibv_device_attr attr{};
  ibv_query_device(id->verbs, &attr);
  const auto accept = encode_cm_accept(q->recv_depth());
  rdma_conn_param p{};
  p.private_data = accept.data();
  p.private_data_len = static_cast<uint8_t>(accept.size());
  p.initiator_depth = negotiate_rd_atomic(conn.initiator_depth, attr.max_qp_init_rd_atom);
  p.responder_resources = negotiate_rd_atomic(conn.responder_resources, attr.max_qp_rd_atom);
  p.rnr_retry_count = rnr_retry_infinite;
  p.flow_control = 1;
  if (rdma_accept(id, &p) != 0) {
    _target.log(core::EventLevel::warning, "cannot accept " + peer + ": " + std::strerror(errno));
    _cap.release();
    return dead.push_back(q);
  }
  q->set_retire_hook([this](RdmaQueue* dead_q) { on_retire(dead_q); });
  _queues[id] = Entry{q, false};
  _target.log(core::EventLevel::info, peer + ": qid " + std::to_string(req.request.qid) + ", comp vector " +
                                          std::to_string(q->comp_vector()) + " of " +
                                          std::to_string(id->verbs->num_comp_vectors) + ", " +
                                          std::to_string(q->registered_bytes()) + " bytes registered by the queue");
}

std::string RdmaTransport::device_for(ibv_context* verbs, std::shared_ptr<SharedDevice>& out) {
  if (auto it = _devices.find(verbs); it != _devices.end()) return out = it->second, "";
  const uint32_t capsule = nvme::sqe_size + _limits.io_icd_size;
  if (auto err = SharedDevice::open(verbs, _options, _limits.mdts_bytes, capsule, out); !err.empty()) return err;
  _devices[verbs] = out;
  _target.log(core::EventLevel::info, out->describe());
  return {};
}

// Established: the queue starts serving on the current executor.
void RdmaTransport::on_established(rdma_cm_id* id) {
  std::lock_guard lk(_mutex);
  auto it = _queues.find(id);
  if (it == _queues.end() || it->second.attached) return;
  RdmaQueue* q = it->second.queue;
  it->second.attached = true;
  ++_counts.connects;
  const uint64_t queue_id = _next_queue_id++;
  q->stats().set_identity({queue_id, 0, 0, {}, q->peer(), "rdma", q->comp_vector(), "readiness"});
  _registry.add_queue(&q->stats());
  _executor->attach(*q);
  _handshakes.add(id, queue_id);
}

// Established queues that have not completed Connect by their deadline are told to close, as
// TCP's: the queue's memory and a connection slot are not held by a host that never connects.
void RdmaTransport::expire_handshakes() {
  std::lock_guard lk(_mutex);
  _handshakes.expire(std::chrono::steady_clock::now(), [this](rdma_cm_id* id, uint64_t queue_id) {
    auto it = _queues.find(id);
    if (it == _queues.end() || !it->second.attached || it->second.queue->connected() ||
        it->second.queue->stats().identity().queue_id != queue_id)
      return;
    ++_counts.connect_timeouts;
    it->second.queue->expire_handshake();
  });
}

void RdmaTransport::on_event(rdma_cm_event& ev, std::vector<RdmaQueue*>& dead) {
  if (ev.event == RDMA_CM_EVENT_ESTABLISHED) return on_established(ev.id);
  if (ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL && ev.listen_id == nullptr) {
    for (auto* id : _listen_ids)
      if (id == ev.id) _target.log(core::EventLevel::error, "rdma listener lost its device (DEVICE_REMOVAL)");
  }
  const bool gone = ev.event == RDMA_CM_EVENT_DISCONNECTED || ev.event == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
                    ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL || ev.event == RDMA_CM_EVENT_CONNECT_ERROR ||
                    ev.event == RDMA_CM_EVENT_UNREACHABLE || ev.event == RDMA_CM_EVENT_REJECTED;
  if (!gone) return;
  std::lock_guard lk(_mutex);
  auto it = _queues.find(ev.id);
  if (it == _queues.end()) return;
  if (it->second.attached) return it->second.queue->on_disconnected();
  dead.push_back(it->second.queue);  // never established: no executor knows it
  _queues.erase(it);
  _cap.release();
}

void RdmaTransport::on_retire(RdmaQueue* q) {
  {
    std::lock_guard lk(_mutex);
    _queues.erase(q->cm_id());
    _registry.remove_queue(&q->stats());
    ++_counts.disconnects;
    _move.forget(q);
  }
  delete q;
  _cap.release();
}

void RdmaTransport::set_executor(exec::Executor& e) {
  std::lock_guard lk(_mutex);
  _executor = &e;
}

std::string RdmaTransport::move_queues(exec::Executor& to, unsigned timeout_ms) {
  std::unique_lock lk(_mutex);
  exec::Executor& from = *_executor;
  _executor = &to;
  std::vector<RdmaQueue*> queues;
  for (auto& [id, e] : _queues)
    if (e.attached) queues.push_back(e.queue);
  return _move.move(lk, from, to, queues, timeout_ms, "rdma queue");
}

TransportStats RdmaTransport::stats() const {
  std::lock_guard lk(_mutex);
  TransportStats s = _counts;
  s.queues = static_cast<uint32_t>(_queues.size());
  return s;
}

uint8_t RdmaTransport::trtype() const { return core::trtype_rdma; }

transport::Stats RdmaTransport::totals() const { return {.queues = stats().queues}; }

}  // namespace rdma
