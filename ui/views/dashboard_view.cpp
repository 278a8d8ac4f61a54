// The dashboard's plots (dashboard_view.hpp).
#include "ui/views/dashboard_view.hpp"

#include <QEvent>
#include <QFontMetrics>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "ui/models/event_model.hpp"
#include "ui/models/interval_history.hpp"
#include "ui/views/plot_style.hpp"
#include "ui/views/stage_panel.hpp"

namespace ui {

namespace {

constexpr int marker_hover_px = 5;
constexpr double marker_label_step = 0.14;  // of the panel's height
constexpr size_t marker_label_rows = 4;
constexpr double line_width = 1.5;
constexpr size_t antialias_max_points = 600;
constexpr int dimmed_alpha = 170;  // idle polling and queue wait: the same hue, lighter
constexpr double min_log_us = 0.1;  // the latency axis' floor (log scale has no zero)
constexpr double min_log_rate = 1;  // the probe-rate axis' floor, events/s
constexpr double marker_label_top = 0.3;    // below the legend
constexpr int marker_label_gap_px = 3;       // between a marker line and its label

const char* panel_titles[DashboardView::panel_count] = {"IOPS", "MiB/s", "latency (µs)", "by stage (µs)",
                                                        "CPU % of one core", "probe events/s", "queues"};
constexpr double caption_font_scale = 0.85;
constexpr int caption_min_width_px = 1;  // any width: not the text's
constexpr double caption_stretch = 0.01;  // the caption's row takes its text's height, no more
// Percentile lines: one hue per percentile, the target's and the host's paler beside it (a pen
// style other than solid draws paler: add_graph).
struct PercentileLine {
  const char* name;
  int color;
};
constexpr PercentileLine percentile_lines[] = {{"p50", 2}, {"p99", 1}, {"p99.9", 3}};
// Row heights: the latency and its stages are what an operator watches; counts need less.
double panel_stretch(int p) {
  switch (p) {
    case DashboardView::latency_panel: return 1.6;
    case DashboardView::stages_panel: return 1.2;
    case DashboardView::queues_panel:
    case DashboardView::probes_panel: return 0.6;
    default: return 1.0;
  }
}
// Log panels: room above the data for the legend, which sits at the top (x of the largest value).
constexpr double log_headroom[DashboardView::panel_count] = {2, 2, 8, 2, 2, 2, 2};

}  // namespace

DashboardView::DashboardView(IntervalHistory& history, EventModel& events, QWidget* parent)
    : QWidget(parent), _history(history), _events(events) {
  _plot = new QCustomPlot(this);
  _plot->setObjectName("dashboard");
  _plot->setNoAntialiasingOnDrag(true);
  // One polyline per graph instead of a segment each: the difference between ~1 s and a few ms
  // for 30 minutes of 25 series.
  _plot->setPlottingHint(QCP::phFastPolylines, true);
  _plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  _plot->installEventFilter(this);
  _plot->setMouseTracking(true);
  _plot->setAutoAddPlottableToLegend(false);  // each panel has its own legend
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(_plot);
  build_panels();
  add_export_menu(_plot);
  connect(&_history, &IntervalHistory::appended, this, &DashboardView::on_appended);
  connect(&_history, &IntervalHistory::reset_rows, this, &DashboardView::rebuild);
  connect(&_events, &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex&, int first, int last) { on_markers_inserted(first, last); });
  connect(&_events, &QAbstractItemModel::modelReset, this, &DashboardView::rebuild);
  // Labels are placed in pixels, so after the layout knows the panel's rect.
  connect(_plot, &QCustomPlot::afterLayout, this, &DashboardView::place_marker_labels);
  rebuild();
}

DashboardView::~DashboardView() = default;

