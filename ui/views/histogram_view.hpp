#pragma once
// Histograms: pick a source (the list is whatever IntervalHistory's sources are: data, not
// widgets); see the newest interval as log2 bars labelled like bcc ("16 -> 31 us") with p50
// and p99 lines, and a heatmap of the chosen window (time x log2 bucket, log colour scale;
// hovering a cell tells interval, bucket and count).
#include <QWidget>

#include <string>

class QCustomPlot;
class QCPBars;
class QCPColorMap;
class QListWidget;
class QMouseEvent;

namespace ui {

class IntervalHistory;

class HistogramView : public QWidget {
  Q_OBJECT

 public:
  explicit HistogramView(IntervalHistory& history, QWidget* parent = nullptr);

  QCustomPlot* bars_plot() const { return _bars_plot; }
  QCustomPlot* heatmap_plot() const { return _heat_plot; }
  QCPBars* bars() const { return _bars; }
  QCPColorMap* heatmap() const { return _heatmap; }
  const std::string& source() const { return _source; }
  // The history has seen source name (a probe's appear once it runs).
  bool has_source(const std::string& name) const;
  // The intervals the heatmap's columns show: [first, last) rows of the history.
  std::pair<size_t, size_t> heatmap_rows() const { return _heat_rows; }

 public slots:
  void set_source(const std::string& name);
  void set_window_s(double seconds);  // 0 = whole run
  void refresh();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void update_source_list();
  void update_bars();
  void update_heatmap();
  void show_cell_tooltip(QMouseEvent* e);

  IntervalHistory& _history;
  QListWidget* _sources = nullptr;
  QCustomPlot* _bars_plot = nullptr;
  QCustomPlot* _heat_plot = nullptr;
  QCPBars* _bars = nullptr;
  QCPColorMap* _heatmap = nullptr;
  std::string _source = "target_read_latency";
  double _window_s = 5 * 60;
  std::pair<size_t, size_t> _heat_rows{0, 0};
};

}  // namespace ui
