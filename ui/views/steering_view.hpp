#pragma once
// Steering: what steers the engine's packets and where they land. Tables of the engine's queues
// (the CPU each queue's packets arrive on, SO_INCOMING_CPU, beside its worker), the NIC IRQ lines
// of the listeners' interfaces with their affinity and rate, and each RX/TX queue's RPS/XPS mask.
// A plan is built from CPU lists per interface (or edited as a steering request, README
// "Steering"), shown as the dry run's diff (path, old, new), then applied (all or nothing) or
// reverted. A refusal (a managed IRQ, a read-only /proc, no root) is shown with each file named.
#include <QWidget>

#include <nlohmann/json.hpp>

class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;

namespace ui {

class EngineSession;
class SteeringModel;

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
  QPlainTextEdit* request_edit() const { return _request; }
  QPushButton* dry_run_button() const { return _dry_run; }
  QPushButton* apply_button() const { return _apply; }
  QPushButton* revert_button() const { return _revert; }
  QLabel* refusal_label() const { return _refusal; }

 private:
  QWidget* build_tables();
  QWidget* build_planner();
  void show_state();
  void show_plan();
  void update_request();
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
  QPlainTextEdit* _request = nullptr;
  QPushButton* _dry_run = nullptr;
  QPushButton* _apply = nullptr;
  QPushButton* _revert = nullptr;
  QLabel* _message = nullptr;
  QLabel* _refusal = nullptr;
};

}  // namespace ui
