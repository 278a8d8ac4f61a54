// The steering panel (steering_view.hpp).
#include "ui/views/steering_view.hpp"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "engine/system/topology.hpp"
#include "ui/engine_session.hpp"
#include "ui/models/steering_model.hpp"
#include "ui/views/topology_picker.hpp"

namespace ui {

namespace {

using json = nlohmann::json;

QString error_style() { return "color: #d03030;"; }

QTableWidget* make_table(const QStringList& headers, QWidget* parent) {
  auto* t = new QTableWidget(0, int(headers.size()), parent);
  t->setHorizontalHeaderLabels(headers);
  t->verticalHeader()->hide();
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  t->horizontalHeader()->setStretchLastSection(true);
  return t;
}

void set_row(QTableWidget* t, int row, const QStringList& cells) {
  for (int c = 0; c < int(cells.size()); ++c) t->setItem(row, c, new QTableWidgetItem(cells[c]));
}

QString text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString::fromStdString(it->dump());
}

// An RPS/XPS CPU list: "" is no CPU (steering off), null a file the kernel lacks.
QString mask_text(const json& j, const char* key) {
  const QString t = text(j, key);
  return t.isEmpty() ? "none" : t;
}

constexpr int replan_ms = 300;

// A target of the CPU chooser: kind ("irq", "rps", "xps") and line or queue (-1 = all of them).
QVariant target(const QString& kind, int id) { return QStringList{kind, QString::number(id)}; }
QString target_kind(const QVariant& v) { return v.toStringList().value(0); }
int target_id(const QVariant& v) { return v.toStringList().value(1, "-1").toInt(); }

QGroupBox* boxed(const QString& title, QWidget* inner, QWidget* parent) {
  auto* box = new QGroupBox(title, parent);
  auto* l = new QVBoxLayout(box);
  l->addWidget(inner);
  return box;
}

}  // namespace

SteeringView::SteeringView(EngineSession& session, QWidget* parent) : QWidget(parent) {
  _model = new SteeringModel(session, this);
  _summary = new QLabel(this);
  _summary->setWordWrap(true);
  auto* split = new QSplitter(this);
  split->addWidget(build_tables());
  split->addWidget(build_picker());
  split->addWidget(build_planner());
  split->setStretchFactor(0, 4);  // the IRQ table's seven columns whole
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 3);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(_summary);
  layout->addWidget(split, 1);
  connect(&session, &EngineSession::topology, _chooser, &TopologyPicker::set_topology);
  connect(&session, &EngineSession::threads, _chooser, &TopologyPicker::set_threads);
  connect(_model, &SteeringModel::state_changed, this, &SteeringView::show_state);
  connect(_model, &SteeringModel::plan_changed, this, &SteeringView::show_plan);
  connect(_model, &SteeringModel::message, this, [this](const QString& t, bool error) {
    _message->setStyleSheet(error ? error_style() : QString());
    _message->setText(error ? QString() : t);
  });
  show_state();
}

QWidget* SteeringView::build_tables() {
  auto* w = new QWidget(this);
  auto* l = new QVBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  _queues = make_table({"qid", "host", "incoming CPU", "worker"}, w);
  _queues->setToolTip("Each I/O queue of the engine: the CPU its packets arrive on (SO_INCOMING_CPU, where RSS/RPS "
                      "steer them) and the worker running its io_work");
  _irqs = make_table({"IRQ", "name", "device", "queue", "affinity", "effective", "rate/s"}, w);
  _irqs->setToolTip("The NIC interrupt lines of the listeners' interfaces (/proc/irq/N/smp_affinity_list)");
  _rps = make_table({"device", "queue", "RPS CPUs", "flow count", "XPS CPUs"}, w);
  _rps->setToolTip("Receive Packet Steering per RX queue and Transmit Packet Steering per TX queue");
  l->addWidget(boxed("Engine queues", _queues, w), 1);
  _irq_box = boxed("NIC IRQ lines", _irqs, w);
  l->addWidget(_irq_box, 2);
  l->addWidget(boxed("RPS / XPS per queue", _rps, w), 2);
  // A line or queue clicked here is what the plan's CPU chooser picks for.
  connect(_irqs, &QTableWidget::cellClicked, this, [this](int row, int) {
    _device->setCurrentText(_irqs->item(row, 2)->text());
    set_target("irq", _irqs->item(row, 0)->text().toInt());
  });
  connect(_rps, &QTableWidget::cellClicked, this, [this](int row, int column) {
    if (column < 2) return;
    _device->setCurrentText(_rps->item(row, 0)->text());
    set_target(column == 4 ? "xps" : "rps", _rps->item(row, 1)->text().toInt());
  });
  return w;
}

