// The probes table with its buttons (probes_view.hpp).
#include "ui/views/probes_view.hpp"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "ui/models/probe_model.hpp"

namespace ui {

namespace {

QString error_style() { return "color: #d03030;"; }

}  // namespace

ProbesView::ProbesView(EngineSession& session, QWidget* parent) : QWidget(parent) {
  _model = new ProbeModel(session, this);
  _banner = new QLabel(this);
  _banner->setWordWrap(true);
  _banner->hide();
  _table = new QTableView(this);
  _table->setModel(_model);
  _table->setSelectionBehavior(QAbstractItemView::SelectRows);
  _table->setSelectionMode(QAbstractItemView::SingleSelection);
  _table->verticalHeader()->hide();
  _table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);  // follows the detail's wrapping
  _table->setWordWrap(true);
  _table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  _table->horizontalHeader()->setSectionResizeMode(ProbeModel::measures_column, QHeaderView::Stretch);
  _table->horizontalHeader()->setSectionResizeMode(ProbeModel::detail_column, QHeaderView::Stretch);
  // As wide as its buttons (rebuild_buttons): fitting the column to its contents counted them only
  // when the header happened to size it after they were made, and left a 25-px "Start" otherwise.
  _table->horizontalHeader()->setSectionResizeMode(ProbeModel::action_column, QHeaderView::Fixed);
  _filter = new QLineEdit(this);
  _filter->setPlaceholderText("filter for the next start (wqlat: a workqueue such as nvmet_tcp_wq; biolat: a disk)");
  _filter->setToolTip("Passed to probes.start with the probe's name; empty = everything the probe sees");
  auto* refresh = new QPushButton("Refresh", this);
  refresh->setToolTip("Ask the engine again which probes run (probes.list)");
  _message = new QLabel(this);
  _message->setWordWrap(true);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel("Filter:", this));
  controls->addWidget(_filter, 1);
  controls->addWidget(refresh);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(_banner);
  layout->addWidget(_table, 1);
  layout->addLayout(controls);
  layout->addWidget(_message);

  connect(refresh, &QPushButton::clicked, _model, &ProbeModel::refresh);
  connect(_model, &ProbeModel::refreshed, this, &ProbesView::rebuild_buttons);
  connect(_model, &ProbeModel::message, this, [this](const QString& text, bool error) {
    _message->setStyleSheet(error ? error_style() : QString());
    _message->setText(text);
  });
}

QPushButton* ProbesView::action_button(const std::string& name) const {
  auto it = _buttons.find(name);
  return it == _buttons.end() ? nullptr : it->second;
}

void ProbesView::rebuild_buttons() {
  _buttons.clear();  // the model reset dropped the index widgets with their buttons
  int available = 0, widest = 0;
  QString first_reason;
  for (size_t i = 0; i < _model->rows().size(); ++i) {
    const ProbeRow& r = _model->rows()[i];
    available += r.available;
    if (!r.available && first_reason.isEmpty()) first_reason = QString::fromStdString(r.reason);
    auto* button = new QPushButton(r.running ? "Stop" : "Start", _table);
    button->setEnabled(r.available || r.running);
    button->setToolTip(r.available ? (r.running ? "Stop " : "Start ") + QString::fromStdString(r.name)
                                   : "Unavailable: " + QString::fromStdString(r.reason));
    const QString name = QString::fromStdString(r.name);
    const bool running = r.running;
    connect(button, &QPushButton::clicked, this, [this, name, running] {
      if (running) _model->stop(name);
      else _model->start(name, _filter->text().trimmed());
    });
    _table->setIndexWidget(_model->index(int(i), ProbeModel::action_column), button);
    _buttons[r.name] = button;
    widest = std::max(widest, button->sizeHint().width());
  }
  const int grid = _table->showGrid() ? 1 : 0;  // the cell gives its right edge to the grid line
  if (widest > 0) _table->horizontalHeader()->resizeSection(ProbeModel::action_column, widest + grid);
  // When no probe can run, say why once, at the top, in words: the rest keeps working.
  QString banner = _model->unavailable();
  if (banner.isEmpty() && available == 0 && !_model->rows().empty())
    banner = "No eBPF probe can run here: " + first_reason + ". The engine's own histograms keep working.";
  _banner->setText(banner);
  _banner->setStyleSheet(error_style());
  _banner->setVisible(!banner.isEmpty());
}

}  // namespace ui
