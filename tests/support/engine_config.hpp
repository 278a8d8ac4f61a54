#pragma once
// The smallest target an engine test can connect to: one TCP listener on 127.0.0.1, port 0
// (any free port, so tests run side by side; read it back from Engine::listeners()), and one
// subsystem that any host may connect to, with namespace 1 on the given backend. Threading,
// budgets and TCP settings keep Config's defaults for the test to change.
#include <cstdint>
#include <string>
#include <utility>

#include "engine/backend/backend.hpp"
#include "engine/config/config.hpp"

namespace test_support {

inline control::Config one_namespace_config(std::string nqn, backend::BackendSpec backend,
                                            uint32_t block_size = 512) {
  control::Config c;
  c.listeners.push_back(control::ListenerConfig{"tcp", "127.0.0.1", "0"});
  control::SubsystemConfig s;
  s.nqn = std::move(nqn);
  s.allow_any_host = true;
  control::NamespaceConfig ns;
  ns.nsid = 1;
  ns.backend = std::move(backend);
  ns.block_size = block_size;
  s.namespaces.push_back(std::move(ns));
  c.subsystems.push_back(std::move(s));
  return c;
}

}  // namespace test_support