// What the CPUs are picked for (the interface's lists, or one line or queue), the chooser, and
// the single lines' and queues' rows; a pick or an edited row re-runs the dry run.
QWidget* SteeringView::build_picker() {
  auto* pick = new QGroupBox("Pick CPUs", this);
  auto* form = new QFormLayout;
  _device = new QComboBox(pick);
  _device->setToolTip("The interface the CPU lists below apply to (every queue of it)");
  _irq_cpus = new QLineEdit(pick);
  _rps_cpus = new QLineEdit(pick);
  _xps_cpus = new QLineEdit(pick);
  for (auto* e : {_irq_cpus, _rps_cpus, _xps_cpus}) {
    e->setPlaceholderText("unchanged (0-1, all; none: RPS/XPS off)");
    e->setToolTip("Every line or queue of the interface: a CPU list such as 0-1, all, or none (RPS/XPS off); empty leaves "
                  "them as they are. Picked CPUs land here when \"Pick CPUs for\" names every line or queue.");
    connect(e, &QLineEdit::textChanged, this, &SteeringView::update_request);
  }
  connect(_device, &QComboBox::currentTextChanged, this, [this] {
    _rules->setRowCount(0);  // queue numbers are the previous interface's
    show_targets();
    update_request();
  });
  _target = new QComboBox(pick);
  _target->setToolTip("What the CPUs picked below are for: every IRQ line, RX queue (RPS) or TX queue (XPS) of the "
                      "interface, or one of them (selecting a row of the tables on the left picks it too)");
  connect(_target, &QComboBox::currentIndexChanged, this, &SteeringView::show_target_cpus);
  form->addRow("Interface", _device);
  form->addRow("IRQ CPUs", _irq_cpus);
  form->addRow("RPS CPUs", _rps_cpus);
  form->addRow("XPS CPUs", _xps_cpus);
  form->addRow("Pick CPUs for", _target);
  _chooser = new TopologyPicker(pick);
  _chooser->setToolTip("Click the CPUs the selected line or queue should use (drag across CPUs, click a core, cache or "
                       "node title for all of it). Each CPU shows the IRQ lines and queues steered there now.");
  connect(_chooser, &TopologyPicker::mask_edited, this, &SteeringView::take_picked);
  auto* chooser_scroll = new QScrollArea(pick);
  chooser_scroll->setWidget(_chooser);
  chooser_scroll->setWidgetResizable(true);
  _rules = make_table({"line or queue", "CPUs"}, pick);
  _rules->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed | QAbstractItemView::AnyKeyPressed);
  _rules->setToolTip("Single lines and queues given their own CPUs (they override the interface's lists above). "
                     "Edit a CPU list as text; empty drops the row.");
  connect(_rules, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
    if (item->column() != 1) return;
    if (item->text().trimmed().isEmpty()) _rules->removeRow(item->row());
    update_request();
    _replan->start();
  });
  _replan = new QTimer(this);
  _replan->setSingleShot(true);
  _replan->setInterval(replan_ms);
  connect(_replan, &QTimer::timeout, this, [this] {
    json r;
    if (request(r) && !r.empty() && !_model->busy()) _model->make_plan(r);
    else if (_model->busy()) _replan->start();  // the previous answer first
  });
  auto* l = new QVBoxLayout(pick);
  l->addLayout(form);
  l->addWidget(chooser_scroll, 3);
  l->addWidget(_rules, 1);
  return pick;
}

