#pragma once
// The dashboard: stacked time plots on one shared time axis (zoom and pan move them all):
// read/write IOPS, read/write MiB/s, target latency p50/p99/p99.9 with the host's (the app's own
// load) beside it in paler lines of the same hues, where the target's time goes (stacked stages, stage_panel.hpp), per-thread
// CPU (busy solid, idle polling dashed), probe rates, connected queues. A caption above the
// latency says from where to where it measures; hovering the latency or stage panel tells each
// stage's span and the interval's figures. Every event is a labelled vertical marker on every
// plot, its text as tooltip. Draws IntervalHistory and EventModel; no engine access of its own.
#include <QVector>
#include <QWidget>

#include <map>
#include <memory>
#include <string>
#include <vector>

class QCustomPlot;
class QCPAxisRect;
class QCPGraph;
class QCPGraphData;
class QCPItemText;
class QCPTextElement;
class QMouseEvent;

namespace ui {

class IntervalHistory;
class EventModel;
struct IntervalRow;
struct EventMarker;
class StagePanel;

class DashboardView : public QWidget {
  Q_OBJECT

 public:
  enum Panel { iops_panel, mib_panel, latency_panel, stages_panel, cpu_panel, probes_panel, queues_panel, panel_count };

  DashboardView(IntervalHistory& history, EventModel& events, QWidget* parent = nullptr);
  ~DashboardView() override;

  QCustomPlot* plot() const { return _plot; }
  QCPAxisRect* panel(Panel p) const { return _rects[p]; }
  // The graph named `name` ("read IOPS", "target p99", "host p99", "scheduling" (a stage's band),
  // "nvmt-poll-0 busy", ...), or nullptr.
  QCPGraph* graph(const QString& name) const;
  // Marker lines drawn on panel p (one per event in view).
  int marker_count(Panel p) const;
  // The text items labelling markers (one per event), placed inside the top panel at each layout.
  std::vector<QCPItemText*> marker_labels() const;
  // The line above the latency panel saying what it measures.
  QCPTextElement* latency_caption() const { return _caption; }
  // What a hover at pos (plot pixels) shows: marker texts, else the latency and stage panels'
  // explanation with the interval's figures; "" elsewhere.
  QString tooltip_at(QPointF pos) const;
  double window_s() const { return _window_s; }
  bool following() const { return _following; }

 public slots:
  // Seconds shown up to the newest interval; 0 = the whole run.
  void set_window_s(double seconds);
  // Paused: new intervals are kept but the view stops moving (zooming or panning pauses too).
  void set_following(bool follow);
  void restyle();

 signals:
  void following_changed(bool follow);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void build_panels();
  QCPGraph* add_graph(Panel p, const QString& name, int color, Qt::PenStyle style = Qt::SolidLine);
  void on_appended(size_t first, size_t count);
  void rebuild();
  using Points = std::map<QCPGraph*, QVector<QCPGraphData>>;
  // Adds r's points to the graphs, or to batch when given (set by the caller in one go).
  void add_row(const IntervalRow& r, Points* batch = nullptr);
  void add_marker(const EventMarker& m);
  void on_markers_inserted(int first, int last);
  void follow();
  void show_tooltip(QMouseEvent* e);
  // Keeps every label inside the top panel: right of its line, left near the right edge,
  // elided when neither side fits; hidden while its line is out of view.
  void place_marker_labels();

  IntervalHistory& _history;
  EventModel& _events;
  QCustomPlot* _plot = nullptr;
  QCPAxisRect* _rects[panel_count] = {};
  QCPTextElement* _caption = nullptr;
  std::unique_ptr<StagePanel> _stages;
  std::map<QString, int> _rate_colors;  // a probe series or "cpuN" -> its colour on the rate panel
  std::map<QString, QCPGraph*> _graphs;
  int _cpu_graphs = 0;
  std::vector<std::pair<double, QString>> _marker_tips;  // time, tooltip
  struct MarkerLabel {
    QCPItemText* item;
    double time_s;
    QString text;  // in full (the item may show it elided)
  };
  std::vector<MarkerLabel> _labels;
  double _window_s = 5 * 60;
  bool _following = true;
  bool _syncing = false;  // re-entrancy guard while one x-axis range is copied to the others
};

}  // namespace ui
