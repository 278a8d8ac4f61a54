#pragma once
// The engine's steering: one transaction over the machine's (or a test tree's) /proc and /sys,
// shared by every caller (control socket, CLI, profiles, GUI). Each apply and revert is an event
// ("steering") in the engine's log, so plots mark it and the store records it; a clean engine
// stop reverts what the engine changed. Thread-safe (one mutex; never on the data path).
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/system/steering_discovery.hpp"
#include "engine/system/steering_plan.hpp"
#include "engine/system/steering_txn.hpp"

namespace control {

// What a steering panel shows: the discovery view plus what this engine changed.
struct SteeringState {
  sys::SteeringView view;
  std::vector<sys::SavedValue> saved;  // files changed by the engine, with their original values
  sys::SteeringRequest active;         // the rules applied since the last revert, in order
  std::string root;                    // "/" on the machine
  std::string state_file;
  std::string blocked;                 // why apply is refused ("" = it is not)
};

struct SteeringOutcome {
  sys::SteeringPlan plan;  // the rows (errors: nothing was written)
  sys::TxnResult result;   // written rows, or the error and what rollback could not restore
  bool ok() const { return plan.ok() && result.ok(); }
};

class SteeringControl {
 public:
  using EventSink = std::function<void(const std::string& detail_json)>;
  using InterfacesFn = std::function<std::vector<std::string>()>;

  SteeringControl();
  ~SteeringControl();

  // Before first use: the tree ("/" = the machine) and the state file ("" = the default).
  void set_root(std::string root, std::string state_file);
  void set_event_sink(EventSink sink);
  // The interfaces that matter when not asked for all (the listeners' ones).
  void set_interfaces(InterfacesFn fn);

  SteeringState state(bool all_interfaces);
  sys::SteeringPlan plan(const sys::SteeringRequest& request);
  SteeringOutcome apply(const sys::SteeringRequest& request);
  sys::TxnResult revert();
  bool changed() const;  // something to revert

 private:
  sys::SteeringTransaction& txn();  // under _mu
  void event(const std::string& action, const std::vector<sys::SavedValue>& rows, const sys::TxnResult& r);

  mutable std::mutex _mu;
  sys::SysRoot _root;
  std::string _state_file;
  std::unique_ptr<sys::SteeringTransaction> _txn;  // made at first apply/revert (adopts a crashed engine's state)
  sys::SteeringMonitor _monitor;
  sys::SteeringRequest _active;
  EventSink _sink;
  InterfacesFn _interfaces;
};

}  // namespace control
