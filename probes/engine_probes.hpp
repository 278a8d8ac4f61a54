#pragma once
// The eBPF probes beside one engine, installed alike by `nvmetune serve` and the GUI's embedded
// engine: a ProbeSet measuring this process, its snapshot provider on the engine (each probe's
// interval joins the engine's snapshot: one time axis, one store, one plot), and the
// probes.list/start/stop control methods (probe_rpc.hpp). Removing it stops every probe.
#include <cstdint>
#include <memory>

#include "engine/control/engine.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "probes/probe_set.hpp"

namespace probes {

class EngineProbes {
 public:
  // engine must outlive the result (and every method table it was added to).
  static std::shared_ptr<EngineProbes> install(engine::Engine& engine);
  ~EngineProbes();  // the provider removed first, so no sample reads a stopping probe
  EngineProbes(const EngineProbes&) = delete;
  EngineProbes& operator=(const EngineProbes&) = delete;

  ProbeSet& set() { return _set; }

  // Adds the probes.* methods to table; each keeps self alive as long as the table holds it
  // (a GUI's client is dropped on its own thread, after the window is gone).
  static void add_methods(control::RpcMethodTable& table, const std::shared_ptr<EngineProbes>& self);

 private:
  explicit EngineProbes(engine::Engine& engine);

  engine::Engine& _engine;
  ProbeSet _set;
  uint64_t _provider = 0;
};

}  // namespace probes
