#include "engine/tcp/listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "engine/core/target.hpp"

namespace tcp {
namespace {

inline constexpr int listen_backlog = 128;
inline constexpr unsigned accept_backoff_min_ms = 10, accept_backoff_max_ms = 1000;

std::string peer_name(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

// Sets the options on fd; "" or the first the kernel refused, with why.
std::string apply_socket_options(int fd, const SocketOptions& o) {
  const auto set = [fd](int name, int value, const char* what) -> std::string {
    if (setsockopt(fd, SOL_SOCKET, name, &value, sizeof value) == 0) return {};
    const int err = errno;
    return std::string(what) + " " + std::to_string(value) + ": " + std::strerror(err) +
           (err == EPERM ? " (needs CAP_NET_ADMIN)" : "");
  };
  std::string err;
  if (o.priority >= 0) err = set(SO_PRIORITY, o.priority, "SO_PRIORITY");
  if (err.empty() && o.busy_poll_us > 0) err = set(SO_BUSY_POLL, int(o.busy_poll_us), "SO_BUSY_POLL");
  if (err.empty() && o.prefer_busy_poll) err = set(SO_PREFER_BUSY_POLL, 1, "SO_PREFER_BUSY_POLL");
  if (err.empty() && o.buffer_bytes > 0) {
    // The FORCE variants pass net.core.[wr]mem_max (CAP_NET_ADMIN); without it the kernel caps
    // the size silently, which is still a fixed buffer and never an error.
    const int bytes = static_cast<int>(std::min<uint64_t>(o.buffer_bytes, INT32_MAX / 2));
    for (auto [forced, plain] : {std::pair{SO_SNDBUFFORCE, SO_SNDBUF}, std::pair{SO_RCVBUFFORCE, SO_RCVBUF}})
      if (setsockopt(fd, SOL_SOCKET, forced, &bytes, sizeof bytes) != 0)
        setsockopt(fd, SOL_SOCKET, plain, &bytes, sizeof bytes);
  }
  return err;
}

}  // namespace

TcpTransport::TcpTransport(core::Target& target, exec::Executor& executor, QueueLimits limits, Budgets budgets,
                           stats::Registry& registry, exec::ConnectionCap& cap)
    : _target(target), _registry(registry), _executor(&executor), _limits(limits), _cap(cap), _budgets(budgets),
      _handshakes(limits.connect_timeout_ms) {
  _epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  _stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = _stop_fd;
  epoll_ctl(_epoll_fd, EPOLL_CTL_ADD, _stop_fd, &ev);
}

TcpTransport::~TcpTransport() {
  stop_accepting();
  for (int fd : _listen_fds) ::close(fd);
  ::close(_epoll_fd);
  ::close(_stop_fd);
  std::lock_guard<std::recursive_mutex> lk(_mutex);
  for (auto* q : _queues) {  // only if the executor was never stopped
    delete q;
    _cap.release();
  }
}

uint16_t TcpTransport::listen(const std::string& traddr, const std::string& trsvcid, std::string& error) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoul(trsvcid)));
  if (inet_pton(AF_INET, traddr.c_str(), &a.sin_addr) != 1) {
    error = "not an IPv4 address: " + traddr;
    return 0;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (auto bad = apply_socket_options(fd, _sockopts); !bad.empty()) {
    error = "cannot set " + bad;
    ::close(fd);
    return 0;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, listen_backlog) != 0) {
    error = "cannot listen on " + traddr + ":" + trsvcid + ": " + std::strerror(errno);
    ::close(fd);
    return 0;
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(_epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  _listen_fds.push_back(fd);
  return ntohs(a.sin_port);
}

void TcpTransport::start() {
  _thread = std::thread([this] { accept_loop(); });
}

void TcpTransport::stop_accepting() {
  if (!_thread.joinable()) return;
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(_stop_fd, &one, sizeof one);
  _thread.join();
}

void TcpTransport::accept_loop() {
  pthread_setname_np(pthread_self(), "nvmt-accept");
  std::array<epoll_event, 8> evs;
  for (;;) {
    const int n = epoll_wait(_epoll_fd, evs.data(), static_cast<int>(evs.size()), next_timeout_ms());
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.fd == _stop_fd) return;
      if (_paused_until == clock::time_point{} && !accept_one(evs[i].data.fd)) break;
    }
    if (_paused_until != clock::time_point{} && clock::now() >= _paused_until) resume_accepting();
    expire_handshakes();
  }
}

// Sleep until the next handshake deadline or the end of a pause (-1: nothing to wait for).
int TcpTransport::next_timeout_ms() {
  auto until = _handshakes.next();
  if (_paused_until != clock::time_point{}) until = std::min(until, _paused_until);
  return exec::wait_ms_until(until);
}

// Out of fds (EMFILE, ENFILE) or memory: the pending connection stays in the backlog, so the
// listening socket stays readable and retrying at once would spin. Stop watching the
// listeners, back off (10 ms doubling to 1 s), and say so once per episode.
void TcpTransport::pause_accepting(int err) {
  for (int fd : _listen_fds) epoll_ctl(_epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
  const bool first = _backoff_ms == 0;
  _backoff_ms = std::min(first ? accept_backoff_min_ms : _backoff_ms * 2, accept_backoff_max_ms);
  _paused_until = clock::now() + std::chrono::milliseconds(_backoff_ms);
  std::lock_guard<std::recursive_mutex> lk(_mutex);
  ++_accept_pauses;
  if (first)
    _target.log(core::EventLevel::warning, std::string("accept paused: ") + std::strerror(err) + " (" +
                                               std::to_string(_queues.size()) + " connections); retrying with backoff");
}

void TcpTransport::resume_accepting() {
  _paused_until = {};
  for (int fd : _listen_fds) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(_epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
}

bool TcpTransport::accept_one(int lfd) {
  for (;;) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    const int fd = accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
        pause_accepting(errno);
        return false;
      }
      return true;  // EAGAIN, or an error of that one connection (ECONNABORTED, …)
    }
    _backoff_ms = 0;
    serve_fd(fd, peer);
  }
}

