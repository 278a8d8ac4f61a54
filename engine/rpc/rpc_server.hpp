#pragma once
// A JSON-RPC 2.0 server on a Unix stream socket: the engine's control socket (DESIGN.md
// "Interfaces"). It knows no engine: it serves a table of methods (rpc_methods.hpp builds the
// engine's), so tests can serve their own.
//
// Framing: newline-delimited JSON. Each request is one JSON text on one line (a single request
// object, or a batch array); each response is one line. Responses to one connection come in
// request order; notifications (requests without "id") get none, and a batch of notifications
// gets no line at all. A last line without "\n" is served when the client shuts down writing.
//
// Threading: one thread accepts; each connection has a thread of its own (at most max_clients),
// so a slow method (a live switch waits for every queue) or a client that does not read its
// responses holds up only its own connection. Methods not named in `concurrent` still run one
// at a time across connections (a get-merge-set of threading.set cannot interleave with
// another client's); those named there (reads of thread-safe state) run beside them. Nothing
// runs on the engine's data path.
//
// Limits (RpcLimits): nesting depth, requests per batch and bytes per response line, so one
// line of at most max_line_bytes cannot exhaust the stack or the memory.
//
// Access: the socket file is created with mode `mode` (0600: only the owner may connect), and
// each connection's peer credentials (SO_PEERCRED) are checked as well: a process of another
// uid (root excepted) gets one error response (code access_denied) and is disconnected, and a
// log line names its uid and pid.
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace control {

// JSON-RPC 2.0 error codes, plus ours in the implementation-defined server range.
namespace rpc_code {
inline constexpr int parse_error = -32700;       // the line is not JSON
inline constexpr int invalid_request = -32600;   // JSON, but not a request object
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;    // data: [{path, message}, ...], every bad field
inline constexpr int internal_error = -32603;
inline constexpr int engine_refused = -32000;    // valid request the engine could not apply
inline constexpr int access_denied = -32001;     // peer uid not allowed (SO_PEERCRED)
inline constexpr int too_many_clients = -32002;
inline constexpr int response_too_large = -32003;  // over RpcLimits::max_response_bytes: ask for less
}  // namespace rpc_code

struct RpcError {
  int code = rpc_code::internal_error;
  std::string message;
  nlohmann::json data;  // null: the response has no "data" member
};

// What a method returns: its result, or an error.
struct RpcOutcome {
  nlohmann::json result;
  std::optional<RpcError> error;

  static RpcOutcome ok(nlohmann::json result) { return {std::move(result), std::nullopt}; }
  static RpcOutcome fail(int code, std::string message, nlohmann::json data = nullptr) {
    return {nullptr, RpcError{code, std::move(message), std::move(data)}};
  }
};

// params as the request sent them: an object, an array, or null when absent. A method that
// throws (anything) gets an internal_error response naming the method.
using RpcMethod = std::function<RpcOutcome(const nlohmann::json& params)>;
using RpcMethodTable = std::map<std::string, RpcMethod, std::less<>>;

using RpcNames = std::set<std::string, std::less<>>;

struct RpcLimits {
  size_t max_depth = 64;                          // deeper JSON is a parse_error, found before parsing
  size_t max_batch = 128;                         // a longer batch is an invalid_request, nothing run
  // Per response line (a batch's responses together); past it, each request of the batch is
  // answered by a short error instead (max_batch bounds how many).
  size_t max_response_bytes = size_t{64} << 20;
};

// Serves one line (one request or one batch): the response line without its "\n", or nullopt
// when nothing is to be sent. Never throws, and the line is valid JSON (text that is not UTF-8
// is replaced). Public so the dispatch can be tested without a socket.
std::optional<std::string> rpc_handle_line(const RpcMethodTable& methods, std::string_view line,
                                           const RpcLimits& limits = {});

struct RpcServerOptions {
  std::string path;                          // the socket file; empty = default_control_socket_path()
  mode_t mode = 0600;                        // its permission bits
  size_t max_clients = 32;                   // connections beyond are refused (too_many_clients)
  size_t max_line_bytes = size_t{1} << 20;   // longer requests get invalid_request and a disconnect
  RpcLimits limits;
  RpcNames concurrent;                       // methods that may run beside any other
  std::function<void(std::string_view)> log; // one line per refusal or failure; may be empty
};

class RpcServer {
 public:
  RpcServer(RpcMethodTable methods, RpcServerOptions options);
  ~RpcServer();  // stop()
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Creates the socket (replacing a stale one no server answers on, creating a missing parent
  // directory with mode 0700) and starts serving. Returns what went wrong, empty on success.
  std::string start();
  // Stops accepting, disconnects every client (a method running finishes first), stops the
  // threads and removes the socket file. Idempotent.
  void stop();
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> _impl;
};

// Root: /run/nvmetune/nvmetune.sock. Others: $XDG_RUNTIME_DIR/nvmetune.sock, or
// /tmp/nvmetune-UID/nvmetune.sock without XDG_RUNTIME_DIR. `serve` and `ctl` agree on it.
std::string default_control_socket_path();

}  // namespace control