void DashboardView::build_panels() {
  _plot->plotLayout()->clear();
  int row = 0;
  auto* margins = new QCPMarginGroup(_plot);
  QSharedPointer<QCPAxisTickerDateTime> time_ticker(new QCPAxisTickerDateTime);
  time_ticker->setDateTimeFormat("hh:mm:ss");
  for (int p = 0; p < panel_count; ++p) {
    if (p == latency_panel) {
      _caption = new QCPTextElement(_plot, StagePanel::caption());
      QFont f = _caption->font();
      f.setPointSizeF(f.pointSizeF() * caption_font_scale);
      _caption->setFont(f);
      // Its text's width must not become the window's minimum width (QCustomPlot's minimum
      // size is its layout's); at the window sizes the app opens with, it fits.
      _caption->setMinimumSize(caption_min_width_px, 0);
      _plot->plotLayout()->addElement(row, 0, _caption);
      _plot->plotLayout()->setRowStretchFactor(row++, caption_stretch);
    }
    auto* rect = new QCPAxisRect(_plot);
    _plot->plotLayout()->addElement(row, 0, rect);
    _plot->plotLayout()->setRowStretchFactor(row++, panel_stretch(p));
    rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
    rect->setRangeDrag(Qt::Horizontal);
    rect->setRangeZoom(Qt::Horizontal);
    rect->axis(QCPAxis::atBottom)->setTicker(time_ticker);
    rect->axis(QCPAxis::atBottom)->setTickLabels(p == panel_count - 1);
    rect->axis(QCPAxis::atLeft)->setLabel(panel_titles[p]);
    auto* legend = new QCPLegend;
    rect->insetLayout()->addElement(legend, Qt::AlignTop | Qt::AlignLeft);
    legend->setLayer("legend");
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setWrap(6);
    QFont f = legend->font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    legend->setFont(f);
    _rects[p] = rect;
    connect(rect->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this, p](const QCPRange& r) {
              if (_syncing) return;
              _syncing = true;
              for (int q = 0; q < panel_count; ++q)
                if (q != p) _rects[q]->axis(QCPAxis::atBottom)->setRange(r);
              _syncing = false;
            });
  }
  _plot->plotLayout()->setRowSpacing(2);
  // Latencies and probe rates span decades: log axes.
  for (Panel p : {latency_panel, probes_panel}) {
    auto* axis = _rects[p]->axis(QCPAxis::atLeft);
    axis->setScaleType(QCPAxis::stLogarithmic);
    axis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  }
  _rects[queues_panel]->axis(QCPAxis::atBottom)->setLabel("time");
  QSharedPointer<QCPAxisTickerFixed> whole(new QCPAxisTickerFixed);  // queues come whole
  whole->setTickStep(1);
  whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  _rects[queues_panel]->axis(QCPAxis::atLeft)->setTicker(whole);
  add_graph(iops_panel, "read IOPS", 0);
  add_graph(iops_panel, "write IOPS", 1);
  add_graph(mib_panel, "read MiB/s", 0);
  add_graph(mib_panel, "write MiB/s", 1);
  for (const char* who : {"target ", "host "})
    for (const auto& line : percentile_lines)
      add_graph(latency_panel, who + QString(line.name), line.color, *who == 'h' ? Qt::DashLine : Qt::SolidLine);
  _stages = std::make_unique<StagePanel>(_rects[stages_panel]);
  for (auto* band : _stages->bands()) _graphs[band->name()] = band;
  add_graph(queues_panel, "connected queues", 9);
  style_plot(_plot);
}

QCPGraph* DashboardView::add_graph(Panel p, const QString& name, int color, Qt::PenStyle style) {
  auto* rect = _rects[p];
  auto* g = _plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  g->setName(name);
  QColor c = series_color(color);
  if (style != Qt::SolidLine) c.setAlpha(dimmed_alpha);  // dashed wide pens are slow in Qt's raster engine
  g->setPen(QPen(c, line_width));
  g->setAdaptiveSampling(true);
  if (auto* legend = qobject_cast<QCPLegend*>(rect->insetLayout()->elementAt(0))) g->addToLegend(legend);
  _graphs[name] = g;
  return g;
}

QCPGraph* DashboardView::graph(const QString& name) const {
  auto it = _graphs.find(name);
  return it == _graphs.end() ? nullptr : it->second;
}

int DashboardView::marker_count(Panel p) const {
  int n = 0;
  for (int i = 0; i < _plot->itemCount(); ++i)
    if (auto* line = qobject_cast<QCPItemStraightLine*>(_plot->item(i)); line && line->clipAxisRect() == _rects[p]) ++n;
  return n;
}

