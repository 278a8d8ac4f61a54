#pragma once
// data::RpcCaller over a control socket (control::RpcClient): how `profile` and `experiment` reach a
// running engine through the same methods the in-process data::engine_caller serves.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/rpc/rpc_client.hpp"
#include "data/profile/profile_apply.hpp"

namespace app {

class SocketCaller {
 public:
  // Empty on success; else what to tell the user (with a hint when no engine runs there).
  std::string open(const std::string& path) { return _client.open(path); }

  data::RpcResult operator()(const std::string& method, const nlohmann::json& params);

 private:
  control::RpcClient _client;
  int _id = 0;
};

}  // namespace app
