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
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/models/steering_model.hpp"

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
  split->addWidget(build_planner());
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(_summary);
  layout->addWidget(split, 1);
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
  return w;
}

QWidget* SteeringView::build_planner() {
  auto* box = new QGroupBox("Plan", this);
  auto* form = new QFormLayout;
  _device = new QComboBox(box);
  _device->setToolTip("The interface the CPU lists below apply to (every queue of it)");
  _irq_cpus = new QLineEdit(box);
  _rps_cpus = new QLineEdit(box);
  _xps_cpus = new QLineEdit(box);
  for (auto* e : {_irq_cpus, _rps_cpus, _xps_cpus}) {
    e->setPlaceholderText("unchanged (a CPU list such as 0-1, all, or none for RPS/XPS)");
    connect(e, &QLineEdit::textChanged, this, &SteeringView::update_request);
  }
  connect(_device, &QComboBox::currentTextChanged, this, &SteeringView::update_request);
  form->addRow("Interface", _device);
  form->addRow("IRQ CPUs", _irq_cpus);
  form->addRow("RPS CPUs", _rps_cpus);
  form->addRow("XPS CPUs", _xps_cpus);
  _request = new QPlainTextEdit(box);
  _request->setToolTip("The steering request sent (README \"Steering\"): edit it for per-queue rules, flow counts, "
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
  _message = new QLabel(box);
  _message->setWordWrap(true);
  _refusal = new QLabel(box);
  _refusal->setWordWrap(true);
  _refusal->setStyleSheet(error_style());
  _refusal->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* l = new QVBoxLayout(box);
  l->addLayout(form);
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

QLineEdit* SteeringView::cpus_edit(const char* kind) const {
  const std::string k = kind;
  return k == "irq" ? _irq_cpus : k == "rps" ? _rps_cpus : k == "xps" ? _xps_cpus : nullptr;
}

void SteeringView::update_request() {
  const SteeringPick pick{_device->currentText().toStdString(), _irq_cpus->text().trimmed().toStdString(),
                          _rps_cpus->text().trimmed().toStdString(), _xps_cpus->text().trimmed().toStdString()};
  _request->setPlainText(QString::fromStdString(steering_request(pick).dump(1)));
}

bool SteeringView::request(json& out) {
  out = json::parse(_request->toPlainText().toStdString(), nullptr, false);
  if (out.is_object()) return true;
  _refusal->setText("the request is not a JSON object (README \"Steering\" shows its shape)");
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
    set_row(_plan, int(r), {QString::fromStdString(plan[r].path), QString::fromStdString(plan[r].old_value),
                            plan[r].change ? QString::fromStdString(plan[r].new_value) : "(unchanged)"});
  }
  _refusal->setText(_model->refusal().join("\n"));
}

}  // namespace ui