void DashboardView::add_row(const IntervalRow& r, Points* batch) {
  const double t = r.time_s;
  auto add = [batch](QCPGraph* g, double t, double v) {
    if (batch) (*batch)[g].append(QCPGraphData(t, v));
    else g->addData(t, v);
  };
  add(_graphs["read IOPS"], t, r.read_iops);
  add(_graphs["write IOPS"], t, r.write_iops);
  add(_graphs["read MiB/s"], t, r.read_mib_s);
  add(_graphs["write MiB/s"], t, r.write_mib_s);
  const auto lat = [](double us) { return std::max(us, min_log_us); };
  // No commands: no latency, a gap rather than a fake floor.
  if (r.target_commands) {
    add(_graphs["target p50"], t, lat(r.p50_us));
    add(_graphs["target p99"], t, lat(r.p99_us));
    add(_graphs["target p99.9"], t, lat(r.p999_us));
  }
  if (r.host_ios) {
    add(_graphs["host p50"], t, lat(r.host_p50_us));
    add(_graphs["host p99"], t, lat(r.host_p99_us));
    add(_graphs["host p99.9"], t, lat(r.host_p999_us));
  }
  for (const auto& [band, top] : _stages->points(r)) add(band, t, top);
  add(_graphs["connected queues"], t, r.queues);
  for (const auto& w : r.workers) {
    const QString busy = QString::fromStdString(w.name) + " busy";
    QCPGraph* g = graph(busy);
    if (!g) {
      const int color = _cpu_graphs++;
      g = add_graph(cpu_panel, busy, color);
      add_graph(cpu_panel, QString::fromStdString(w.name) + " idle-poll", color, Qt::DotLine);
    }
    add(g, t, w.busy_pct);
    add(graph(QString::fromStdString(w.name) + " idle-poll"), t, w.idle_poll_pct);
  }
  // Probe rates on a log panel: a colour per probe, and per CPU for IRQ rates (its softirqs
  // dotted in its hard IRQs' colour, so each CPU reads as one pair). No zero on a log axis: a gap.
  auto add_rate = [&](const QString& name, const QString& colour_key, Qt::PenStyle style, double rate) {
    QCPGraph* g = graph(name);
    if (!g) g = add_graph(probes_panel, name, _rate_colors.try_emplace(colour_key, int(_rate_colors.size()) + 5).first->second, style);
    if (rate > 0) add(g, t, rate);
  };
  for (const auto& [probe, rate] : r.probe_rates) {
    const QString name = QString::fromStdString(probe) + " (eBPF)";
    add_rate(name, name, Qt::SolidLine, rate);
  }
  for (const auto& [series, rate] : r.cpu_irq_rates) {
    const QString name = QString::fromStdString(series);
    add_rate(name, name.section(' ', 0, 0), name.endsWith("softirq/s") ? Qt::DotLine : Qt::SolidLine, rate);
  }
}

void DashboardView::on_appended(size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) add_row(_history.row(i));
  follow();
  _plot->replot(QCustomPlot::rpQueuedReplot);
}

void DashboardView::rebuild() {
  for (auto& [name, g] : _graphs) g->data()->clear();
  _plot->clearItems();
  _marker_tips.clear();
  _labels.clear();
  // An hour of rows at once: each graph's points set in one go, not appended one by one.
  Points batch;
  for (size_t i = 0; i < _history.size(); ++i) add_row(_history.row(i), &batch);
  for (auto& [g, points] : batch) g->data()->set(points, true);
  for (const auto& m : _events.markers()) add_marker(m);
  follow();
  _plot->replot(QCustomPlot::rpQueuedReplot);
}

void DashboardView::on_markers_inserted(int first, int last) {
  for (int i = first; i <= last; ++i) add_marker(_events.markers()[static_cast<size_t>(i)]);
  _plot->replot(QCustomPlot::rpQueuedReplot);
}

void DashboardView::add_marker(const EventMarker& m) {
  const QColor color = marker_color();
  for (int p = 0; p < panel_count; ++p) {
    auto* line = new QCPItemStraightLine(_plot);
    line->setClipAxisRect(_rects[p]);
    for (auto* pos : {line->point1, line->point2}) pos->setAxes(_rects[p]->axis(QCPAxis::atBottom), _rects[p]->axis(QCPAxis::atLeft));
    line->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
    line->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    line->point1->setAxisRect(_rects[p]);
    line->point2->setAxisRect(_rects[p]);
    line->point1->setCoords(m.time_s, 0);
    line->point2->setCoords(m.time_s, 1);
    line->setPen(QPen(color, 1));
  }
  auto* label = new QCPItemText(_plot);
  label->setClipAxisRect(_rects[0]);
  label->position->setAxes(_rects[0]->axis(QCPAxis::atBottom), _rects[0]->axis(QCPAxis::atLeft));
  label->position->setAxisRect(_rects[0]);
  label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  // Events come in bursts (a connect per queue): stagger the labels so they stay readable.
  label->position->setCoords(m.time_s, marker_label_top + marker_label_step * double(_marker_tips.size() % marker_label_rows));
  label->setText(QString::fromStdString(m.label));
  label->setColor(color);
  label->setVisible(false);  // until place_marker_labels() has the panel's rect
  _labels.push_back({label, m.time_s, label->text()});
  _marker_tips.emplace_back(m.time_s, QString::fromStdString(m.tooltip));
}

std::vector<QCPItemText*> DashboardView::marker_labels() const {
  std::vector<QCPItemText*> out;
  for (const auto& l : _labels) out.push_back(l.item);
  return out;
}

