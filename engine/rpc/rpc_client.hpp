#pragma once
// One client connection to an engine's control socket (README.md "Control socket"): a request
// line out, a response line back. Used by `ctl`, `profile` and the GUI's remote client (client.hpp).
//
// What comes back is checked before anyone reads it: a line of at most max_line_bytes, a
// JSON-RPC 2.0 response object (or, for a batch, an array of them) whose id answers the
// request's, with a result or an error whose code is an integer and message a string. Anything
// else is an error of the call (nullopt), as a broken connection is: a peer that is not an
// engine (or a broken one) cannot make its callers read types it never promised.
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace control {

class RpcClient {
 public:
  static constexpr size_t default_max_line_bytes = size_t{64} << 20;  // above the server's response limit

  explicit RpcClient(size_t max_line_bytes = default_max_line_bytes) : _max_line_bytes(max_line_bytes) {}
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Empty on success; else what to tell the user (with a hint when no engine runs there).
  std::string open(const std::string& path);

  // Sends one request (or batch) and reads its response line. nullopt with `error` set on
  // failure: the connection, or a response that is not one to this request.
  std::optional<nlohmann::json> call(const nlohmann::json& request, std::string& error);

 private:
  bool read_line(std::string& line, std::string& error);

  int _fd = -1;
  size_t _max_line_bytes;
  std::string _buffer;
};

// Why `response` is not a JSON-RPC 2.0 response to `request`, or nullopt. A response with a
// null id and an error answers any request: the server could not read the request's id.
std::optional<std::string> response_problem(const nlohmann::json& request, const nlohmann::json& response);

}  // namespace control
