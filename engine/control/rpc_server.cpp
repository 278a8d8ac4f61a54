// The control socket's JSON-RPC 2.0 server (rpc_server.hpp): dispatch, then the socket and its
// one serving thread (epoll over the listener, the clients and a stop eventfd).
#include "engine/control/rpc_server.hpp"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/system/private_dir.hpp"

namespace control {

namespace {

using json = nlohmann::json;

constexpr int listen_backlog = 16;
constexpr size_t read_chunk = 64 * 1024;
constexpr int max_events = 16;
constexpr auto accept_retry_pause = std::chrono::milliseconds(100);
constexpr const char* root_socket_dir = "/run/nvmetune";
constexpr const char* socket_name = "nvmetune.sock";

// ---------------------------------------------------------------- dispatch

json error_response(const json& id, int code, std::string message, json data = nullptr) {
  json error = {{"code", code}, {"message", std::move(message)}};
  if (!data.is_null()) error["data"] = std::move(data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

bool valid_id(const json& id) { return id.is_string() || id.is_number() || id.is_null(); }

// Why req is not a valid request object, or nullopt.
std::optional<std::string> request_problem(const json& req) {
  auto version = req.find("jsonrpc");
  if (version == req.end() || *version != "2.0") return "\"jsonrpc\" must be \"2.0\"";
  auto method = req.find("method");
  if (method == req.end()) return "missing \"method\"";
  if (!method->is_string()) return std::string("\"method\" must be a string, got ") + method->type_name();
  auto params = req.find("params");
  if (params != req.end() && !params->is_object() && !params->is_array())
    return std::string("\"params\" must be an object or an array, got ") + params->type_name();
  auto id = req.find("id");
  if (id != req.end() && !valid_id(*id)) return std::string("\"id\" must be a string, a number or null, got ") + id->type_name();
  return std::nullopt;
}

json method_names(const RpcMethodTable& methods) {
  json names = json::array();
  for (const auto& [name, fn] : methods) names.push_back(name);
  return names;
}

RpcOutcome call(const RpcMethod& fn, const std::string& name, const json& params) {
  try {
    return fn(params);
  } catch (const std::exception& e) {
    return RpcOutcome::fail(rpc_code::internal_error, "internal error in " + name + ": " + e.what());
  }
}

// One request object; nullopt for a notification.
std::optional<json> handle_request(const RpcMethodTable& methods, const json& req) {
  if (!req.is_object())
    return error_response(nullptr, rpc_code::invalid_request,
                          std::string("invalid request: expected a request object, got ") + req.type_name());
  auto id_it = req.find("id");
  const json id = id_it != req.end() && valid_id(*id_it) ? *id_it : json(nullptr);
  if (auto problem = request_problem(req)) return error_response(id, rpc_code::invalid_request, "invalid request: " + *problem);
  const bool notification = id_it == req.end();
  const std::string name = req["method"].get<std::string>();
  auto method = methods.find(name);
  if (method == methods.end()) {
    if (notification) return std::nullopt;
    return error_response(id, rpc_code::method_not_found, "method not found: " + json(name).dump(),
                          {{"method", name}, {"available", method_names(methods)}});
  }
  auto params_it = req.find("params");
  RpcOutcome outcome = call(method->second, name, params_it == req.end() ? json(nullptr) : *params_it);
  if (notification) return std::nullopt;
  if (outcome.error) return error_response(id, outcome.error->code, std::move(outcome.error->message), std::move(outcome.error->data));
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(outcome.result)}};
}

std::string parse_error_detail(const json::parse_error& e) {
  std::string detail = e.what();
  if (auto colon = detail.find(": "); colon != std::string::npos) detail.erase(0, colon + 2);
  return detail;
}

// ---------------------------------------------------------------- socket file

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// The default directory of a user without XDG_RUNTIME_DIR: in /tmp, where anyone could have
// made it first, so it is used only when it is ours and private.
std::string tmp_socket_dir() { return "/tmp/nvmetune-" + std::to_string(geteuid()); }

// Creates the socket's directory (one level, mode 0700) when missing. A directory that exists
// is used as it is, except the shared /tmp fallback, which must be ours and private.
std::string ensure_parent_dir(const std::string& path) {
  const std::string dir = sys::parent_dir(path);
  return sys::ensure_dir(dir, dir == tmp_socket_dir() ? sys::DirTrust::private_0700 : sys::DirTrust::any);
}

bool fill_address(const std::string& path, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

// An existing file at path: a socket nobody answers on is stale and removed; a live one, or
// anything that is not a socket, is left alone and reported.
std::string clear_stale_socket(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return errno == ENOENT ? std::string{} : errno_text("cannot stat " + path);
  if (!S_ISSOCK(st.st_mode)) return path + " exists and is not a socket; not replacing it";
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return errno_text("socket");
  const int rc = connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  close(probe);
  if (rc == 0) return path + " is in use by another running server (another nvmetune serve?)";
  if (err != ECONNREFUSED) return "cannot check " + path + ": " + std::strerror(err);
  if (unlink(path.c_str()) != 0) return errno_text("cannot remove stale socket " + path);
  return {};
}

struct Client {
  int fd = -1;
  std::string in;      // received, not yet served
  std::string out;     // responses not yet sent
  bool eof = false;    // the peer shut down writing: serve what is left, flush, close
  bool closing = false;  // flush `out`, then close (refused peers, oversized lines)
};

}  // namespace

std::optional<std::string> rpc_handle_line(const RpcMethodTable& methods, std::string_view line) {
  json doc;
  try {
    doc = json::parse(line);
  } catch (const json::parse_error& e) {
    return error_response(nullptr, rpc_code::parse_error, "parse error: " + parse_error_detail(e)).dump();
  }
  if (!doc.is_array()) {
    auto response = handle_request(methods, doc);
    return response ? std::optional(response->dump()) : std::nullopt;
  }
  if (doc.empty()) return error_response(nullptr, rpc_code::invalid_request, "invalid request: empty batch").dump();
  json responses = json::array();
  for (const auto& req : doc)
    if (auto response = handle_request(methods, req)) responses.push_back(std::move(*response));
  if (responses.empty()) return std::nullopt;
  return responses.dump();
}

std::string default_control_socket_path() {
  if (geteuid() == 0) return std::string(root_socket_dir) + "/" + socket_name;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return std::string(xdg) + "/" + socket_name;
  return tmp_socket_dir() + "/" + socket_name;
}

// ---------------------------------------------------------------- the server

struct RpcServer::Impl {
  RpcMethodTable methods;
  RpcServerOptions opt;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  dev_t socket_dev = 0;  // the file we bound, so stop() never removes someone else's
  ino_t socket_ino = 0;
  std::map<int, Client> clients;
  std::thread thread;

