#pragma once
// ui::SteeringModel: IRQ and packet steering of the engine shown, through the session (so the
// same on an embedded engine and a remote `nvmetune serve`): steering.get (the listeners'
// interfaces, their IRQ lines with affinity, RX/TX queues with RPS/XPS masks, what the engine
// changed), steering.plan (the dry run: path, old, new), steering.apply (all or nothing) and
// steering.revert. The engine's queues and the CPU their packets arrive on come from the
// session's snapshots. A refusal is kept with every file the engine names, in its words (a
// managed IRQ, a read-only /proc, missing root).
#include <QObject>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/stats/snapshot.hpp"

namespace control {
struct RpcOutcome;
}

namespace ui {

class EngineSession;

// One engine queue and where its packets arrive (SO_INCOMING_CPU) vs where it runs.
struct SteeredQueue {
  int qid = 0;
  std::string peer;
  int incoming_cpu = -1;
  int worker = -1;
};

// A plan row: the file, its value now and the value the plan writes.
struct PlanRow {
  std::string path, what, old_value, new_value;
  bool change = false;
};

// One line or queue given its own CPUs (picked on the panel's CPU chooser, or typed): kind
// "irq" (id: the line's number), "rps" (id: the RX queue) or "xps" (id: the TX queue).
struct PickedRule {
  std::string kind;
  unsigned id = 0;
  std::string cpus;
};

// What the panel's pickers make into a request: a CPU list per kind for every line and queue
// of one interface, then the rules of single lines and queues (later rules win, so a single
// queue's CPUs override its interface's). An empty list leaves that kind alone; "none" turns
// RPS/XPS off.
struct SteeringPick {
  std::string device;
  std::string irq_cpus, rps_cpus, xps_cpus;
  std::vector<PickedRule> rules;
};
nlohmann::json steering_request(const SteeringPick& pick);

// What steers packets to one CPU (the topology picker shows it beside the engine's threads):
// the IRQ lines whose effective affinity (else smp_affinity_list) has it, the interfaces'
// lines first, and the RX queues whose rps_cpus and TX queues whose xps_cpus have it.
struct CpuSteering {
  struct Irq {
    unsigned irq = 0;
    std::string name, device;  // device "" = not one of the interfaces' lines
  };
  std::vector<Irq> irqs;
  std::vector<std::string> rps, xps;  // "rx0" ("eth0 rx0" when steering.get shows several interfaces)
};
using SteeringByCpu = std::map<unsigned, CpuSteering>;
// From steering.get's result (its per_cpu); empty when the state has none (not fetched, refused).
SteeringByCpu steering_by_cpu(const nlohmann::json& state);

class SteeringModel : public QObject {
  Q_OBJECT

 public:
  explicit SteeringModel(EngineSession& session, QObject* parent = nullptr);

  const nlohmann::json& state() const { return _state; }  // steering.get's result
  const SteeringByCpu& by_cpu() const { return _by_cpu; }   // the state per CPU
  const std::vector<SteeredQueue>& queues() const { return _queues; }
  const std::vector<PlanRow>& plan() const { return _plan; }
  const nlohmann::json& planned_request() const { return _planned; }
  // The last refusal: its message, then one line per file or field the engine named.
  const QStringList& refusal() const { return _refusal; }
  bool busy() const { return !_pending.empty(); }
  bool changed() const;  // the engine holds steering it can revert

 public slots:
  void refresh();
  void make_plan(const nlohmann::json& request);
  void apply(const nlohmann::json& request);
  void revert();
  void on_snapshot(const stats::Snapshot& s);

 signals:
  void state_changed();
  void plan_changed();
  void message(const QString& text, bool error);

 private:
  void on_call(quint64 ticket, const QString& method, const control::RpcOutcome& outcome);
  void keep_refusal(const control::RpcOutcome& outcome, const QString& what);

  EngineSession& _session;
  nlohmann::json _state = nlohmann::json::object();
  SteeringByCpu _by_cpu;
  std::vector<SteeredQueue> _queues;
  std::vector<PlanRow> _plan;
  nlohmann::json _planned;
  QStringList _refusal;
  std::map<quint64, std::string> _pending;  // ticket -> method
};

}  // namespace ui