QWidget* SteeringView::build_planner() {
  auto* box = new QGroupBox("Plan", this);
  _request = new QPlainTextEdit(box);
  _request->setToolTip("The steering request sent (docs/guide/steer.md): edit it for per-queue rules, flow counts, "
                       "rps_sock_flow_entries, busy_poll");
  _dry_run = new QPushButton("&Dry run", box);
  _dry_run->setToolTip("steering.plan: every file with its value now and the value it would get; nothing is written");
  _apply = new QPushButton("Appl&y", box);
  _apply->setToolTip("steering.apply: all of the plan or none of it (rolled back at the first refusal)");
  _revert = new QPushButton("Re&vert", box);
  _revert->setToolTip("steering.revert: restore every file the engine changed, byte for byte");
  auto* buttons = new QHBoxLayout;
  for (auto* b : {_dry_run, _apply, _revert}) buttons->addWidget(b);
  buttons->addStretch(1);
  _plan = make_table({"file", "old", "new"}, box);
  _plan->horizontalHeader()->setStretchLastSection(false);  // the path takes the room; old and new stay whole
  _plan->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  _plan->setWordWrap(false);  // a long path loses its middle (its tooltip has all of it), not its file name
  _plan->setTextElideMode(Qt::ElideMiddle);
  _message = new QLabel(box);
  _message->setWordWrap(true);
  _refusal = new QLabel(box);
  _refusal->setWordWrap(true);
  _refusal->setStyleSheet(error_style());
  _refusal->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* l = new QVBoxLayout(box);
  l->addWidget(new QLabel("Request:", box));
  l->addWidget(_request, 1);
  l->addLayout(buttons);
  l->addWidget(_plan, 2);
  l->addWidget(_message);
  l->addWidget(_refusal);
  connect(_dry_run, &QPushButton::clicked, this, [this] {
    json r;
    if (request(r)) _model->make_plan(r);
  });
  connect(_apply, &QPushButton::clicked, this, [this] {
    json r;
    if (request(r)) _model->apply(r);
  });
  connect(_revert, &QPushButton::clicked, _model, &SteeringModel::revert);
  return box;
}

bool SteeringView::set_target(const QString& kind, int id) {
  const int i = _target->findData(target(kind, id));
  if (i >= 0) _target->setCurrentIndex(i);
  return i >= 0;
}

// The interface's lines, then each RX queue, then each TX queue: all of them first, then one by one.
void SteeringView::show_targets() {
  const QVariant current = _target->currentData();
  {
    QSignalBlocker block(_target);
    _target->clear();
    const QString dev = _device->currentText();
    for (const auto& i : _model->state().value("interfaces", json::array())) {
      if (text(i, "name") != dev) continue;
      if (!i.value("irqs", json::array()).empty()) _target->addItem("every IRQ line of " + dev, target("irq", -1));
      for (const auto& l : _model->state().value("irqs", json::array()))
        if (text(l, "device") == dev) _target->addItem(QString("IRQ %1 (%2)").arg(text(l, "irq"), text(l, "name")), target("irq", l.value("irq", 0)));
      const std::pair<const char*, const char*> kinds[] = {{"rx", "rps"}, {"tx", "xps"}};
      for (const auto& [dir, kind] : kinds) {
        const json queues = i.value(dir, json::array());
        const QString k = QString(kind).toUpper();
        if (!queues.empty()) _target->addItem(QString("%1: every %2 queue of %3").arg(k, QString(dir).toUpper(), dev), target(kind, -1));
        for (const auto& q : queues) _target->addItem(QString("%1: %2-%3").arg(k, dir, text(q, "queue")), target(kind, q.value("queue", 0)));
      }
    }
    const int keep = _target->findData(current);
    _target->setCurrentIndex(keep >= 0 ? keep : 0);
  }
  if (_target->currentData() != current) show_target_cpus();
}

