// The control socket's client connection (rpc_client.hpp).
#include "engine/rpc/rpc_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace control {

namespace {

using json = nlohmann::json;

constexpr int response_timeout_ms = 60'000;  // a mode switch quiesces every queue: allow time
constexpr const char* root_socket = "/run/nvmetune/nvmetune.sock";

std::string connect_problem(const std::string& path, int err) {
  std::string text = "cannot connect to the control socket " + path + ": " + std::strerror(err);
  if (err == ENOENT || err == ECONNREFUSED) {
    text += "\n  Is the engine running? Start it with `nvmetune serve`";
    text += " (or pass --socket PATH to reach an engine started with --control-socket PATH).";
    struct stat st {};
    if (geteuid() != 0 && path != root_socket && stat(root_socket, &st) == 0)
      text += std::string("\n  An engine run by root listens on ") + root_socket + ": use sudo, or --socket " + root_socket + ".";
  } else if (err == EACCES || err == EPERM) {
    text += "\n  The socket belongs to another user (mode 0600): run the command as the user who runs the engine.";
  }
  return text;
}

std::string shown(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 200 ? text.substr(0, 200) + "..." : text;
}

std::optional<std::string> one_response_problem(const json& request, const json& r) {
  if (!r.is_object()) return std::string("expected a response object, got ") + r.type_name() + ": " + shown(r);
  if (r.value("jsonrpc", json()) != "2.0") return "not a JSON-RPC 2.0 response: " + shown(r);
  auto id = r.find("id");
  if (id == r.end()) return "a response without an id: " + shown(r);
  const auto result = r.find("result");
  const auto error = r.find("error");
  if ((result == r.end()) == (error == r.end())) return "a response needs exactly one of result and error: " + shown(r);
  if (error != r.end()) {
    if (!error->is_object()) return "\"error\" is not an object: " + shown(r);
    if (!error->contains("code") || !(*error)["code"].is_number_integer()) return "\"error.code\" is not an integer: " + shown(r);
    if (!error->contains("message") || !(*error)["message"].is_string()) return "\"error.message\" is not a string: " + shown(r);
  }
  const bool unread = id->is_null() && error != r.end();  // the server could not read our id
  if (!unread && *id != request.value("id", json())) {
    return "the response's id " + shown(*id) + " does not answer the request's " + shown(request.value("id", json()));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> response_problem(const json& request, const json& response) {
  if (!request.is_array()) return one_response_problem(request, response);
  if (response.is_object()) return one_response_problem(json::object(), response);  // one error for the batch
  if (!response.is_array()) return std::string("expected an array of responses, got ") + response.type_name();
  for (const auto& r : response) {
    const json* asked = nullptr;
    for (const auto& req : request)
      if (req.is_object() && r.is_object() && req.value("id", json()) == r.value("id", json())) asked = &req;
    if (auto problem = one_response_problem(asked ? *asked : json::object(), r)) return problem;
  }
  return std::nullopt;
}

RpcClient::~RpcClient() {
  if (_fd >= 0) close(_fd);
}

std::string RpcClient::open(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return "socket path too long: " + path;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  _fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (_fd < 0) return std::string("socket: ") + std::strerror(errno);
  if (connect(_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return {};
  return connect_problem(path, errno);
}

std::optional<json> RpcClient::call(const json& request, std::string& error) {
  const std::string line = request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  for (size_t sent = 0; sent < line.size();) {
    const ssize_t n = send(_fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return error = std::string("cannot send the request: ") + std::strerror(errno), std::nullopt;
    sent += static_cast<size_t>(n);
  }
  std::string response;
  if (!read_line(response, error)) return std::nullopt;
  json doc = json::parse(response, nullptr, false);
  if (doc.is_discarded()) return error = "the server sent a line that is not JSON: " + response.substr(0, 200), std::nullopt;
  if (auto problem = response_problem(request, doc)) return error = "the server sent " + *problem, std::nullopt;
  return doc;
}

bool RpcClient::read_line(std::string& line, std::string& error) {
  size_t scanned = 0;  // a long response arrives in many reads: look for the newline in new bytes only
  for (;;) {
    if (auto nl = _buffer.find('\n', scanned); nl != std::string::npos) {
      line = _buffer.substr(0, nl);
      _buffer.erase(0, nl + 1);
      return true;
    }
    pollfd p{_fd, POLLIN, 0};
    const int ready = poll(&p, 1, response_timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return error = "no response within " + std::to_string(response_timeout_ms / 1000) + " s", false;
    char buf[64 * 1024];
    const ssize_t n = ready < 0 ? -1 : recv(_fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return error = std::string("cannot read the response: ") + std::strerror(errno), false;
    if (n == 0) return error = "the server closed the connection without a response", false;
    scanned = _buffer.size();
    _buffer.append(buf, static_cast<size_t>(n));
    if (_buffer.find('\n', scanned) == std::string::npos && _buffer.size() > _max_line_bytes)
      return error = "the server sent a line longer than " + std::to_string(_max_line_bytes) + " bytes", false;
  }
}

}  // namespace control
