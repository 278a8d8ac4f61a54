// The engine's steering transaction and its events (steering_control.hpp).
#include "engine/control/steering_control.hpp"

#include <nlohmann/json.hpp>

#include "engine/control/steering_json.hpp"

namespace control {

SteeringControl::SteeringControl() : _state_file(sys::default_steering_state_path()) {}
SteeringControl::~SteeringControl() = default;

void SteeringControl::set_root(std::string root, std::string state_file) {
  std::lock_guard lk(_mu);
  _root = sys::SysRoot(std::move(root));
  _state_file = state_file.empty() ? sys::default_steering_state_path() : std::move(state_file);
  _txn.reset();
}

void SteeringControl::set_event_sink(EventSink sink) {
  std::lock_guard lk(_mu);
  _sink = std::move(sink);
}

void SteeringControl::set_interfaces(InterfacesFn fn) {
  std::lock_guard lk(_mu);
  _interfaces = std::move(fn);
}

sys::SteeringTransaction& SteeringControl::txn() {
  if (!_txn) _txn = std::make_unique<sys::SteeringTransaction>(_root, _state_file);
  return *_txn;
}

SteeringState SteeringControl::state(bool all_interfaces) {
  std::lock_guard lk(_mu);
  std::vector<std::string> names;
  // Address lookup is of this network namespace, which a fake tree is not.
  if (!all_interfaces && _root.real() && _interfaces) names = _interfaces();
  SteeringState s;
  s.view = sys::discover_steering(_root, names);
  _monitor.rate(s.view);
  s.saved = txn().saved();
  s.active = _active;
  s.root = _root.real() ? "/" : _root.root();
  s.state_file = _state_file;
  s.blocked = txn().blocked();
  return s;
}

sys::SteeringPlan SteeringControl::plan(const sys::SteeringRequest& request) {
  std::lock_guard lk(_mu);
  return sys::plan_steering(_root, sys::discover_steering(_root), request);
}

SteeringOutcome SteeringControl::apply(const sys::SteeringRequest& request) {
  std::lock_guard lk(_mu);
  SteeringOutcome out;
  out.plan = sys::plan_steering(_root, sys::discover_steering(_root), request);
  if (!out.plan.ok()) return out;
  std::vector<sys::FileChange> changes;
  for (const auto& r : out.plan.rows)
    if (r.change) changes.push_back({r.path, r.new_value});
  out.result = txn().apply(changes);
  if (out.result.ok()) {
    _active.irq.insert(_active.irq.end(), request.irq.begin(), request.irq.end());
    _active.rps.insert(_active.rps.end(), request.rps.begin(), request.rps.end());
    _active.xps.insert(_active.xps.end(), request.xps.begin(), request.xps.end());
    if (request.rps_sock_flow_entries) _active.rps_sock_flow_entries = request.rps_sock_flow_entries;
    if (request.busy_poll) _active.busy_poll = request.busy_poll;
    if (request.busy_read) _active.busy_read = request.busy_read;
  }
  event("apply", out.result.done, out.result);
  return out;
}

sys::TxnResult SteeringControl::revert() {
  std::lock_guard lk(_mu);
  auto r = txn().revert();
  if (r.ok()) _active = {};
  if (!r.done.empty() || !r.ok()) event("revert", r.done, r);
  return r;
}

bool SteeringControl::changed() const {
  std::lock_guard lk(_mu);
  return _txn && !_txn->saved().empty();
}

void SteeringControl::event(const std::string& action, const std::vector<sys::SavedValue>& rows, const sys::TxnResult& r) {
  if (!_sink) return;
  nlohmann::json d = {{"action", action}, {"ok", r.ok()}, {"files", saved_json(rows)}};
  if (!r.ok()) d["errors"] = nlohmann::json::array();
  for (const auto& e : txn_errors(r)) d["errors"].push_back({{"path", e.path}, {"message", e.message}});
  _sink(d.dump());
}

}  // namespace control