std::string SteeringView::kernel_cpus(const QString& kind, int id) const {
  const std::string dev = _device->currentText().toStdString();
  const auto value = [](const json& j, const char* key) { return j.value(key, json()).is_string() ? j[key].get<std::string>() : ""; };
  if (kind == "irq") {
    for (const auto& l : _model->state().value("irqs", json::array()))
      if (id < 0 ? l.value("device", std::string()) == dev : l.value("irq", -1) == id) return value(l, "affinity");
    return {};
  }
  for (const auto& i : _model->state().value("interfaces", json::array())) {
    if (i.value("name", std::string()) != dev) continue;
    const json queues = i.value(kind == "rps" ? "rx" : "tx", json::array());
    const size_t q = id < 0 ? 0 : size_t(id);
    if (q < queues.size()) return value(queues[q], kind == "rps" ? "rps_cpus" : "xps_cpus");
  }
  return {};
}

int SteeringView::rule_row(const QString& kind, int id) const {
  for (int r = 0; r < _rules->rowCount(); ++r)
    if (_rules->item(r, 0)->data(Qt::UserRole) == target(kind, id)) return r;
  return -1;
}

// The chooser shows the target's CPUs as planned (its row), else as the kernel has them now.
void SteeringView::show_target_cpus() {
  const QVariant t = _target->currentData();
  if (!t.isValid()) return;
  const QString kind = target_kind(t);
  const int id = target_id(t), row = id < 0 ? -1 : rule_row(kind, id);
  QString planned = id < 0 ? cpus_edit(kind.toStdString().c_str())->text() : row >= 0 ? _rules->item(row, 1)->text() : QString();
  const std::string value = planned.trimmed().isEmpty() ? kernel_cpus(kind, id) : planned.trimmed().toStdString();
  if (value == "all") return _chooser->set_mask({});
  const auto list = sys::parse_cpu_list(value);
  if (value == "none" || list.error.empty()) _chooser->select(value == "none" ? std::vector<unsigned>{} : list.cpus);
}

// The picked set becomes the target's row (its text stays editable), and the dry run follows.
void SteeringView::take_picked(const std::vector<unsigned>& cpus) {
  const QVariant t = _target->currentData();
  if (!t.isValid()) return;
  const QString kind = target_kind(t), cpu_text = cpus.empty() ? "none" : QString::fromStdString(sys::format_cpu_list(cpus));
  const int id = target_id(t);
  if (id < 0) {
    cpus_edit(kind.toStdString().c_str())->setText(cpu_text);
  } else {
    QSignalBlocker block(_rules);
    int row = rule_row(kind, id);
    if (row < 0) {
      row = _rules->rowCount();
      _rules->setRowCount(row + 1);
      auto* what = new QTableWidgetItem(_target->currentText());
      what->setData(Qt::UserRole, t);
      what->setFlags(what->flags() & ~Qt::ItemIsEditable);
      _rules->setItem(row, 0, what);
    }
    _rules->setItem(row, 1, new QTableWidgetItem(cpu_text));
    update_request();
  }
  _replan->start();
}

QLineEdit* SteeringView::cpus_edit(const char* kind) const {
  const std::string k = kind;
  return k == "irq" ? _irq_cpus : k == "rps" ? _rps_cpus : k == "xps" ? _xps_cpus : nullptr;
}

void SteeringView::update_request() {
  SteeringPick pick{_device->currentText().toStdString(), _irq_cpus->text().trimmed().toStdString(),
                    _rps_cpus->text().trimmed().toStdString(), _xps_cpus->text().trimmed().toStdString(), {}};
  for (int r = 0; r < _rules->rowCount(); ++r) {
    const QVariant t = _rules->item(r, 0)->data(Qt::UserRole);
    const QTableWidgetItem* cpus = _rules->item(r, 1);
    pick.rules.push_back({target_kind(t).toStdString(), unsigned(target_id(t)), cpus ? cpus->text().trimmed().toStdString() : ""});
  }
  _request->setPlainText(QString::fromStdString(steering_request(pick).dump(1)));
}

