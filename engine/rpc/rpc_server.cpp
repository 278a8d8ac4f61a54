// The control socket's JSON-RPC 2.0 server (rpc_server.hpp): dispatch, then the socket and its
// threads: an acceptor, and one per connection (each polls its socket and a stop eventfd).
#include "engine/rpc/rpc_server.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <system_error>
#include <thread>

#include "engine/system/private_dir.hpp"

namespace control {

namespace {

using json = nlohmann::json;

constexpr int listen_backlog = 16;
constexpr size_t read_chunk = 64 * 1024;
constexpr auto accept_retry_pause = std::chrono::milliseconds(100);
constexpr const char* root_socket_dir = "/run/nvmetune";
constexpr const char* socket_name = "nvmetune.sock";

// ---------------------------------------------------------------- dispatch

// The text of a JSON value on the wire. A string that is not UTF-8 (a method quoting bytes it
// was sent) is replaced rather than thrown about: the response must go out, and be JSON.
std::string wire(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json error_response(const json& id, int code, std::string message, json data = nullptr) {
  json error = {{"code", code}, {"message", std::move(message)}};
  if (!data.is_null()) error["data"] = std::move(data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

bool valid_id(const json& id) { return id.is_string() || id.is_number() || id.is_null(); }

// The id a response to req carries: its own when valid, else null.
json response_id(const json& req) {
  if (!req.is_object()) return nullptr;
  auto id = req.find("id");
  return id != req.end() && valid_id(*id) ? *id : json(nullptr);
}

bool is_notification(const json& req) { return req.is_object() && !req.contains("id"); }

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

// One line's dispatch: the table, the limits, and (in the server) the lock that methods not
// named concurrent hold while they run.
struct Dispatch {
  const RpcMethodTable& methods;
  const RpcLimits& limits;
  std::mutex* exclusive = nullptr;
  const RpcNames* concurrent = nullptr;
};

RpcOutcome call(const Dispatch& d, const RpcMethod& fn, const std::string& name, const json& params) {
  std::unique_lock<std::mutex> one_at_a_time;
  if (d.exclusive && !(d.concurrent && d.concurrent->contains(name))) one_at_a_time = std::unique_lock(*d.exclusive);
  try {
    return fn(params);
  } catch (const std::exception& e) {
    return RpcOutcome::fail(rpc_code::internal_error, "internal error in " + name + ": " + e.what());
  } catch (...) {
    return RpcOutcome::fail(rpc_code::internal_error, "internal error in " + name + ": an unknown exception");
  }
}

// One request object; nullopt for a notification.
std::optional<json> handle_request(const Dispatch& d, const json& req) {
  if (!req.is_object())
    return error_response(nullptr, rpc_code::invalid_request,
                          std::string("invalid request: expected a request object, got ") + req.type_name());
  const json id = response_id(req);
  if (auto problem = request_problem(req)) return error_response(id, rpc_code::invalid_request, "invalid request: " + *problem);
  const bool notification = is_notification(req);
  const std::string name = req["method"].get<std::string>();
  auto method = d.methods.find(name);
  if (method == d.methods.end()) {
    if (notification) return std::nullopt;
    return error_response(id, rpc_code::method_not_found, "method not found: " + wire(json(name)),
                          {{"method", name}, {"available", method_names(d.methods)}});
  }
  auto params_it = req.find("params");
  RpcOutcome outcome = call(d, method->second, name, params_it == req.end() ? json(nullptr) : *params_it);
  if (notification) return std::nullopt;
  if (outcome.error) return error_response(id, outcome.error->code, std::move(outcome.error->message), std::move(outcome.error->data));
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(outcome.result)}};
}

std::string parse_error_detail(const json::parse_error& e) {
  std::string detail = e.what();
  if (auto colon = detail.find(": "); colon != std::string::npos) detail.erase(0, colon + 2);
  return detail;
}

// Whether text nests arrays and objects deeper than max_depth (brackets in strings aside).
// Judged before parsing: json parses and destroys a value without recursing, but copies,
// compares and dumps it once per level (params are copied for the method, echoed, quoted in
// errors), and 200,000 levels fit in a 1 MiB line.
bool nested_deeper_than(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

json too_large(const json& id, size_t bytes, size_t limit) {
  return error_response(id, rpc_code::response_too_large,
                        "response of " + std::to_string(bytes) + " bytes is larger than the limit of " +
                            std::to_string(limit) + " bytes; ask for less (e.g. events.get with a smaller max)");
}

std::string capped(const Dispatch& d, const json& response, const json& req) {
  std::string text = wire(response);
  if (text.size() > d.limits.max_response_bytes) return wire(too_large(response_id(req), text.size(), d.limits.max_response_bytes));
  return text;
}

// The responses of a batch, in order, up to max_response_bytes in all: the request that would
// pass it is answered response_too_large, and those after it are not run (each answered so).
std::optional<std::string> batch_response(const Dispatch& d, const json& batch) {
  if (batch.size() > d.limits.max_batch)
    return wire(error_response(nullptr, rpc_code::invalid_request,
                               "invalid request: a batch of " + std::to_string(batch.size()) + " requests (at most " +
                                   std::to_string(d.limits.max_batch) + "); nothing was run"));
  std::string out = "[";
  bool full = false;
  for (const auto& req : batch) {
    std::string text;
    if (full) {
      if (is_notification(req)) continue;
      text = wire(error_response(response_id(req), rpc_code::response_too_large,
                                 "not run: the batch's responses reached the limit of " +
                                     std::to_string(d.limits.max_response_bytes) + " bytes; send it again apart"));
    } else {
      auto response = handle_request(d, req);
      if (!response) continue;
      text = wire(*response);
      if (out.size() + text.size() + 1 > d.limits.max_response_bytes) {
        text = wire(too_large(response_id(req), text.size(), d.limits.max_response_bytes));
        full = true;
      }
    }
    if (out.size() > 1) out += ',';
    out += text;
  }
  if (out.size() == 1) return std::nullopt;
  return out + "]";
}

std::optional<std::string> handle_line(const Dispatch& d, std::string_view line) {
  if (nested_deeper_than(line, d.limits.max_depth))
    return wire(error_response(nullptr, rpc_code::parse_error,
                               "parse error: nested deeper than " + std::to_string(d.limits.max_depth) + " levels"));
  json doc;
  try {
    doc = json::parse(line);
  } catch (const json::parse_error& e) {
    return wire(error_response(nullptr, rpc_code::parse_error, "parse error: " + parse_error_detail(e)));
  }
  if (!doc.is_array()) {
    auto response = handle_request(d, doc);
    if (!response) return std::nullopt;
    return capped(d, *response, doc);
  }
  if (doc.empty()) return wire(error_response(nullptr, rpc_code::invalid_request, "invalid request: empty batch"));
  return batch_response(d, doc);
}

// No exception leaves a line: whatever a method or the encoding throws (bad_alloc building a
// huge response) becomes an error response, and the connection is served on.
std::optional<std::string> handle_line_guarded(const Dispatch& d, std::string_view line) {
  try {
    return handle_line(d, line);
  } catch (const std::exception& e) {
    return wire(error_response(nullptr, rpc_code::internal_error, std::string("internal error: ") + e.what()));
  } catch (...) {
    return wire(error_response(nullptr, rpc_code::internal_error, "internal error: an unknown exception"));
  }
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

enum class LineState { complete, incomplete, too_long };

// The next non-blank line of `in` into `line`. At end of stream the last, unterminated line
// counts as complete. A line longer than max_bytes (or max_bytes without a newline) is too_long.
LineState next_line(std::string& in, bool eof, size_t max_bytes, std::string& line) {
  for (;;) {
    auto newline = in.find('\n');
    if (newline == std::string::npos && eof && !in.empty()) newline = in.size();
    if ((newline == std::string::npos ? in.size() : newline) > max_bytes) return LineState::too_long;
    if (newline == std::string::npos) return LineState::incomplete;
    line = in.substr(0, newline);
    in.erase(0, std::min(newline + 1, in.size()));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) return LineState::complete;
  }
}

// Waits until fd is ready for `events` or the server stops (false).
bool wait_for(int fd, short events, int wake_fd) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    const int n = poll(p, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || p[1].revents) return false;
    if (p[0].revents) return true;
  }
}

// Sends all of text; false when the peer is gone or the server stops.
bool send_all(int fd, std::string_view text, int wake_fd) {
  while (!text.empty()) {
    const ssize_t n = send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      text.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(fd, POLLOUT, wake_fd)) continue;
    return false;
  }
  return true;
}

// Appends what one read brings; false when the peer is gone or the server stops.
bool receive(int fd, std::string& in, bool& eof, int wake_fd) {
  char buf[read_chunk];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) return in.append(buf, static_cast<size_t>(n)), true;
    if (n == 0) return eof = true, true;
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(fd, POLLIN, wake_fd)) continue;
    return false;
  }
}

