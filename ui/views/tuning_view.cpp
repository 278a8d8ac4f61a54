// The generated tuning form (tuning_view.hpp).
#include "ui/views/tuning_view.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>

#include "engine/config/config.hpp"
#include "ui/engine_session.hpp"
#include "engine/config/settings_schema.hpp"
#include "ui/models/tuning_model.hpp"
#include "ui/views/topology_picker.hpp"

namespace ui {

namespace {

using json = nlohmann::json;

QString error_style() { return "color: #d03030;"; }

QString section_heading(std::string_view section) {
  if (section == "threading") return "Execution model";
  if (section == "budgets") return "Budgets (per io_work)";
  if (section == "rdma") return "RDMA transport (applies at start: set in the configuration)";
  return "TCP, queue limits (at start: set in the configuration)";
}

bool applies_to(const control::Setting& f, const std::string& mode) {
  return f.modes.empty() || std::find(f.modes.begin(), f.modes.end(), mode) != f.modes.end();
}

QString label_of(const control::Setting& f) {
  const QString label = QString::fromUtf8(f.label.data(), qsizetype(f.label.size()));
  const QString unit = QString::fromUtf8(f.unit.data(), qsizetype(f.unit.size()));
  return unit.isEmpty() || label.contains(unit) ? label : label + " (" + unit + ")";  // not "Receive PDUs (PDUs)"
}

// The schema's help, then its limits as an operator reads them: range, values, default.
QString tooltip_of(const control::Setting& f) {
  auto q = [](std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); };
  QStringList lines{q(f.help), ""};
  const QString unit = f.unit.empty() ? QString() : " " + q(f.unit);
  if (f.min || f.max || !f.max_rule.empty()) {
    const QString lo = f.min ? QString::number(*f.min) : "";
    const QString hi = f.max ? QString::number(*f.max) : q(f.max_rule);
    lines << "Range: " + lo + " .. " + hi + unit;
  }
  if (f.multiple_of > 1) lines << "A multiple of " + QString::number(f.multiple_of);
  if (f.power_of_two) lines << "A power of two";
  if (!f.choices.empty()) {
    QStringList values;
    for (auto c : f.choices) values << q(c);
    lines << "Values: " + values.join(", ");
  }
  lines << "Default: " + QString::fromStdString(f.default_value.dump());
  lines << (f.live ? "Applies live (" : "Applies at start (") + QString::fromStdString(f.path()) + ")";
  return lines.join("\n");
}

}  // namespace

TuningView::TuningView(EngineSession& session, QWidget* parent) : QWidget(parent) {
  _model = new TuningModel(session, this);
  auto* form_box = new QWidget(this);
  _form = new QFormLayout(form_box);
  _form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  std::string_view section;
  for (const auto& f : control::settings_schema()) {
    if (f.section != section) {
      section = f.section;
      _form->addRow(new QLabel("<b>" + section_heading(section) + "</b>", form_box));
    }
    Row row{&f, make_editor(f), new QLabel(form_box), 0};
    row.editor->setToolTip(tooltip_of(f));
    // No tcp.set or rdma.set: transport settings take effect at start.
    row.editor->setEnabled(f.section != "tcp" && f.section != "rdma");
    row.error->setStyleSheet(error_style());
    row.error->setWordWrap(true);
    row.error->hide();
    auto* label = new QLabel(label_of(f), form_box);
    label->setToolTip(row.editor->toolTip());
    _form->addRow(label, row.editor);
    row.form_row = _form->rowCount() - 1;
    _form->addRow("", row.error);
    _rows[f.path()] = row;
  }
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(form_box);
  scroll->setWidgetResizable(true);

  _apply = new QPushButton("&Apply live", this);
  _apply->setShortcut(QKeySequence("Ctrl+Return"));
  _apply->setToolTip("Send what changed to the engine; it switches while hosts run I/O (Ctrl+Return)");
  _revert = new QPushButton("&Revert", this);
  _revert->setToolTip("Discard the edits and show the running values");
  _save = new QPushButton("&Save as profile...", this);
  _save->setToolTip("Store the engine's running settings as a profile in the engine's own database (on a remote "
                    "engine: the server's; `nvmetune profile list` there shows it). Apply or revert edits first.");
  _message = new QLabel(this);
  _message->setWordWrap(true);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(_apply);
  buttons->addWidget(_revert);
  buttons->addWidget(_save);
  buttons->addStretch(1);

  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addWidget(scroll, 1);
  left_layout->addLayout(buttons);
  left_layout->addWidget(_message);

  _picker = new TopologyPicker(this);
  auto* picker_box = new QGroupBox("CPU topology: pick the worker mask", this);
  auto* picker_layout = new QVBoxLayout(picker_box);
  auto* picker_scroll = new QScrollArea(picker_box);
  picker_scroll->setWidget(_picker);
  picker_scroll->setWidgetResizable(true);
  picker_layout->addWidget(picker_scroll);

  auto* split = new QSplitter(this);
  split->addWidget(left);
  split->addWidget(picker_box);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split);

  connect(_apply, &QPushButton::clicked, _model, &TuningModel::apply);
  connect(_revert, &QPushButton::clicked, _model, &TuningModel::revert);
  connect(_save, &QPushButton::clicked, this, &TuningView::save_as_profile);
  connect(_model, &TuningModel::changed, this, &TuningView::sync_from_model);
  connect(_model, &TuningModel::message, this, [this](const QString& text, bool error) {
    _message->setStyleSheet(error ? error_style() : QString());
    _message->setText(text);
  });
  connect(&session, &EngineSession::topology, _picker, &TopologyPicker::set_topology);
  connect(&session, &EngineSession::threads, _picker, &TopologyPicker::set_threads);
  connect(_picker, &TopologyPicker::mask_edited, this, [this](const std::vector<unsigned>& cpus) {
    _model->set_value(*_rows.at("threading.cpumask").field, cpus.empty() ? std::string("") : sys::format_cpu_list(cpus));
  });
  sync_from_model();
}

