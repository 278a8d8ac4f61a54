#include "engine/core/subsystem.hpp"

#include <algorithm>

#include "engine/core/controller.hpp"

namespace core {

// CNTLIDs 1..0xFFEF are valid for dynamic controllers.
inline constexpr size_t max_controllers = 0xffef;

Subsystem::Subsystem(std::string nqn, std::string serial, std::string model, bool allow_any_host,
                     std::vector<std::string> hosts, bool discovery)
    : _nqn(std::move(nqn)), _serial(std::move(serial)), _model(std::move(model)),
      _allow_any_host(allow_any_host), _hosts(std::move(hosts)), _discovery(discovery) {}

bool Subsystem::host_allowed(const std::string& hostnqn) const {
  return _allow_any_host || std::find(_hosts.begin(), _hosts.end(), hostnqn) != _hosts.end();
}

bool Subsystem::add_namespace(std::unique_ptr<Namespace> ns) {
  const uint32_t id = ns->nsid();
  if (!_namespaces.add(std::move(ns))) return false;
  notify_ns_changed(id);
  return true;
}

bool Subsystem::remove_namespace(uint32_t nsid) {
  if (!_namespaces.remove(nsid)) return false;
  notify_ns_changed(nsid);
  return true;
}

void Subsystem::notify_ns_changed(uint32_t nsid) {
  for (auto& c : controllers()) c->raise_event(aen::ns_changed, nsid);
}

// A CNTLID is not handed out again at once (a host may still hold the old one in its logs or a
// racing I/O Connect): new IDs are taken in order, and freed ones only once the range wraps.
uint16_t Subsystem::register_controller(std::shared_ptr<Controller> c) {
  std::lock_guard lk(_mutex);
  if (_ctrls.size() < max_controllers) {
    _ctrls.push_back(c);
    _last_cntlid = static_cast<uint16_t>(_ctrls.size());
    return _last_cntlid;
  }
  for (size_t n = 0; n < _ctrls.size(); ++n) {
    const size_t i = (_last_cntlid + n) % _ctrls.size();
    if (_ctrls[i].expired()) {
      _ctrls[i] = c;
      _last_cntlid = static_cast<uint16_t>(i + 1);
      return _last_cntlid;
    }
  }
  return 0;
}

void Subsystem::unregister_controller(uint16_t cntlid) {
  std::lock_guard lk(_mutex);
  if (cntlid >= 1 && cntlid <= _ctrls.size()) _ctrls[cntlid - 1].reset();
}

std::shared_ptr<Controller> Subsystem::find_controller(uint16_t cntlid) const {
  std::lock_guard lk(_mutex);
  if (cntlid < 1 || cntlid > _ctrls.size()) return nullptr;
  return _ctrls[cntlid - 1].lock();
}

std::vector<std::shared_ptr<Controller>> Subsystem::controllers() const {
  std::lock_guard lk(_mutex);
  std::vector<std::shared_ptr<Controller>> out;
  for (auto& w : _ctrls)
    if (auto c = w.lock()) out.push_back(std::move(c));
  return out;
}

}  // namespace core
