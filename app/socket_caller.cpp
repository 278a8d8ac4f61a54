#include "app/socket_caller.hpp"

namespace app {

using json = nlohmann::json;

data::RpcResult SocketCaller::operator()(const std::string& method, const json& params) {
  json req = {{"jsonrpc", "2.0"}, {"id", ++_id}, {"method", method}};
  if (!params.is_null()) req["params"] = params;
  std::string error;
  auto resp = _client.call(req, error);
  if (!resp) return {false, nullptr, error, {}, true};
  if (auto e = resp->find("error"); e != resp->end()) {
    data::RpcResult r{false, nullptr, e->value("message", std::string("error")), {}, false};
    if (auto d = e->find("data"); d != e->end() && d->is_array())
      for (const auto& x : *d)
        if (x.is_object()) r.errors.push_back({x.value("path", ""), x.value("message", "")});
    return r;
  }
  return {true, resp->value("result", json()), {}, {}, false};
}

}  // namespace app
