#include "ui/main_window.hpp"

#include <QDateTime>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "ui/log_buffer.hpp"
#include "ui/models/engine_stats_model.hpp"

namespace ui {

namespace {

constexpr int log_max_blocks = 2000;  // lines kept in the log view

QString listener_text(const engine::Engine& engine) {
  if (!engine.running()) return QObject::tr("Engine stopped.");
  const auto cfg = engine.config();
  QStringList lines;
  for (const auto& l : engine.listeners()) {
    lines << QObject::tr("Listening on %1 %2:%3")
                 .arg(QString::fromStdString(l.trtype), QString::fromStdString(l.traddr))
                 .arg(l.port);
  }
  if (lines.isEmpty()) lines << QObject::tr("No listeners.");
  for (const auto& s : cfg.subsystems) {
    const auto n = s.namespaces.size();
    lines << QObject::tr("Subsystem %1: %2 namespace%3")
                 .arg(QString::fromStdString(s.nqn)).arg(n).arg(n == 1 ? "" : "s");
  }
  const auto listeners = engine.listeners();
  if (!listeners.empty() && !cfg.subsystems.empty()) {
    const auto& l = listeners.front();
    const QString addr = l.traddr == "0.0.0.0" ? QStringLiteral("127.0.0.1") : QString::fromStdString(l.traddr);
    lines << QObject::tr("Connect: nvme connect -t tcp -a %1 -s %2 -n %3")
                 .arg(addr).arg(l.port).arg(QString::fromStdString(cfg.subsystems.front().nqn));
  }
  return lines.join('\n');
}

}  // namespace

MainWindow::MainWindow(engine::Engine& engine, QWidget* parent)
    : QMainWindow(parent), _engine(engine), _log_buffer(std::make_shared<LogBuffer>()) {
  setWindowTitle(tr("nvmetune"));
  _stats = new EngineStatsModel(engine, this);

  _listeners = new QLabel(this);
  _listeners->setObjectName("listeners");
  _listeners->setTextInteractionFlags(Qt::TextSelectableByMouse);

  _table = new QTableView(this);
  _table->setObjectName("stats_table");
  _table->setModel(_stats);
  _table->verticalHeader()->hide();
  _table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);

  _log = new QPlainTextEdit(this);
  _log->setObjectName("log");
  _log->setReadOnly(true);
  _log->setMaximumBlockCount(log_max_blocks);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(_table);
  split->addWidget(make_plot());
  split->addWidget(_log);
  split->setSizes({330, 220, 100});

  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->addWidget(_listeners);
  layout->addWidget(split, 1);
  setCentralWidget(central);
  resize(800, 700);

  _timer.setInterval(refresh_interval_ms);
  connect(&_timer, &QTimer::timeout, this, &MainWindow::refresh);
  refresh();
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::make_plot() {
  _plot = new QCustomPlot(this);
  _plot->setObjectName("iops_plot");
  _plot->setMinimumHeight(180);
  _plot->addGraph();
  _plot->graph(0)->setName(tr("commands/s"));
  auto ticker = QSharedPointer<QCPAxisTickerDateTime>::create();  // keys: seconds since the epoch
  ticker->setDateTimeFormat("hh:mm:ss");
  _plot->xAxis->setTicker(ticker);
  _plot->yAxis->setLabel(tr("IOPS (commands/s)"));
  const double now = QDateTime::currentMSecsSinceEpoch() / 1000.0;
  _plot->xAxis->setRange(now - plot_window_seconds, now);
  _plot->yAxis->setRange(0, 1);
  return _plot;
}

engine::LogSink MainWindow::log_sink() const { return LogBuffer::sink(_log_buffer); }

void MainWindow::refresh() {
  _stats->refresh();
  update_listeners();
  update_plot();
  drain_log();
}

void MainWindow::update_listeners() { _listeners->setText(listener_text(_engine)); }

void MainWindow::update_plot() {
  const double now = QDateTime::currentMSecsSinceEpoch() / 1000.0;
  auto* graph = _plot->graph(0);
  graph->addData(now, _stats->rate(EngineStatsModel::Counter::commands));
  graph->data()->removeBefore(now - plot_window_seconds);
  _plot->xAxis->setRange(now - plot_window_seconds, now);
  bool found = false;
  const QCPRange values = graph->getValueRange(found);
  _plot->yAxis->setRange(0, found && values.upper > 0 ? values.upper * 1.1 : 1.0);
  _plot->replot(QCustomPlot::rpQueuedReplot);
}

void MainWindow::drain_log() {
  for (const auto& line : _log_buffer->drain()) _log->appendPlainText(QString::fromStdString(line));
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  _timer.start();  // sample only while someone looks
}

void MainWindow::hideEvent(QHideEvent* event) {
  _timer.stop();
  QMainWindow::hideEvent(event);
}

}  // namespace ui
