#pragma once
// One client connection to an engine's control socket (README.md "Control socket"): a request
// line out, a response line back. Used by `ctl`, `profile` and the GUI's remote client (client.hpp).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace control {

class RpcClient {
 public:
  RpcClient() = default;
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Empty on success; else what to tell the user (with a hint when no engine runs there).
  std::string open(const std::string& path);

  // Sends one request and reads its response line. nullopt with `error` set on failure.
  std::optional<nlohmann::json> call(const nlohmann::json& request, std::string& error);

 private:
  bool read_line(std::string& line, std::string& error);

  int _fd = -1;
  std::string _buffer;
};

}  // namespace control
