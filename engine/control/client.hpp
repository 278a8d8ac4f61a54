#pragma once
// control::Client: the one seam a front end (the GUI, part of `ctl`) reaches an engine through,
// with two implementations:
//   embedded  an engine::Engine in this process (make_embedded_client)
//   remote    `nvmetune serve` over its control socket (connect_remote_client); an SSH-forwarded
//             socket works the same
// Both serve exactly the control socket's methods (rpc_methods.hpp, README "Control socket"):
// the embedded client calls the same method table in-process, so a refused change carries the
// same message and JSON path either way. Typed reads decode the same JSON; the embedded client
// skips the JSON for the per-interval hot paths.
//
// Threading: a client is used from one thread at a time (the GUI's worker thread); calls block
// (a remote mode switch can take seconds), so never call them on a UI thread.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/control/engine.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "engine/stats/snapshot.hpp"
#include "engine/system/topology.hpp"

namespace control {

// The connection itself failed (not a method's error): the socket closed, a timeout, no JSON.
inline constexpr int client_transport_error = -32099;

class Client {
 public:
  virtual ~Client() = default;

  virtual std::string kind() const = 0;     // "embedded" | "remote"
  virtual std::string address() const = 0;  // "in-process" | the socket path
  // False once a remote connection broke (every call then fails with client_transport_error).
  virtual bool connected() const { return true; }

  // One control method by name with the control socket's semantics: params validated with
  // the configuration's rules, every bad field reported as data [{path, message}, ...].
  virtual RpcOutcome call(std::string_view method, const nlohmann::json& params) = 0;

  // Typed reads. nullopt on failure, with last_error() saying why.
  // The last closed interval with its histograms' buckets.
  virtual std::optional<stats::Snapshot> snapshot();
  // Events after seq `after`, oldest first.
  virtual std::optional<std::vector<stats::Event>> events(uint64_t after);
  virtual std::optional<std::vector<engine::ThreadInfo>> threads();
  std::optional<sys::Topology> topology();
  std::optional<nlohmann::json> info();  // engine.info's result

  const std::string& last_error() const { return _last_error; }

 protected:
  // call() whose error becomes last_error().
  std::optional<nlohmann::json> fetch(std::string_view method, const nlohmann::json& params = nullptr);
  std::string _last_error;
};

// engine must outlive the client. version: what engine.info reports. extra: methods served
// beside the engine's own, as `nvmetune serve` adds them (probes.*, profiles.save, store.*).
std::unique_ptr<Client> make_embedded_client(engine::Engine& engine, std::string version, RpcMethodTable extra = {});

// nullptr with error set (with the hint `ctl` gives) when nothing answers at path.
std::unique_ptr<Client> connect_remote_client(const std::string& path, std::string& error);

// "message" plus each {path, message} of an RpcError's data on its own line.
std::string describe(const RpcError& error);

}  // namespace control
