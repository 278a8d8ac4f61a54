// Probes installed beside an engine (engine_probes.hpp).
#include "probes/engine_probes.hpp"

#include <unistd.h>

#include "probes/probe_rpc.hpp"

namespace probes {

EngineProbes::EngineProbes(engine::Engine& engine) : _engine(engine), _set(static_cast<int>(getpid())) {
  _provider = _engine.add_snapshot_provider([this](stats::Snapshot& s) { _set.collect_into(s); });
}

EngineProbes::~EngineProbes() {
  _engine.remove_snapshot_provider(_provider);
  _set.stop_all();
}

std::shared_ptr<EngineProbes> EngineProbes::install(engine::Engine& engine) {
  return std::shared_ptr<EngineProbes>(new EngineProbes(engine));
}

void EngineProbes::add_methods(control::RpcMethodTable& table, const std::shared_ptr<EngineProbes>& self) {
  control::RpcMethodTable methods;
  add_probe_methods(methods, self->_set, self->_engine);
  for (auto& [name, method] : methods)
    table[name] = [self, method = std::move(method)](const nlohmann::json& params) { return method(params); };
}

}  // namespace probes
