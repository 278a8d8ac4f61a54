// The embedded and remote engine clients (client.hpp).
#include "engine/control/client.hpp"

#include <exception>

#include "engine/rpc/json_codec.hpp"
#include "engine/rpc/rpc_client.hpp"
#include "engine/rpc/rpc_methods.hpp"

namespace control {

namespace {

using json = nlohmann::json;

// The engine in this process, through the control socket's own method table.
class EmbeddedClient final : public Client {
 public:
  EmbeddedClient(engine::Engine& engine, std::string version, RpcMethodTable extra)
      : _engine(engine), _methods(make_engine_methods(engine, ControlInfo{std::move(version), ""})) {
    _methods.merge(extra);
  }

  std::string kind() const override { return "embedded"; }
  std::string address() const override { return "in-process"; }

  RpcOutcome call(std::string_view method, const json& params) override {
    auto it = _methods.find(method);
    if (it == _methods.end())
      return RpcOutcome::fail(rpc_code::method_not_found, "no method " + json(std::string(method)).dump());
    try {
      return it->second(params);
    } catch (const std::exception& e) {
      return RpcOutcome::fail(rpc_code::internal_error, std::string(method) + ": " + e.what());
    }
  }

  // Per-interval reads without a JSON round trip (a snapshot with 64 queues' buckets is large).
  std::optional<stats::Snapshot> snapshot() override { return _engine.last_snapshot(); }
  std::optional<std::vector<stats::Event>> events(uint64_t after) override { return _engine.events(after); }
  std::optional<std::vector<engine::ThreadInfo>> threads() override { return _engine.threads(); }

 private:
  engine::Engine& _engine;
  RpcMethodTable _methods;
};

// `nvmetune serve` over its control socket: one request line, one response line.
class RemoteClient final : public Client {
 public:
  explicit RemoteClient(std::string path) : _path(std::move(path)) {}
  std::string open() { return _rpc.open(_path); }

  std::string kind() const override { return "remote"; }
  std::string address() const override { return _path; }
  bool connected() const override { return _connected; }

  RpcOutcome call(std::string_view method, const json& params) override {
    if (!_connected) return RpcOutcome::fail(client_transport_error, "not connected to " + _path);
    json request = {{"jsonrpc", "2.0"}, {"id", ++_id}, {"method", std::string(method)}};
    if (!params.is_null()) request["params"] = params;
    std::string error;
    auto response = _rpc.call(request, error);
    if (!response) {
      _connected = false;
      return RpcOutcome::fail(client_transport_error, error);
    }
    if (auto e = response->find("error"); e != response->end() && e->is_object())
      return RpcOutcome::fail(e->value("code", rpc_code::internal_error), e->value("message", std::string()),
                              e->contains("data") ? (*e)["data"] : json(nullptr));
    return RpcOutcome::ok(response->value("result", json(nullptr)));
  }

 private:
  std::string _path;
  RpcClient _rpc;
  bool _connected = true;
  uint64_t _id = 0;
};

}  // namespace

std::optional<json> Client::fetch(std::string_view method, const json& params) {
  auto outcome = call(method, params);
  if (outcome.error) return _last_error = std::string(method) + ": " + describe(*outcome.error), std::nullopt;
  return std::move(outcome.result);
}

std::optional<stats::Snapshot> Client::snapshot() {
  auto j = fetch("stats.get", {{"histograms", true}});
  if (!j) return std::nullopt;
  return snapshot_from_json(*j);
}

std::optional<std::vector<stats::Event>> Client::events(uint64_t after) {
  auto j = fetch("events.get", {{"after", after}});
  if (!j) return std::nullopt;
  std::vector<stats::Event> out;
  for (const auto& e : j->value("events", json::array())) out.push_back(event_from_json(e));
  return out;
}

std::optional<std::vector<engine::ThreadInfo>> Client::threads() {
  auto j = fetch("threads.get");
  if (!j) return std::nullopt;
  std::vector<engine::ThreadInfo> out;
  for (const auto& t : j->value("threads", json::array())) out.push_back(thread_from_json(t));
  return out;
}

std::optional<sys::Topology> Client::topology() {
  auto j = fetch("topology.get");
  if (!j) return std::nullopt;
  return topology_from_json(*j);
}

std::optional<json> Client::info() { return fetch("engine.info"); }

std::unique_ptr<Client> make_embedded_client(engine::Engine& engine, std::string version, RpcMethodTable extra) {
  return std::make_unique<EmbeddedClient>(engine, std::move(version), std::move(extra));
}

std::unique_ptr<Client> connect_remote_client(const std::string& path, std::string& error) {
  auto client = std::make_unique<RemoteClient>(path);
  error = client->open();
  if (!error.empty()) return nullptr;
  return client;
}

std::string describe(const RpcError& error) {
  std::string text = error.message;
  if (!error.data.is_array()) return text;
  for (const auto& e : error.data)
    if (e.is_object()) text += "\n  " + e.value("path", std::string()) + ": " + e.value("message", std::string());
  return text;
}

}  // namespace control
