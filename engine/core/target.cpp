#include "engine/core/target.hpp"

#include "engine/nvme/spec.hpp"

namespace core {

Target::Target(Limits limits)
    : _limits(limits),
      _discovery(std::make_shared<Subsystem>(nvme::discovery_nqn, "", "nvmetune discovery", true,
                                             std::vector<std::string>{}, true)) {}

std::shared_ptr<Subsystem> Target::find(std::string_view nqn) const {
  if (nqn == _discovery->nqn()) return _discovery;
  std::lock_guard lk(_mutex);
  for (auto& s : _subsystems)
    if (s->nqn() == nqn) return s;
  return nullptr;
}

void Target::add_subsystem(std::shared_ptr<Subsystem> s) {
  {
    std::lock_guard lk(_mutex);
    _subsystems.push_back(std::move(s));
  }
  bump_genctr();
}

std::vector<std::shared_ptr<Subsystem>> Target::subsystems() const {
  std::lock_guard lk(_mutex);
  return _subsystems;
}

void Target::add_listener(ListenerAddress a) {
  {
    std::lock_guard lk(_mutex);
    a.portid = static_cast<uint16_t>(_listeners.size() + 1);
    _listeners.push_back(std::move(a));
  }
  bump_genctr();
}

std::vector<ListenerAddress> Target::listeners() const {
  std::lock_guard lk(_mutex);
  return _listeners;
}

}  // namespace core