bool SteeringView::request(json& out) {
  out = json::parse(_request->toPlainText().toStdString(), nullptr, false);
  if (out.is_object()) return true;
  _refusal->setText("the request is not a JSON object (docs/guide/steer.md shows its shape)");
  return false;
}

void SteeringView::show_state() {
  const json& s = _model->state();
  const QString current = _device->currentText();
  {
    QSignalBlocker block(_device);
    _device->clear();
    for (const auto& i : s.value("interfaces", json::array())) _device->addItem(text(i, "name"));
    if (int i = _device->findText(current); i >= 0) _device->setCurrentIndex(i);
  }
  show_targets();
  _chooser->set_steering(_model->by_cpu());
  const auto& queues = _model->queues();
  _queues->setRowCount(int(queues.size()));
  for (size_t r = 0; r < queues.size(); ++r)
    set_row(_queues, int(r), {QString::number(queues[r].qid), QString::fromStdString(queues[r].peer),
                              queues[r].incoming_cpu < 0 ? "?" : QString::number(queues[r].incoming_cpu),
                              queues[r].worker < 0 ? "-" : QString::number(queues[r].worker)});
  // Only the interfaces' lines: the machine's others (timers, serial, ACPI) are not steering.
  json irqs = json::array();
  for (const auto& l : s.value("irqs", json::array()))
    if (!l.value("device", std::string()).empty()) irqs.push_back(l);
  _irqs->setRowCount(int(irqs.size()));
  for (size_t r = 0; r < irqs.size(); ++r)
    set_row(_irqs, int(r), {text(irqs[r], "irq"), text(irqs[r], "name"), text(irqs[r], "device"),
                            irqs[r].value("queue", -1) < 0 ? "-" : text(irqs[r], "queue"), text(irqs[r], "affinity"),
                            text(irqs[r], "effective_affinity"), text(irqs[r], "rate")});
  _irq_box->setTitle(irqs.empty() ? "NIC IRQ lines: none (the listeners' interfaces have no interrupt lines, e.g. loopback)"
                                  : "NIC IRQ lines");
  int rows = 0;
  _rps->setRowCount(0);
  for (const auto& i : s.value("interfaces", json::array())) {
    const json rx = i.value("rx", json::array()), tx = i.value("tx", json::array());
    for (size_t q = 0; q < std::max(rx.size(), tx.size()); ++q) {
      _rps->setRowCount(rows + 1);
      set_row(_rps, rows++, {text(i, "name"), QString::number(q), q < rx.size() ? mask_text(rx[q], "rps_cpus") : "-",
                             q < rx.size() ? text(rx[q], "rps_flow_cnt") : "-", q < tx.size() ? mask_text(tx[q], "xps_cpus") : "-"});
    }
  }
  const size_t saved = s.value("saved", json::array()).size();
  // The root is "/" except in tests and containers that point steering at a copy of /proc, /sys.
  QString summary = text(s, "root") == "/" ? QString() : QString("Files under %1. ").arg(text(s, "root"));
  summary += saved ? QString("The engine changed %1 files (Revert restores them; a clean stop does too).").arg(saved)
                   : QString("The engine changed nothing.");
  if (const QString blocked = text(s, "blocked"); blocked != "-" && !blocked.isEmpty()) summary += " Apply refused: " + blocked;
  _summary->setText(summary);
  _revert->setEnabled(saved > 0 && !_model->busy());
  if (_request->toPlainText().isEmpty()) update_request();
}

void SteeringView::show_plan() {
  const auto& plan = _model->plan();
  _plan->setRowCount(int(plan.size()));
  for (size_t r = 0; r < plan.size(); ++r) {
    set_row(_plan, int(r), {QString::fromStdString(plan[r].path), QString::fromStdString(plan[r].old_value).trimmed(),
                            plan[r].change ? QString::fromStdString(plan[r].new_value) : "(unchanged)"});
    _plan->item(int(r), 0)->setToolTip(QString::fromStdString(plan[r].what + "\n" + plan[r].path));
  }
  _refusal->setText(_model->refusal().join("\n"));
}

}  // namespace ui