void TcpTransport::serve_fd(int fd, const sockaddr_in& peer) {
  const int one = 1;
  // Small PDUs (CapsuleResp, R2T) must leave at once: latency, not bandwidth.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Accepted sockets inherit most options from the listener, but not every kernel copies
  // all of them; the listener already proved they are allowed.
  apply_socket_options(fd, _sockopts);
  // Attach under the lock: a live switch changes _executor under the same lock and then
  // moves every queue it finds in _executor's task list, so none is left behind.
  std::lock_guard<std::recursive_mutex> lk(_mutex);
  const std::string name = peer_name(peer);
  if (!_cap.try_acquire()) {
    ::close(fd);
    ++_refused;
    const auto now = clock::now();
    if (now - _last_refusal_log >= std::chrono::seconds(1)) {  // one line per second in a storm
      _last_refusal_log = now;
      _target.log(core::EventLevel::warning, "connection from " + name + " closed: max_connections (" +
                                                 std::to_string(_cap.max()) + ") reached");
    }
    return;
  }
  TcpQueue* q = nullptr;
  try {
    q = new TcpQueue(fd, name, _target, *_executor, _limits, _budgets, _mechanism.load(std::memory_order_relaxed));
    q->set_retire_hook([this](TcpQueue* dead) { on_retire(dead); });
    q->incoming_cpu();  // into the stats, whatever the placement asks
    _queues.insert(q);
  } catch (const std::exception& e) {  // bad_alloc, or the set could not grow
    delete q;  // closes fd
    if (!q) ::close(fd);
    _cap.release();
    ++_refused;
    _target.log(core::EventLevel::warning, "connection from " + name + " closed: " + e.what());
    return;
  }
  const uint64_t queue_id = _next_queue_id++;
  q->stats().set_identity({queue_id, 0, 0, {}, q->peer(),
                           q->mechanism() == IoMechanism::io_uring ? "io_uring" : "epoll", -1,
                           q->arrival_clock()});
  _registry.add_queue(&q->stats());
  _handshakes.add(q, queue_id);
  _executor->attach(*q);
}

// Queues past their deadline that have not completed Connect are told to close. A queue that
// is gone (closed, retired) is no longer in _queues: its pointer is never touched, and a new
// queue at its address has another queue_id.
void TcpTransport::expire_handshakes() {
  std::lock_guard<std::recursive_mutex> lk(_mutex);
  _handshakes.expire(clock::now(), [this](TcpQueue* q, uint64_t queue_id) {
    if (!_queues.count(q) || q->stats().identity().queue_id != queue_id || q->connected()) return;
    ++_connect_timeouts;
    q->expire_handshake();
  });
}

void TcpTransport::set_executor(exec::Executor& e) {
  std::lock_guard<std::recursive_mutex> lk(_mutex);
  _executor = &e;
}

exec::Executor& TcpTransport::executor() const {
  std::lock_guard<std::recursive_mutex> lk(_mutex);
  return *_executor;
}

std::string TcpTransport::move_queues(exec::Executor& to, unsigned timeout_ms) {
  std::unique_lock<std::recursive_mutex> lk(_mutex);
  exec::Executor& from = *_executor;
  _executor = &to;
  const std::vector<TcpQueue*> queues(_queues.begin(), _queues.end());
  return _move.move(lk, from, to, queues, timeout_ms, "queue");
}

void TcpTransport::on_retire(TcpQueue* q) {
  {
    std::lock_guard<std::recursive_mutex> lk(_mutex);
    add_queue(_retired, *q);
    _queues.erase(q);
    _registry.remove_queue(&q->stats());
    _move.forget(q);  // closed while a switch was moving it
  }
  delete q;
  _cap.release();
}

void TcpTransport::add_queue(TransportStats& s, const TcpQueue& q) {
  const auto& c = q.counters();
  s.pdus_rx += q.stats().pdus_rx.get();
  s.pdus_tx += q.stats().pdus_tx.get();
  s.bytes_rx += c.bytes_rx.get();
  s.bytes_tx += c.bytes_tx.get();
  s.term_sent += c.term_sent.get();
}

TransportStats TcpTransport::stats() const {
  std::lock_guard<std::recursive_mutex> lk(_mutex);
  TransportStats s = _retired;
  s.refused = _refused;
  s.accept_pauses = _accept_pauses;
  s.connect_timeouts = _connect_timeouts;
  for (auto* q : _queues) add_queue(s, *q);
  s.queues = static_cast<uint32_t>(_queues.size());
  return s;
}

uint8_t TcpTransport::trtype() const { return core::trtype_tcp; }

transport::Stats TcpTransport::totals() const {
  const TransportStats s = stats();
  return {s.pdus_rx, s.pdus_tx, s.term_sent, s.queues};
}

}  // namespace tcp
