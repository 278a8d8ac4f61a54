// The embedded default configuration (config.hpp). Parsing lives in config_parse.cpp.
#include "engine/config/config.hpp"

namespace control {

Config default_config() {
  Config c;
  c.listeners.push_back(ListenerConfig{"tcp", "127.0.0.1", "4420"});
  SubsystemConfig s;
  s.nqn = default_nqn;
  s.allow_any_host = true;
  NamespaceConfig ns;
  ns.nsid = 1;
  ns.backend.kind = "ram";
  ns.backend.size_bytes = uint64_t{1} << 30;
  ns.block_size = 512;
  s.namespaces.push_back(std::move(ns));
  c.subsystems.push_back(std::move(s));
  return c;
}

}  // namespace control
