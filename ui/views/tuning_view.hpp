#pragma once
// Tuning: a form generated from control::settings_schema(), the description the engine
// validates with (mode first; each mode's knobs appear with it; settings that apply at start
// shown read-only), each field's tooltip its help, range and default; the CPU topology picker bound to the mask field, and Apply live / Revert / Save as
// profile. A refused value is marked on its field with the engine's message and JSON path.
#include <QWidget>

#include <map>
#include <string>

class QFormLayout;
class QLabel;
class QPushButton;

namespace control {
struct Setting;
}

namespace ui {

class EngineSession;
class TopologyPicker;
class TuningModel;

class TuningView : public QWidget {
  Q_OBJECT

 public:
  explicit TuningView(EngineSession& session, QWidget* parent = nullptr);

  TuningModel& model() { return *_model; }
  TopologyPicker* picker() const { return _picker; }
  // The editor and the error label of "threading.cpumask" etc.
  QWidget* field(const std::string& path) const;
  QLabel* field_error(const std::string& path) const;
  QPushButton* apply_button() const { return _apply; }
  QPushButton* save_button() const { return _save; }
  QLabel* message_label() const { return _message; }

 public slots:
  void reload();
  void save_as_profile();

 private:
  struct Row {
    const control::Setting* field = nullptr;
    QWidget* editor = nullptr;
    QLabel* error = nullptr;
    int form_row = 0;
  };
  QWidget* make_editor(const control::Setting& f);
  void sync_from_model();

  TuningModel* _model = nullptr;
  TopologyPicker* _picker = nullptr;
  QFormLayout* _form = nullptr;
  std::map<std::string, Row> _rows;
  QPushButton* _apply = nullptr;
  QPushButton* _revert = nullptr;
  QPushButton* _save = nullptr;
  QLabel* _message = nullptr;
};

}  // namespace ui
