#pragma once
// An NVM subsystem: NQN, allowed hosts, namespaces, live controllers.
// The namespace table is read on every I/O without locks (namespace_table.hpp); a removed
// namespace is freed once no command holds it.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/namespace_table.hpp"

namespace core {

class Controller;

class Subsystem {
 public:
  Subsystem(std::string nqn, std::string serial, std::string model, bool allow_any_host,
            std::vector<std::string> hosts, bool discovery);

  const std::string& nqn() const { return _nqn; }
  const std::string& serial() const { return _serial; }
  const std::string& model() const { return _model; }
  bool is_discovery() const { return _discovery; }
  bool host_allowed(const std::string& hostnqn) const;

  // Commands read namespaces through holds (NamespaceTable::acquire, NsRef).
  NamespaceTable& namespaces() const { return _namespaces; }
  uint32_t nn() const { return max_nsid; }
  // Active NSIDs in ascending order (control path).
  std::vector<uint32_t> active_nsids() const { return _namespaces.active_nsids(); }
  bool add_namespace(std::unique_ptr<Namespace> ns);  // false if the NSID is taken
  bool remove_namespace(uint32_t nsid);

  // Controllers (control path: connect, disconnect, events).
  uint16_t register_controller(std::shared_ptr<Controller> c);  // returns CNTLID, 0 = none free
  void unregister_controller(uint16_t cntlid);
  std::shared_ptr<Controller> find_controller(uint16_t cntlid) const;
  std::vector<std::shared_ptr<Controller>> controllers() const;

 private:
  void notify_ns_changed(uint32_t nsid);

  std::string _nqn, _serial, _model;
  bool _allow_any_host;
  std::vector<std::string> _hosts;
  bool _discovery;
  mutable NamespaceTable _namespaces;  // holds are taken through const handlers
  mutable std::mutex _mutex;  // guards everything below
  std::vector<std::weak_ptr<Controller>> _ctrls;     // index = cntlid - 1
  uint16_t _last_cntlid = 0;
};

}  // namespace core
