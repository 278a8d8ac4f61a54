// The main window (main_window.hpp).
#include "ui/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QFileDialog>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>

#include <qcustomplot.h>

#include "data/profile/profile_methods.hpp"
#include "data/store/store.hpp"
#include "probes/engine_probes.hpp"
#include "ui/builtin_load.hpp"
#include "ui/log_buffer.hpp"
#include "ui/models/event_model.hpp"
#include "ui/models/host_latency.hpp"
#include "ui/models/interval_history.hpp"
#include "ui/models/probe_model.hpp"
#include "ui/models/steering_model.hpp"
#include "ui/views/dashboard_view.hpp"
#include "ui/views/histogram_view.hpp"
#include "ui/views/plot_style.hpp"
#include "ui/views/probes_view.hpp"
#include "ui/views/steering_view.hpp"
#include "ui/views/topology_picker.hpp"
#include "ui/views/tuning_view.hpp"

#ifndef NVMETUNE_VERSION
#define NVMETUNE_VERSION "dev"
#endif

namespace ui {

namespace {

constexpr int log_max_blocks = 5000;
constexpr double window_seconds[] = {60, 5 * 60, 30 * 60, 0};
const char* window_names[] = {"1 min", "5 min", "30 min", "whole run"};
constexpr int default_window_index = 1;

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), _session(std::make_unique<EngineSession>()), _log_buffer(std::make_shared<LogBuffer>()) {
  setWindowTitle("nvmetune");
  _history = new IntervalHistory(this);
  _events = new EventModel(this);
  _load = new BuiltinLoad(this);
  _host = std::make_unique<HostLatencyTap>(_load->live());
  // The host's view of an interval is read when the interval arrives: the load's latency since
  // the previous one (nothing while no load of the app's own runs).
  connect(_session.get(), &EngineSession::snapshot, _history, [this](const stats::Snapshot& s) {
    const HostInterval host = _host->next();
    _history->add_snapshot(s, &host);
  });
  connect(_session.get(), &EngineSession::events, _events, &EventModel::add_events);
  connect(_session.get(), &EngineSession::history_loaded, _history, &IntervalHistory::add_history);
  connect(_session.get(), &EngineSession::attached, this, &MainWindow::on_attached);
  connect(_session.get(), &EngineSession::status_changed, this, &MainWindow::on_status);
  connect(_session.get(), &EngineSession::attach_failed, this, [this](const QString& error) {
    statusBar()->showMessage("attach failed", 10'000);
    QMessageBox::warning(this, "Attach", error);
  });

  _tabs = new QTabWidget(this);
  _dashboard = new DashboardView(*_history, *_events, _tabs);
  _histograms = new HistogramView(*_history, _tabs);
  _tuning = new TuningView(*_session, _tabs);
  _probes = new ProbesView(*_session, _tabs);
  _steering = new SteeringView(*_session, _tabs);
  _log = new QPlainTextEdit(_tabs);
  _log->setObjectName("log");
  _log->setReadOnly(true);
  _log->setMaximumBlockCount(log_max_blocks);
  _tabs->addTab(_dashboard, "&Dashboard");
  _tabs->addTab(_histograms, "&Histograms");
  _tabs->addTab(_tuning, "&Tuning");
  _tabs->addTab(_probes, "&Probes");
  _tabs->addTab(_steering, "St&eering");
  _tabs->addTab(_log, "&Log");
  setCentralWidget(_tabs);
  // The worker-mask picker shows the IRQ lines and RPS/XPS queues of each CPU too; steering.get
  // is read again when a panel that shows it comes up (affinity moves under us: irqbalance).
  connect(&_steering->model(), &SteeringModel::state_changed, this,
          [this] { _tuning->picker()->set_steering(_steering->model().by_cpu()); });
  connect(_tabs, &QTabWidget::currentChanged, this, [this](int) {
    if ((_tabs->currentWidget() == _tuning || _tabs->currentWidget() == _steering) && !_steering->model().busy() &&
        _session->status().connected)
      _steering->model().refresh();
  });

  build_menus();
  build_status_bar();
  connect(_load, &BuiltinLoad::finished, this, [this](const QString& text, bool ok) {
    _load_action->setChecked(false);
    _load_action->setText("Start load");
    _log->appendPlainText(text);
    statusBar()->showMessage(text, ok ? 10'000 : 0);
  });
  connect(_dashboard, &DashboardView::following_changed, this, [this](bool follow) { _pause->setChecked(!follow); });
  _log_timer.setInterval(log_drain_ms);
  connect(&_log_timer, &QTimer::timeout, this, [this] {
    for (const auto& line : _log_buffer->drain()) _log->appendPlainText(QString::fromStdString(line));
  });
  _log_timer.start();
  resize(1280, 800);
  restore_settings();
}

MainWindow::~MainWindow() = default;

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Attach...", QKeySequence::Open, this, &MainWindow::ask_attach)
      ->setStatusTip("Show an engine started with `nvmetune serve` through its control socket");
  file->addAction("&Export current view...", QKeySequence("Ctrl+E"), this, &MainWindow::export_current_view);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu("&View");
  for (int i = 0; i < _tabs->count(); ++i)
    view->addAction(_tabs->tabText(i).remove('&'), QKeySequence(QString("Ctrl+%1").arg(i + 1)), this,
                    [this, i] { _tabs->setCurrentIndex(i); });
  view->addSeparator();
  _pause = view->addAction("&Pause", QKeySequence("Space"));
  _pause->setCheckable(true);
  _pause->setToolTip("Stop following new intervals (zooming or panning a plot pauses too)");
  connect(_pause, &QAction::toggled, this, [this](bool paused) { _dashboard->set_following(!paused); });
  view->addAction("Load &history from the store", QKeySequence("Ctrl+H"), this, [this] {
    const double oldest = _history->size() ? _history->row(0).time_s : 0;
    _session->request_history(0, oldest > 0 ? static_cast<int64_t>(oldest * 1e9) - 1 : 0);
  })->setToolTip("Scroll back: the intervals the attached engine recorded before this window saw it (serve --record)");

  QToolBar* bar = addToolBar("Main");
  bar->setObjectName("main_toolbar");
  _load_action = bar->addAction("Start load");
  _load_action->setCheckable(true);
  _load_action->setShortcut(QKeySequence("Ctrl+L"));
  _load_action->setToolTip("Built-in load: random 4 KiB reads (70 %) and writes, 2 queues x QD 16, against the "
                           "shown engine's first listener (Ctrl+L)");
  connect(_load_action, &QAction::triggered, this, &MainWindow::toggle_load);
  bar->addSeparator();
  bar->addWidget(new QLabel(" Window: ", bar));
  _window_choice = new QComboBox(bar);
  for (const char* name : window_names) _window_choice->addItem(name);
  _window_choice->setToolTip("Time shown by the dashboard and the heatmaps");
  connect(_window_choice, &QComboBox::currentIndexChanged, this, &MainWindow::set_window_index);
  bar->addWidget(_window_choice);
  bar->addAction(_pause);
  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&About nvmetune", this, [this] {
    QMessageBox::about(this, "About nvmetune",
                       "nvmetune " NVMETUNE_VERSION "\nAn NVMe-over-Fabrics target (TCP and RDMA) with live tuning of its execution model.");
  });
}