QWidget* TuningView::make_editor(const control::Setting& f) {
  using T = control::SettingType;
  switch (f.type) {
    case T::choice: {
      auto* box = new QComboBox(this);
      for (auto c : f.choices) box->addItem(QString::fromUtf8(c.data(), qsizetype(c.size())));
      connect(box, &QComboBox::currentTextChanged, this, [this, &f](const QString& v) { _model->set_value(f, v.toStdString()); });
      return box;
    }
    case T::integer:
    case T::size: {
      // Bounds the machine decides (first_core: the highest online CPU) are the engine's to judge.
      auto* spin = new QSpinBox(this);
      spin->setRange(int(std::max<int64_t>(f.min.value_or(0), INT32_MIN)), int(std::min<int64_t>(f.max.value_or(INT32_MAX), INT32_MAX)));
      spin->setSingleStep(int(f.multiple_of));
      spin->setKeyboardTracking(false);
      connect(spin, &QSpinBox::valueChanged, this, [this, &f](int v) { _model->set_value(f, v); });
      return spin;
    }
    case T::boolean: {
      auto* check = new QCheckBox(this);
      connect(check, &QCheckBox::toggled, this, [this, &f](bool v) { _model->set_value(f, v); });
      return check;
    }
    case T::cpumask: {
      auto* edit = new QLineEdit(this);
      edit->setPlaceholderText("all, or a list such as 0-3,6");
      connect(edit, &QLineEdit::textEdited, this, [this, &f](const QString& v) { _model->set_value(f, v.toStdString()); });
      return edit;
    }
  }
  return nullptr;
}

QWidget* TuningView::field(const std::string& path) const {
  auto it = _rows.find(path);
  return it == _rows.end() ? nullptr : it->second.editor;
}

QLabel* TuningView::field_error(const std::string& path) const {
  auto it = _rows.find(path);
  return it == _rows.end() ? nullptr : it->second.error;
}

void TuningView::reload() { _model->reload(); }

void TuningView::sync_from_model() {
  const std::string mode = _model->mode();
  for (auto& [path, row] : _rows) {
    const json v = _model->value(*row.field);
    QSignalBlocker block(row.editor);
    if (auto* box = qobject_cast<QComboBox*>(row.editor); box && v.is_string()) box->setCurrentText(QString::fromStdString(v.get<std::string>()));
    if (auto* spin = qobject_cast<QSpinBox*>(row.editor); spin && v.is_number()) spin->setValue(v.get<int>());
    if (auto* check = qobject_cast<QCheckBox*>(row.editor); check && v.is_boolean()) check->setChecked(v.get<bool>());
    if (auto* edit = qobject_cast<QLineEdit*>(row.editor); edit && v.is_string() && edit->text().toStdString() != v.get<std::string>())
      edit->setText(QString::fromStdString(v.get<std::string>()));
    const bool changed = v != _model->running(*row.field);
    QFont font = row.editor->font();  // edited, not applied yet: bold (a style sheet would stick to the spin box's line edit)
    font.setBold(changed);
    row.editor->setFont(font);
    const QString error = _model->error(*row.field);
    row.error->setText(error);
    row.error->setVisible(!error.isEmpty());
    row.editor->setProperty("invalid", !error.isEmpty());
    row.editor->setStyleSheet(error.isEmpty() ? QString() : "border: 2px solid #d03030;");
    const bool visible = mode.empty() || applies_to(*row.field, mode);
    _form->setRowVisible(row.form_row, visible);
    _form->setRowVisible(row.form_row + 1, visible && !error.isEmpty());
  }
  if (const json mask = _model->value(*_rows.at("threading.cpumask").field); mask.is_string()) {
    if (auto m = control::parse_cpu_mask(mask.get<std::string>()); !m.problem) _picker->set_mask(m.cpus);
  }
  _apply->setEnabled(_model->dirty() && !_model->busy());
  _revert->setEnabled(_model->dirty());
  _save->setEnabled(!_model->dirty() && !_model->busy());  // it saves what runs, not the form
}

void TuningView::save_as_profile() {
  bool ok = false;
  const QString name = QInputDialog::getText(this, "Save as profile", "Profile name ([A-Za-z0-9._-], up to 64):",
                                             QLineEdit::Normal, "", &ok);
  if (!ok || name.isEmpty()) return;
  _model->save_profile(name, "saved from the nvmetune GUI");
}

}  // namespace ui