void DashboardView::place_marker_labels() {
  const QRect rect = _rects[0]->rect();
  QCPAxis* x = _rects[0]->axis(QCPAxis::atBottom);
  for (auto& l : _labels) {
    const double px = x->coordToPixel(l.time_s);
    if (px < rect.left() || px > rect.right()) {
      l.item->setVisible(false);
      continue;
    }
    const QFontMetrics fm(l.item->font());
    const int right = int(rect.right() - px) - 2 * marker_label_gap_px;
    const int left = int(px - rect.left()) - 2 * marker_label_gap_px;
    const int width = fm.horizontalAdvance(l.text);
    const bool on_right = width <= right || right >= left;
    l.item->setText(width <= (on_right ? right : left) ? l.text : fm.elidedText(l.text, Qt::ElideRight, on_right ? right : left));
    l.item->setPositionAlignment(Qt::AlignTop | (on_right ? Qt::AlignLeft : Qt::AlignRight));
    l.item->setPadding(on_right ? QMargins(marker_label_gap_px, 0, 0, 0) : QMargins(0, 0, marker_label_gap_px, 0));
    l.item->setVisible(true);
  }
}

void DashboardView::follow() {
  if (!_following || _history.size() == 0) return;
  const double last = _history.row(_history.size() - 1).time_s;
  const double first = _history.row(0).time_s;
  const double from = _window_s > 0 ? last - _window_s : first;
  // Antialiasing doubles the cost of a replot; beyond a point per pixel or two it shows nothing.
  const auto [lo_row, hi_row] = _history.rows_between(from, last);
  _plot->setNotAntialiasedElements(hi_row - lo_row > antialias_max_points ? QCP::aePlottables : QCP::aeNone);
  _rects[0]->axis(QCPAxis::atBottom)->setRange(from, last + 0.5);
  for (int p = 0; p < panel_count; ++p) {
    if (p == latency_panel || p == probes_panel) {  // log axes: a decade around the data
      const double floor = p == latency_panel ? min_log_us : min_log_rate;
      double lo = 1e300, hi = 0;
      for (auto* g : _rects[p]->graphs()) {
        bool found = false;
        auto r = g->getValueRange(found, QCP::sdBoth, QCPRange(from, last + 1));
        if (found) lo = std::min(lo, r.lower), hi = std::max(hi, r.upper);
      }
      if (hi > 0) _rects[p]->axis(QCPAxis::atLeft)->setRange(std::max(floor, lo / 2), hi * log_headroom[p]);
      else _rects[p]->axis(QCPAxis::atLeft)->setRange(floor, floor * 1000);
      continue;
    }
    double top = 1;
    for (auto* g : _rects[p]->graphs()) {
      bool found = false;
      auto r = g->getValueRange(found, QCP::sdBoth, QCPRange(from, last + 1));
      if (found) top = std::max(top, r.upper);
    }
    _rects[p]->axis(QCPAxis::atLeft)->setRange(0, top * 1.15);
  }
}

void DashboardView::set_window_s(double seconds) {
  _window_s = seconds;
  set_following(true);
}

void DashboardView::set_following(bool follow_now) {
  if (_following == follow_now) return;
  _following = follow_now;
  if (_following) {
    follow();
    _plot->replot();
  }
  emit following_changed(_following);
}

void DashboardView::restyle() {
  style_plot(_plot);
  _plot->replot();
}

void DashboardView::changeEvent(QEvent* event) { QWidget::changeEvent(event); }

bool DashboardView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == _plot) {
    if (event->type() == QEvent::PaletteChange) restyle();  // the plot's own palette is the new one now
    if (event->type() == QEvent::Wheel || event->type() == QEvent::MouseButtonPress) set_following(false);
    if (event->type() == QEvent::MouseMove) show_tooltip(static_cast<QMouseEvent*>(event));
  }
  return QWidget::eventFilter(watched, event);
}

QString DashboardView::tooltip_at(QPointF pos) const {
  QCPAxis* x = _rects[0]->axis(QCPAxis::atBottom);
  QStringList tips;
  for (const auto& [t, tip] : _marker_tips)
    if (std::abs(x->coordToPixel(t) - pos.x()) <= marker_hover_px) tips << tip;
  if (!tips.isEmpty()) return tips.join("\n\n");
  const bool on_caption = _caption->outerRect().contains(pos.toPoint());
  const bool on_latency = on_caption || _rects[latency_panel]->rect().contains(pos.toPoint()) ||
                          _rects[stages_panel]->rect().contains(pos.toPoint());
  if (!on_latency) return {};
  QString text = StagePanel::explanation();
  // The interval under the pointer: the first that ends at or after its time.
  const auto first = _history.rows_between(x->pixelToCoord(pos.x()), 1e300).first;
  if (!on_caption && first < _history.size()) text = StagePanel::interval_text(_history.row(first)) + "\n\n" + text;
  return text;
}

void DashboardView::show_tooltip(QMouseEvent* e) {
  const QString tip = tooltip_at(e->position());
  if (tip.isEmpty()) return QToolTip::hideText();
  QToolTip::showText(e->globalPosition().toPoint(), tip, _plot);
}

}  // namespace ui