void MainWindow::build_status_bar() {
  _engine_label = new QLabel("no engine", this);
  _state_label = new QLabel(this);
  _store_label = new QLabel(this);
  _probes_label = new QLabel(this);
  statusBar()->addWidget(_engine_label);
  statusBar()->addWidget(_state_label);
  statusBar()->addPermanentWidget(_probes_label);
  statusBar()->addPermanentWidget(_store_label);
  connect(&_probes->model(), &ProbeModel::refreshed, this, &MainWindow::show_probe_summary);
  show_probe_summary();
}

QString MainWindow::probe_summary() const { return _probes_label->text(); }

// "probes: runqlat, biolat" or why none can run, so a glance at any view tells what is measured.
void MainWindow::show_probe_summary() {
  const ProbeModel& m = _probes->model();
  QStringList running;
  int unavailable = 0;
  for (const auto& r : m.rows()) {
    if (r.running) running << QString::fromStdString(r.name);
    if (!r.available) ++unavailable;
  }
  if (!m.unavailable().isEmpty()) {
    _probes_label->setText("probes: none");
    _probes_label->setToolTip(m.unavailable());
  } else if (!m.rows().empty() && unavailable == int(m.rows().size())) {
    _probes_label->setText("probes: unavailable");
    _probes_label->setToolTip(QString::fromStdString(m.rows().front().reason));
  } else {
    _probes_label->setText(running.isEmpty() ? "probes: off" : "probes: " + running.join(", "));
    _probes_label->setToolTip("eBPF probes running beside the engine (Probes tab to start and stop them)");
  }
}