  void log(const std::string& text) const {
    if (opt.log) opt.log("control socket " + opt.path + ": " + text);
  }

  std::string create_socket() {
    sockaddr_un addr;
    if (!fill_address(opt.path, addr))
      return "socket path \"" + opt.path + "\" is empty or longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes";
    if (auto err = ensure_parent_dir(opt.path); !err.empty()) return err;
    if (auto err = clear_stale_socket(opt.path, addr); !err.empty()) return err;
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd < 0) return errno_text("socket");
    // bind() creates the file with mode 0777 & ~umask: the umask gives it `mode` from its first
    // instant. umask is process-wide, but the window only ever makes other files more private.
    const mode_t old_umask = umask(~opt.mode & 0777);
    const int rc = bind(listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    const int err = errno;
    umask(old_umask);
    if (rc != 0) return "cannot bind " + opt.path + ": " + std::strerror(err);
    struct stat st {};
    if (stat(opt.path.c_str(), &st) == 0) {
      socket_dev = st.st_dev;
      socket_ino = st.st_ino;
    }
    if (listen(listen_fd, listen_backlog) != 0) return errno_text("listen on " + opt.path);
    return {};
  }

  std::string start() {
    if (auto err = create_socket(); !err.empty()) {
      close_all();
      return err;
    }
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_fd < 0 || wake_fd < 0 || !watch(listen_fd, EPOLLIN, EPOLL_CTL_ADD) || !watch(wake_fd, EPOLLIN, EPOLL_CTL_ADD)) {
      std::string err = errno_text("epoll");
      close_all();
      return err;
    }
    thread = std::thread([this] { run(); });
    return {};
  }

  void stop() {
    if (!thread.joinable()) return;
    const uint64_t one = 1;
    [[maybe_unused]] auto n = write(wake_fd, &one, sizeof one);
    thread.join();
    close_all();
  }

