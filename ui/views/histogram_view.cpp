// The histogram bars and heatmap (histogram_view.hpp).
#include "ui/views/histogram_view.hpp"

#include <QDateTime>
#include <QEvent>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMouseEvent>
#include <QSplitter>
#include <QToolTip>

#include <cmath>

#include <qcustomplot.h>

#include "ui/models/interval_history.hpp"
#include "ui/views/plot_style.hpp"

namespace ui {

namespace {

constexpr double ns_per_us = 1e3;
constexpr int rows_margin = 2;  // empty rows kept around the non-empty ones
constexpr const char* widest_source = "runqlat tid=4194304,comm=nvmt-poll/0";  // a probe's per-thread source
constexpr int sources_margin_px = 24;  // frame and scroll bar
constexpr int scale_gap_px = 6;  // right of the colour scale's rotated title: not at the widget's very edge

QSharedPointer<QCPAxisTickerText> bucket_ticker() {
  QSharedPointer<QCPAxisTickerText> t(new QCPAxisTickerText);
  for (size_t i = 0; i < log2_rows_shown; ++i) t->addTick(double(i), QString::fromStdString(log2_row_label(i)));
  return t;
}

// A latency in us as a fractional row (row i spans [2^i, 2^(i+1)) us; row 0 is 0..1).
double row_position(double us) { return us < 1 ? 0 : std::log2(us); }

// The rows with counts in any of the given columns, widened by the margin.
std::pair<int, int> used_rows(const IntervalHistory& h, int source, size_t from, size_t to, const std::vector<uint64_t>* extra) {
  int lo = int(log2_rows_shown), hi = -1;
  auto scan = [&](const std::vector<uint64_t>& rows) {
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i]) lo = std::min(lo, int(i)), hi = std::max(hi, int(i));
  };
  for (size_t r = from; r < to; ++r)
    if (source >= 0 && size_t(source) < h.row(r).log2.size()) scan(h.row(r).log2[size_t(source)]);
  if (extra) scan(*extra);
  if (hi < 0) return {0, 8};
  return {std::max(0, lo - rows_margin), std::min(int(log2_rows_shown) - 1, hi + rows_margin)};
}

}  // namespace

HistogramView::HistogramView(IntervalHistory& history, QWidget* parent) : QWidget(parent), _history(history) {
  _sources = new QListWidget(this);
  _sources->setMaximumWidth(fontMetrics().horizontalAdvance(widest_source) + sources_margin_px);
  _sources->setToolTip("Histogram sources of the engine (more appear here as probes attach)");
  _bars_plot = new QCustomPlot(this);
  _bars_plot->setObjectName("histogram");
  _heat_plot = new QCustomPlot(this);
  _heat_plot->setObjectName("heatmap");
  _heat_plot->setMouseTracking(true);
  _heat_plot->installEventFilter(this);
  _bars_plot->installEventFilter(this);

  _bars = new QCPBars(_bars_plot->yAxis, _bars_plot->xAxis);  // horizontal, rows top to bottom like bcc
  _bars->setName("count");
  _bars->setWidth(0.8);
  _bars_plot->yAxis->setTicker(bucket_ticker());
  _bars_plot->yAxis->setRangeReversed(true);
  _bars_plot->xAxis->setLabel("count in the newest interval");
  _bars_plot->plotLayout()->insertRow(0);
  _bars_plot->plotLayout()->addElement(0, 0, new QCPTextElement(_bars_plot, "", QFont(font().family(), -1, QFont::Bold)));

  _heatmap = new QCPColorMap(_heat_plot->xAxis, _heat_plot->yAxis);
  _heatmap->setName("count");
  _heatmap->setInterpolate(false);
  _heat_plot->yAxis->setTicker(bucket_ticker());
  QSharedPointer<QCPAxisTickerDateTime> time_ticker(new QCPAxisTickerDateTime);
  time_ticker->setDateTimeFormat("hh:mm:ss");
  _heat_plot->xAxis->setTicker(time_ticker);
  _heat_plot->xAxis->setLabel("time");
  auto* scale = new QCPColorScale(_heat_plot);
  _heat_plot->plotLayout()->addElement(0, 1, scale);
  scale->setDataScaleType(QCPAxis::stLogarithmic);
  scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  scale->axis()->setLabel("count per interval (log)");
  scale->setMinimumMargins(QMargins(0, scale_gap_px, scale_gap_px, scale_gap_px));
  QCPColorGradient gradient(QCPColorGradient::gpThermal);
  gradient.setNanHandling(QCPColorGradient::nhTransparent);
  _heatmap->setGradient(gradient);
  _heatmap->setColorScale(scale);
  auto* margins = new QCPMarginGroup(_heat_plot);
  _heat_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  for (auto* p : {_bars_plot, _heat_plot}) add_export_menu(p);

  auto* plots = new QSplitter(Qt::Vertical, this);
  plots->addWidget(_bars_plot);
  plots->addWidget(_heat_plot);
  plots->setStretchFactor(0, 1);
  plots->setStretchFactor(1, 1);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(_sources);
  layout->addWidget(plots, 1);

  connect(_sources, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0 && size_t(row) < _history.source_names().size()) set_source(_history.source_names()[size_t(row)]);
  });
  connect(&_history, &IntervalHistory::appended, this, &HistogramView::refresh);
  connect(&_history, &IntervalHistory::reset_rows, this, &HistogramView::refresh);
  style_plot(_bars_plot);
  style_plot(_heat_plot);
  refresh();
}

