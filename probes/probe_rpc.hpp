#pragma once
// The control socket's probe methods, added to the engine's table by whoever owns both (serve):
//   probes.list                          [{name, summary, available, reason, running, filter}]
//   probes.start {name, filter?}         starts (or restarts with another filter) one probe
//   probes.stop  {name}                  stops it (stopping one that is not running is fine)
// A start or stop is recorded as an engine event ("probe_start"/"probe_stop") so plots show it.
#include "engine/control/engine.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "probes/probe_set.hpp"

namespace probes {

// probes and engine must outlive the table. Also tells probes where the engine's namespaces
// live (biolat watches those disks).
void add_probe_methods(control::RpcMethodTable& table, ProbeSet& probes, engine::Engine& engine);

}  // namespace probes
