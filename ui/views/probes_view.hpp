#pragma once
// Probes: every eBPF probe the engine shown has (ProbeModel), its status, and for an
// unavailable probe why, in the kernel's and the engine's words (no root, no CAP_BPF, no BTF,
// ...); a Start/Stop button per probe and an optional filter (a workqueue for wqlat, a disk for
// biolat). A running probe's histograms appear in the Histograms view's source list.
#include <QWidget>

#include <map>
#include <string>

class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;

namespace ui {

class EngineSession;
class ProbeModel;

class ProbesView : public QWidget {
  Q_OBJECT

 public:
  explicit ProbesView(EngineSession& session, QWidget* parent = nullptr);

  ProbeModel& model() { return *_model; }
  QTableView* table() const { return _table; }
  // The Start/Stop button of probe `name` (nullptr when the engine has no such probe).
  QPushButton* action_button(const std::string& name) const;
  QLineEdit* filter_edit() const { return _filter; }
  QLabel* banner() const { return _banner; }

 private:
  void rebuild_buttons();

  ProbeModel* _model = nullptr;
  QTableView* _table = nullptr;
  QLineEdit* _filter = nullptr;
  QLabel* _banner = nullptr;
  QLabel* _message = nullptr;
  std::map<std::string, QPushButton*> _buttons;
};

}  // namespace ui
