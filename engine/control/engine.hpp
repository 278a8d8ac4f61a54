#pragma once
// engine::Engine, the facade every upper room uses (app/, ui/, the control socket).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/control/config.hpp"

namespace engine {

struct ListenerInfo {
  std::string trtype;
  std::string traddr;
  uint16_t port = 0;  // the bound port (useful when the config asked for port 0)
};

struct EngineStats {
  uint64_t commands = 0;
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  uint64_t pdus_rx = 0;
  uint64_t pdus_tx = 0;
  uint64_t connects = 0;
  uint64_t disconnects = 0;
  uint64_t protocol_errors = 0;  // queues ended with a C2HTermReq
  uint32_t queues = 0;           // connected TCP queues now
  uint32_t controllers = 0;      // live controllers now
};

enum class LogLevel { info, warning, error };
using LogSink = std::function<void(LogLevel, std::string_view)>;

class Engine {
 public:
  explicit Engine(control::Config cfg);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Opens backends, binds listeners, starts the executor. Returns every error (empty = running).
  std::vector<control::ConfigError> start();
  // Closes listeners and all queues, stops threads. Idempotent.
  void stop();
  bool running() const;

  std::vector<ListenerInfo> listeners() const;
  EngineStats stats() const;
  const control::Config& config() const;

  // Live topology changes (hosts connected get an Asynchronous Event Notice).
  std::optional<control::ConfigError> add_namespace(std::string_view subnqn, const control::NamespaceConfig& ns);
  std::optional<control::ConfigError> remove_namespace(std::string_view subnqn, uint32_t nsid);

  // Connects, disconnects, refusals and protocol errors; called from engine threads.
  void set_log_sink(LogSink sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> _impl;
};

}  // namespace engine
