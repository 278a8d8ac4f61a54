#pragma once
// Steering: what steers the engine's packets and where they land. Tables of the engine's queues
// (the CPU each queue's packets arrive on, SO_INCOMING_CPU, beside its worker), the NIC IRQ lines
// of the listeners' interfaces with their affinity and rate, and each RX/TX queue's RPS/XPS mask.
// A plan is built by picking CPUs on a CPU chooser (the topology picker) for the interface's
// lines and queues, or for one IRQ line, RX queue (RPS) or TX queue (XPS); the picked set is
// the plan's row, still editable as text (or the request itself, docs/guide/steer.md). Each pick
// re-runs the dry run, whose diff (path, old, new) shows what Apply writes (all or nothing);
// Revert restores it. A refusal (a managed IRQ, a read-only /proc, no root) is shown with each file named.
#include <QWidget>

#include <nlohmann/json.hpp>

class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;
class QTimer;

namespace ui {

class EngineSession;
class SteeringModel;
class TopologyPicker;

class SteeringView : public QWidget {
  Q_OBJECT

 public:
  explicit SteeringView(EngineSession& session, QWidget* parent = nullptr);

  SteeringModel& model() { return *_model; }
  QTableWidget* queues_table() const { return _queues; }
  QTableWidget* irq_table() const { return _irqs; }
  QTableWidget* rps_table() const { return _rps; }
  QTableWidget* plan_table() const { return _plan; }
  QComboBox* device_box() const { return _device; }
  QLineEdit* cpus_edit(const char* kind) const;  // "irq", "rps", "xps"
  // What the CPU chooser picks for: every line/queue of the interface, or one of them.
  QComboBox* target_box() const { return _target; }
  bool set_target(const QString& kind, int id);  // id -1 = every line/queue of the interface
  TopologyPicker* cpu_chooser() const { return _chooser; }
  QTableWidget* rules_table() const { return _rules; }  // single lines and queues: target, CPUs
  QPlainTextEdit* request_edit() const { return _request; }
  QPushButton* dry_run_button() const { return _dry_run; }
  QPushButton* apply_button() const { return _apply; }
  QPushButton* revert_button() const { return _revert; }
  QLabel* refusal_label() const { return _refusal; }

 private:
  QWidget* build_tables();
  QWidget* build_picker();
  QWidget* build_planner();
  void show_state();
  void show_plan();
  void update_request();
  void show_targets();
  void show_target_cpus();
  void take_picked(const std::vector<unsigned>& cpus);
  int rule_row(const QString& kind, int id) const;
  std::string kernel_cpus(const QString& kind, int id) const;  // the value there now
  // The request in the editor; false (with a message) when it is not a JSON object.
  bool request(nlohmann::json& out);

  SteeringModel* _model = nullptr;
  QLabel* _summary = nullptr;
  QTableWidget* _queues = nullptr;
  QTableWidget* _irqs = nullptr;
  QGroupBox* _irq_box = nullptr;
  QTableWidget* _rps = nullptr;
  QTableWidget* _plan = nullptr;
  QComboBox* _device = nullptr;
  QLineEdit* _irq_cpus = nullptr;
  QLineEdit* _rps_cpus = nullptr;
  QLineEdit* _xps_cpus = nullptr;
  QComboBox* _target = nullptr;
  TopologyPicker* _chooser = nullptr;
  QTableWidget* _rules = nullptr;
  QTimer* _replan = nullptr;  // a pick re-runs the dry run once the clicks settle
  QPlainTextEdit* _request = nullptr;
  QPushButton* _dry_run = nullptr;
  QPushButton* _apply = nullptr;
  QPushButton* _revert = nullptr;
  QLabel* _message = nullptr;
  QLabel* _refusal = nullptr;
};

}  // namespace ui