void MainWindow::attach_embedded(engine::Engine& engine, const QString& profile_db) {
  _history->clear();
  _events->clear();
  control::RpcMethodTable extra;
  probes::EngineProbes::add_methods(extra, probes::EngineProbes::install(engine));
  data::add_profile_methods(extra, data::engine_caller(engine),
                            profile_db.isEmpty() ? data::default_db_path() : profile_db.toStdString());
  _session->attach(control::make_embedded_client(engine, NVMETUNE_VERSION, std::move(extra)));
}

void MainWindow::attach_remote(const QString& path) {
  _history->clear();
  _events->clear();
  _session->attach_remote(path);
  QSettings().setValue("attach/last_socket", path);
}

engine::LogSink MainWindow::log_sink() const { return LogBuffer::sink(_log_buffer); }

void MainWindow::ask_attach() {
  bool ok = false;
  const QString last = QSettings().value("attach/last_socket", "/run/nvmetune/nvmetune.sock").toString();
  const QString path = QInputDialog::getText(this, "Attach to an engine",
                                             "Control socket of `nvmetune serve` (an SSH-forwarded socket works too):",
                                             QLineEdit::Normal, last, &ok);
  if (ok && !path.isEmpty()) attach_remote(path);
}

void MainWindow::on_attached(const SessionStatus& s) {
  if (s.kind == "remote") _history->clear(), _events->clear();
  on_status(s);
  _tuning->reload();
  _log->appendPlainText("showing the " + s.kind + " engine (" + s.address + ")");
}

void MainWindow::on_status(const SessionStatus& s) {
  const QString where = s.kind == "embedded" ? "embedded engine" : "remote engine " + s.address;
  setWindowTitle("nvmetune - " + where);
  _engine_label->setText(where + (s.traddr.isEmpty() ? "" : QString(" (listening on %1:%2)").arg(s.traddr).arg(s.port)));
  QString state = !s.connected ? "disconnected: " + s.error : s.running ? "running, mode " + s.mode : "stopped";
  _state_label->setText(state);
  _store_label->setText(s.recording ? QString("store: recording, %1 dropped intervals, %2 write errors")
                                          .arg(s.dropped_intervals)
                                          .arg(s.write_errors)
                                    : "store: not recording");
  _store_label->setToolTip(s.recording ? "The engine records every interval (serve --record / --db)"
                                       : "Start the engine with `nvmetune serve --record` to keep its history");
}

void MainWindow::toggle_load() {
  if (_load->running()) {
    _load->stop();
    _load_action->setText("Stopping load...");
    return;
  }
  const auto target = load_target();
  if (!target) {
    _load_action->setChecked(false);
    return statusBar()->showMessage("no listener or subsystem to load yet", 5000);
  }
  _load->start(BuiltinLoad::default_spec(*target));
  _load_action->setChecked(true);
  _load_action->setText("Stop load");
}

std::optional<initiator::Target> MainWindow::load_target() const {
  const SessionStatus& s = _session->status();
  if (s.traddr.isEmpty() || s.subnqn.isEmpty()) return std::nullopt;
  initiator::Target target;
  target.traddr = s.traddr.toStdString();
  target.port = static_cast<uint16_t>(s.port);
  target.subnqn = s.subnqn.toStdString();
  return target;
}

void MainWindow::set_window_index(int index) {
  if (index < 0 || index >= int(std::size(window_seconds))) return;
  if (_window_choice->currentIndex() != index) _window_choice->setCurrentIndex(index);
  _dashboard->set_window_s(window_seconds[index]);
  _histograms->set_window_s(window_seconds[index]);
}

void MainWindow::export_current_view() {
  QWidget* current = _tabs->currentWidget();
  auto plots = current->findChildren<QCustomPlot*>();
  if (plots.isEmpty()) return statusBar()->showMessage("this view has no plot to export", 5000);
  for (auto* plot : plots) {
    const QString path = QFileDialog::getSaveFileName(this, "Export " + plot->objectName(), plot->objectName() + ".png",
                                                      "PNG image (*.png);;PDF document (*.pdf);;CSV data (*.csv)");
    QString error;
    if (!path.isEmpty() && !save_plot(plot, path, error)) QMessageBox::warning(this, "Export", error);
  }
}

void MainWindow::restore_settings() {
  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  set_window_index(settings.value("window/time_window", default_window_index).toInt());
  _tabs->setCurrentIndex(settings.value("window/tab", 0).toInt());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  settings.setValue("window/time_window", _window_choice->currentIndex());
  settings.setValue("window/tab", _tabs->currentIndex());
  _load->stop();
  QMainWindow::closeEvent(event);
}

}  // namespace ui