void HistogramView::set_source(const std::string& name) {
  _source = name;
  refresh();
}

bool HistogramView::has_source(const std::string& name) const { return _history.source_index(name) >= 0; }

void HistogramView::set_window_s(double seconds) {
  _window_s = seconds;
  refresh();
}

void HistogramView::refresh() {
  update_source_list();
  update_bars();
  update_heatmap();
  _bars_plot->replot(QCustomPlot::rpQueuedReplot);
  _heat_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HistogramView::update_source_list() {
  const auto& titles = _history.source_titles();
  if (_sources->count() != int(titles.size())) {
    QSignalBlocker block(_sources);
    _sources->clear();
    for (const auto& t : titles) {
      _sources->addItem(QString::fromStdString(t));
      _sources->item(_sources->count() - 1)->setToolTip(QString::fromStdString(t));
    }
  }
  const int current = _history.source_index(_source);
  if (current >= 0 && _sources->currentRow() != current) {
    QSignalBlocker block(_sources);
    _sources->setCurrentRow(current);
  }
}

void HistogramView::update_bars() {
  const HistogramSource* src = nullptr;
  for (const auto& s : _history.current())
    if (s.name == _source) src = &s;
  _bars_plot->clearItems();
  auto* title = qobject_cast<QCPTextElement*>(_bars_plot->plotLayout()->element(0, 0));
  if (!src) {
    _bars->data()->clear();
    if (title) title->setText("no interval yet");
    return;
  }
  const auto rows = log2_us_rows(src->hist);
  QVector<double> keys, values;
  double top = 1;
  for (size_t i = 0; i < rows.size(); ++i) {
    keys << double(i);
    values << double(rows[i]);
    top = std::max(top, double(rows[i]));
  }
  _bars->setData(keys, values, true);
  _bars->setBrush(series_color(0));
  _bars->setPen(Qt::NoPen);
  const auto [lo, hi] = used_rows(_history, -1, 0, 0, &rows);
  _bars_plot->yAxis->setRange(lo - 0.6, hi + 0.6);
  _bars_plot->xAxis->setRange(0, top * 1.1);
  const double p50 = src->hist.percentile(50) / ns_per_us, p99 = src->hist.percentile(99) / ns_per_us;
  int color = 2;
  for (auto [name, us] : {std::pair{"p50", p50}, std::pair{"p99", p99}}) {
    auto* line = new QCPItemStraightLine(_bars_plot);
    line->point1->setCoords(0, row_position(us));
    line->point2->setCoords(1, row_position(us));
    line->setPen(QPen(series_color(color), 1.5, Qt::DashLine));
    auto* text = new QCPItemText(_bars_plot);
    text->position->setCoords(top * 1.08, row_position(us));
    text->setPositionAlignment(Qt::AlignRight | (color == 2 ? Qt::AlignBottom : Qt::AlignTop));
    text->setText(QString("%1 %2 us").arg(name).arg(us, 0, 'f', 1));
    text->setColor(series_color(color++));
  }
  if (title)
    title->setText(QString("%1: %2 %3, p50 %4 us, p99 %5 us, max %6 us")
                       .arg(QString::fromStdString(src->title))
                       .arg(src->hist.count)
                       .arg(src->name.starts_with("probe:") ? "events" : "commands")
                       .arg(p50, 0, 'f', 1)
                       .arg(p99, 0, 'f', 1)
                       .arg(double(src->hist.max_ns) / ns_per_us, 0, 'f', 1));
  _bars_plot->setToolTip(QString::fromStdString(src->help));
}

void HistogramView::update_heatmap() {
  const int source = _history.source_index(_source);
  const size_t n = _history.size();
  if (n == 0 || source < 0) {
    _heatmap->data()->clear();
    _heat_rows = {0, 0};
    return;
  }
  const double last = _history.row(n - 1).time_s;
  _heat_rows = _window_s > 0 ? _history.rows_between(last - _window_s, last) : std::pair<size_t, size_t>{0, n};
  const auto [from, to] = _heat_rows;
  const int columns = int(to - from);
  _heatmap->data()->setSize(columns, int(log2_rows_shown));
  const double t0 = _history.row(from).time_s, t1 = _history.row(to - 1).time_s;
  _heatmap->data()->setRange(QCPRange(t0, columns > 1 ? t1 : t0 + 1), QCPRange(0, double(log2_rows_shown - 1)));
  double top = 1;
  for (int x = 0; x < columns; ++x) {
    const auto& row = _history.row(from + size_t(x));
    for (int y = 0; y < int(log2_rows_shown); ++y) {
      const uint64_t c = size_t(source) < row.log2.size() && !row.log2[size_t(source)].empty() ? row.log2[size_t(source)][size_t(y)] : 0;
      _heatmap->data()->setCell(x, y, c ? double(c) : std::nan(""));
      top = std::max(top, double(c));
    }
  }
  _heatmap->setDataRange(QCPRange(1, std::max(top, 10.0)));
  const auto [lo, hi] = used_rows(_history, source, from, to, nullptr);
  _heat_plot->yAxis->setRange(lo - 0.5, hi + 0.5);
  const double step = columns > 1 ? (t1 - t0) / (columns - 1) : 1;
  _heat_plot->xAxis->setRange(t0 - step / 2, (columns > 1 ? t1 : t0 + 1) + step / 2);
}

bool HistogramView::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::PaletteChange)
    if (auto* plot = qobject_cast<QCustomPlot*>(watched)) style_plot(plot), plot->replot(QCustomPlot::rpQueuedReplot);
  if (watched == _heat_plot && event->type() == QEvent::MouseMove) show_cell_tooltip(static_cast<QMouseEvent*>(event));
  return QWidget::eventFilter(watched, event);
}

