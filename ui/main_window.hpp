#pragma once
// The placeholder main window (the GUI issue makes it real): the engine's listeners and how to
// connect, a table of EngineStats counters, an IOPS plot of the last minute, and the engine log.
// The window references an Engine it does not own; the engine must outlive the window.
#include <QMainWindow>
#include <QTimer>

#include <memory>

#include "engine/control/engine.hpp"

class QCustomPlot;
class QLabel;
class QPlainTextEdit;
class QTableView;

namespace ui {

class EngineStatsModel;
class LogBuffer;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  static constexpr int refresh_interval_ms = 1000;
  static constexpr double plot_window_seconds = 60.0;

  explicit MainWindow(engine::Engine& engine, QWidget* parent = nullptr);
  ~MainWindow() override;

  // A LogSink that shows engine log lines in this window. Safe to call from any thread and
  // after the window is destroyed (lines are then dropped).
  engine::LogSink log_sink() const;

  EngineStatsModel* stats_model() const { return _stats; }

 public slots:
  // Samples the engine once: listeners, counters, plot, log. The timer calls it every second
  // while the window is shown.
  void refresh();

 protected:
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;

 private:
  QWidget* make_plot();
  void update_listeners();
  void update_plot();
  void drain_log();

  engine::Engine& _engine;
  std::shared_ptr<LogBuffer> _log_buffer;
  EngineStatsModel* _stats = nullptr;
  QLabel* _listeners = nullptr;
  QTableView* _table = nullptr;
  QCustomPlot* _plot = nullptr;
  QPlainTextEdit* _log = nullptr;
  QTimer _timer;
};

}  // namespace ui