  void close_all() {
    for (auto& [fd, c] : clients) close(fd);
    clients.clear();
    for (int* fd : {&listen_fd, &epoll_fd, &wake_fd}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    struct stat st {};
    if (socket_ino != 0 && stat(opt.path.c_str(), &st) == 0 && st.st_dev == socket_dev && st.st_ino == socket_ino)
      unlink(opt.path.c_str());
    socket_ino = 0;
  }

  bool watch(int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(epoll_fd, op, fd, &ev) == 0;
  }

  void run() {
    pthread_setname_np(pthread_self(), "nvmt-control");
    std::array<epoll_event, max_events> events;
    for (;;) {
      const int n = epoll_wait(epoll_fd, events.data(), max_events, -1);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        log(errno_text("epoll_wait failed; the control socket stops serving"));
        return;
      }
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd) return;
        if (fd == listen_fd) accept_clients();
        else on_client_event(fd, events[i].events);
      }
    }
  }

  // ------------------------------------------------------------ connections

  void accept_clients() {
    for (;;) {
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        if (err == EINTR || err == ECONNABORTED) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) return;
        // EMFILE and the like: the listener stays readable, so pause instead of spinning.
        log(std::string("accept failed: ") + std::strerror(err));
        std::this_thread::sleep_for(accept_retry_pause);
        return;
      }
      Client& c = clients[fd];
      c.fd = fd;
      if (!watch(fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD)) {
        log(errno_text("epoll_ctl failed for a new connection"));
        drop(fd);
        continue;
      }
      admit(c);
    }
  }

  // Refuses peers of another uid (besides the file mode) and connections beyond max_clients.
  void admit(Client& c) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      log(errno_text("SO_PEERCRED failed; connection refused"));
      return refuse(c, rpc_code::access_denied, "access denied: cannot read the peer's credentials");
    }
    const uid_t owner = geteuid();
    if (cred.uid != owner && cred.uid != 0) {
      log("refused a connection from uid " + std::to_string(cred.uid) + " (pid " + std::to_string(cred.pid) +
          "): only uid " + std::to_string(owner) + " and root may use the control socket");
      return refuse(c, rpc_code::access_denied,
                    "access denied: uid " + std::to_string(cred.uid) + " may not use this control socket (owner: uid " +
                        std::to_string(owner) + ")");
    }
    if (clients.size() > opt.max_clients) {
      log("refused a connection from pid " + std::to_string(cred.pid) + ": " + std::to_string(opt.max_clients) +
          " clients already connected");
      return refuse(c, rpc_code::too_many_clients,
                    "too many clients (" + std::to_string(opt.max_clients) + " connected); try again later");
    }
  }

  void refuse(Client& c, int code, const std::string& message) {
    c.out = error_response(nullptr, code, message).dump() + "\n";
    c.closing = true;
    c.in.clear();
    flush(c);
  }

  void drop(int fd) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    clients.erase(fd);
  }

  void on_client_event(int fd, uint32_t events) {
    auto it = clients.find(fd);
    if (it == clients.end()) return;
    Client& c = it->second;
    if (events & EPOLLERR) return drop(fd);
    if ((events & EPOLLOUT) && !flush(c)) return;
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) && !c.closing && !c.eof && !receive(c)) return;
    serve(c);
  }

  // Reads what is there; false when the client was dropped.
  bool receive(Client& c) {
    char buf[read_chunk];
    for (;;) {
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        if (c.in.size() > opt.max_line_bytes + read_chunk) return true;  // serve() judges the length
        continue;
      }
      if (n == 0) {
        c.eof = true;
        return true;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      drop(c.fd);
      return false;
    }
  }

  // Serves the complete lines received, one at a time: the next line waits until the previous
  // response is sent (a client that does not read its responses stops being read). Closes the
  // connection when the client is done.
  void serve(Client& c) {
    for (;;) {
      if (!c.out.empty()) {
        if (!flush(c) || !c.out.empty()) return;  // dropped, or waiting for EPOLLOUT
      }
      if (c.closing) return drop(c.fd);
      auto line = next_line(c);
      if (!line) break;
      if (c.closing) continue;  // next_line refused the client: flush the error, then close
      if (auto response = rpc_handle_line(methods, *line)) c.out = *response + "\n";
    }
    if (c.eof && c.in.empty()) drop(c.fd);
  }

  // The next non-blank line of c.in, or nullopt when none is complete yet. A line longer than
  // max_line_bytes sets up an error response and closing (and returns an empty line).
  std::optional<std::string> next_line(Client& c) {
    for (;;) {
      auto newline = c.in.find('\n');
      if (newline == std::string::npos && c.eof && !c.in.empty()) newline = c.in.size();  // the last, unterminated
      if ((newline == std::string::npos ? c.in.size() : newline) > opt.max_line_bytes) {
        c.out = error_response(nullptr, rpc_code::invalid_request,
                               "invalid request: line longer than " + std::to_string(opt.max_line_bytes) + " bytes")
                    .dump() + "\n";
        c.closing = true;
        c.in.clear();
        return std::string{};
      }
      if (newline == std::string::npos) return std::nullopt;
      std::string line = c.in.substr(0, newline);
      c.in.erase(0, std::min(newline + 1, c.in.size()));
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") != std::string::npos) return line;
    }
  }

  // Sends what it can; watches EPOLLOUT while something is left. False when c was dropped.
  bool flush(Client& c) {
    while (!c.out.empty()) {
      const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return watch(c.fd, EPOLLOUT, EPOLL_CTL_MOD);
      drop(c.fd);
      return false;
    }
    if (c.closing) {
      drop(c.fd);
      return false;
    }
    watch(c.fd, c.eof ? 0 : (EPOLLIN | EPOLLRDHUP), EPOLL_CTL_MOD);
    return true;
  }
};

RpcServer::RpcServer(RpcMethodTable methods, RpcServerOptions options) : _impl(std::make_unique<Impl>()) {
  _impl->methods = std::move(methods);
  _impl->opt = std::move(options);
  if (_impl->opt.path.empty()) _impl->opt.path = default_control_socket_path();
}

RpcServer::~RpcServer() { stop(); }

std::string RpcServer::start() { return _impl->start(); }

void RpcServer::stop() { _impl->stop(); }

const std::string& RpcServer::path() const { return _impl->opt.path; }

}  // namespace control