struct Connection {
  int fd = -1;
  std::thread thread;
  std::atomic<bool> done{false};  // the thread has closed fd and is about to return
};

}  // namespace

std::optional<std::string> rpc_handle_line(const RpcMethodTable& methods, std::string_view line, const RpcLimits& limits) {
  return handle_line_guarded(Dispatch{methods, limits}, line);
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
  int wake_fd = -1;      // written once by stop(), never read: every poll sees it from then on
  dev_t socket_dev = 0;  // the file we bound, so stop() never removes someone else's
  ino_t socket_ino = 0;
  std::thread acceptor;
  std::list<Connection> connections;  // the acceptor's, and stop()'s once the acceptor is joined
  std::mutex exclusive;               // held by methods not named in opt.concurrent

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
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0) {
      std::string err = errno_text("eventfd");
      close_all();
      return err;
    }
    acceptor = std::thread([this] { run(); });
    return {};
  }

  void stop() {
    if (!acceptor.joinable()) return;
    const uint64_t one = 1;
    [[maybe_unused]] auto n = write(wake_fd, &one, sizeof one);
    acceptor.join();
    for (auto& c : connections) c.thread.join();
    connections.clear();
    close_all();
  }

  void close_all() {
    for (int* fd : {&listen_fd, &wake_fd}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    struct stat st {};
    if (socket_ino != 0 && stat(opt.path.c_str(), &st) == 0 && st.st_dev == socket_dev && st.st_ino == socket_ino)
      unlink(opt.path.c_str());
    socket_ino = 0;
  }

  void run() {
    pthread_setname_np(pthread_self(), "nvmt-control");
    while (wait_for(listen_fd, POLLIN, wake_fd)) accept_clients();
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
      reap();
      if (admit(fd)) spawn(fd);
    }
  }

  // Joins the threads of connections that ended, so the count below is of live ones.
  void reap() {
    connections.remove_if([](Connection& c) {
      if (!c.done.load()) return false;
      c.thread.join();
      return true;
    });
  }

  void spawn(int fd) {
    Connection& c = connections.emplace_back();
    c.fd = fd;
    try {
      c.thread = std::thread([this, &c] { serve(c); });
    } catch (const std::system_error& e) {  // no thread to be had: this client is refused, others go on
      log(std::string("cannot start a connection's thread: ") + e.what());
      connections.pop_back();
      refuse(fd, rpc_code::internal_error, "the server cannot serve another connection now; try again later");
    }
  }

  // Refuses peers of another uid (besides the file mode) and connections beyond max_clients.
  bool admit(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      log(errno_text("SO_PEERCRED failed; connection refused"));
      return refuse(fd, rpc_code::access_denied, "access denied: cannot read the peer's credentials");
    }
    const uid_t owner = geteuid();
    if (cred.uid != owner && cred.uid != 0) {
      log("refused a connection from uid " + std::to_string(cred.uid) + " (pid " + std::to_string(cred.pid) +
          "): only uid " + std::to_string(owner) + " and root may use the control socket");
      return refuse(fd, rpc_code::access_denied,
                    "access denied: uid " + std::to_string(cred.uid) + " may not use this control socket (owner: uid " +
                        std::to_string(owner) + ")");
    }
    if (connections.size() >= opt.max_clients) {
      log("refused a connection from pid " + std::to_string(cred.pid) + ": " + std::to_string(opt.max_clients) +
          " clients already connected");
      return refuse(fd, rpc_code::too_many_clients,
                    "too many clients (" + std::to_string(opt.max_clients) + " connected); try again later");
    }
    return true;
  }

  // One error line and the end of the connection. The line is short and the socket new: it
  // fits the send buffer, so the acceptor never waits on a peer here.
  bool refuse(int fd, int code, const std::string& message) {
    const std::string line = wire(error_response(nullptr, code, message)) + "\n";
    [[maybe_unused]] auto n = send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
    return false;
  }

  // A connection's thread: its lines one at a time, each response sent before the next line is
  // read (a client that does not read its responses stops being read). Ends at end of stream,
  // on an oversized line, on a socket error, or when the server stops.
  void serve(Connection& c) {
    const Dispatch dispatch{methods, opt.limits, &exclusive, &opt.concurrent};
    std::string in, line;
    bool eof = false;
    for (;;) {
      const LineState state = next_line(in, eof, opt.max_line_bytes, line);
      if (state == LineState::too_long) {
        const json error = error_response(nullptr, rpc_code::invalid_request,
                                          "invalid request: line longer than " + std::to_string(opt.max_line_bytes) + " bytes");
        send_all(c.fd, wire(error) + "\n", wake_fd);
        break;
      }
      if (state == LineState::incomplete) {
        if (eof || !receive(c.fd, in, eof, wake_fd)) break;
        continue;
      }
      auto response = handle_line_guarded(dispatch, line);
      if (response && !send_all(c.fd, *response + "\n", wake_fd)) break;
    }
    close(c.fd);
    c.done.store(true);
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
