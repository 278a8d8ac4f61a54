#pragma once
// The main window: one engine shown at a time (embedded in this process or attached over its
// control socket), as a Dashboard, Histograms, Tuning, Probes, Steering and Log. Menus and shortcuts, the
// built-in load on the toolbar, the time window and pause shared by the time views, a status
// bar saying which engine is shown and how its recording is doing. Layout, the window choice
// and the last attached socket are remembered (QSettings).
#include <QMainWindow>
#include <QTimer>

#include <memory>
#include <optional>

#include "engine/control/engine.hpp"
#include "engine/initiator/target.hpp"
#include "ui/engine_session.hpp"

class QAction;
class QComboBox;
class QLabel;
class QPlainTextEdit;
class QTabWidget;

namespace ui {

class BuiltinLoad;
class HostLatencyTap;
class DashboardView;
class EventModel;
class HistogramView;
class IntervalHistory;
class LogBuffer;
class TuningView;
class ProbesView;
class SteeringView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  static constexpr int log_drain_ms = 500;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Shows the engine in this process (it must outlive the window or the next attach), with
  // what `nvmetune serve` adds to its methods: the eBPF probes (probes.*) and profiles.save
  // into profile_db (empty: data::default_db_path(), where `nvmetune profile` looks).
  void attach_embedded(engine::Engine& engine, const QString& profile_db = {});
  // Connects to a control socket on the session's thread; the status bar tells the outcome.
  void attach_remote(const QString& path);

  // A LogSink for the Log tab; safe from any thread, and after the window is gone.
  engine::LogSink log_sink() const;

  EngineSession& session() { return *_session; }
  IntervalHistory& history() { return *_history; }
  EventModel& events() { return *_events; }
  DashboardView* dashboard() const { return _dashboard; }
  QString probe_summary() const;  // the status bar's probes field
  HistogramView* histograms() const { return _histograms; }
  TuningView* tuning() const { return _tuning; }
  ProbesView* probes() const { return _probes; }
  SteeringView* steering() const { return _steering; }
  QTabWidget* tabs() const { return _tabs; }
  BuiltinLoad& load() { return *_load; }
  // Where the built-in load connects: the shown engine's first listener and subsystem (none yet:
  // nullopt).
  std::optional<initiator::Target> load_target() const;
  QLabel* engine_label() const { return _engine_label; }

 public slots:
  void toggle_load();
  void set_window_index(int index);  // 0: 1 min, 1: 5 min, 2: 30 min, 3: whole run

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_menus();
  void build_status_bar();
  void show_probe_summary();
  void on_attached(const SessionStatus& s);
  void on_status(const SessionStatus& s);
  void ask_attach();
  void export_current_view();
  void restore_settings();

  std::unique_ptr<EngineSession> _session;
  IntervalHistory* _history = nullptr;
  EventModel* _events = nullptr;
  BuiltinLoad* _load = nullptr;
  std::unique_ptr<HostLatencyTap> _host;  // the load's latency per interval, for the history
  std::shared_ptr<LogBuffer> _log_buffer;
  QTabWidget* _tabs = nullptr;
  DashboardView* _dashboard = nullptr;
  HistogramView* _histograms = nullptr;
  TuningView* _tuning = nullptr;
  ProbesView* _probes = nullptr;
  SteeringView* _steering = nullptr;
  QPlainTextEdit* _log = nullptr;
  QComboBox* _window_choice = nullptr;
  QAction* _pause = nullptr;
  QAction* _load_action = nullptr;
  QLabel* _engine_label = nullptr;
  QLabel* _state_label = nullptr;
  QLabel* _store_label = nullptr;
  QLabel* _probes_label = nullptr;
  QTimer _log_timer;
};

}  // namespace ui