void HistogramView::changeEvent(QEvent* event) { QWidget::changeEvent(event); }

void HistogramView::show_cell_tooltip(QMouseEvent* e) {
  const auto [from, to] = _heat_rows;
  if (to <= from || !_heat_plot->axisRect()->rect().contains(e->position().toPoint())) return QToolTip::hideText();
  int x = 0, y = 0;
  _heatmap->data()->coordToCell(_heat_plot->xAxis->pixelToCoord(e->position().x()),
                                _heat_plot->yAxis->pixelToCoord(e->position().y()), &x, &y);
  if (x < 0 || size_t(x) >= to - from || y < 0 || y >= int(log2_rows_shown)) return QToolTip::hideText();
  const auto& row = _history.row(from + size_t(x));
  const double count = _heatmap->data()->cell(x, y);
  const QString text = QString("interval %1 (seq %2)\nbucket %3\ncount %4")
                           .arg(QDateTime::fromMSecsSinceEpoch(qint64(row.time_s * 1000)).toString("hh:mm:ss"))
                           .arg(row.seq)
                           .arg(QString::fromStdString(log2_row_label(size_t(y))))
                           .arg(std::isnan(count) ? 0 : qulonglong(count));
  QToolTip::showText(e->globalPosition().toPoint(), text, _heat_plot);
}

}  // namespace ui
