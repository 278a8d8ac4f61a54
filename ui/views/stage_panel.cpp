// The stacked stage bands (stage_panel.hpp).
#include "ui/views/stage_panel.hpp"

#include <QDateTime>

#include <qcustomplot.h>

#include "engine/stats/latency_sources.hpp"
#include "ui/models/host_latency.hpp"
#include "ui/models/interval_history.hpp"
#include "ui/views/plot_style.hpp"

namespace ui {

namespace {

constexpr int band_alpha = 190;  // fills: the hue kept on white and on near-black, edges solid
constexpr double edge_width = 1.0;
// series_color() per stage, in the table's order: scheduling red (what a busy CPU grows),
// queue orange, receive purple, data wait cyan, backend green, send blue; then round again.
constexpr int stage_colors[] = {3, 1, 4, 9, 2, 0};
constexpr const char* stage_prefix = "Stage: ";

// "scheduling" from "Stage: scheduling".
QString stage_label(const stats::LatencySource& src) {
  QString title = QString::fromUtf8(src.title);
  return title.startsWith(stage_prefix) ? title.mid(int(std::char_traits<char>::length(stage_prefix))) : title;
}

std::vector<const stats::LatencySource*> stages() {
  std::vector<const stats::LatencySource*> out;
  for (const auto& src : stats::latency_sources)
    if (src.kind == stats::LatencyKind::stage) out.push_back(&src);
  return out;
}

const char* target_span() {
  for (const auto& src : stats::latency_sources)
    if (src.kind == stats::LatencyKind::target) return src.span;
  return "";
}

QString us(double v) { return QString::number(v, 'f', v < 10 ? 2 : 1) + " µs"; }

}  // namespace

StagePanel::StagePanel(QCPAxisRect* rect) {
  auto* legend = qobject_cast<QCPLegend*>(rect->insetLayout()->elementAt(0));
  QCPGraph* below = nullptr;
  const auto list = stages();
  for (size_t i = 0; i < list.size(); ++i) {
    auto* g = rect->parentPlot()->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    g->setName(stage_label(*list[i]));
    QColor c = series_color(stage_colors[i % std::size(stage_colors)]);
    g->setPen(QPen(c, edge_width));
    c.setAlpha(band_alpha);
    g->setBrush(c);
    g->setChannelFillGraph(below);  // the first band fills down to zero
    g->setAdaptiveSampling(true);
    if (legend) g->addToLegend(legend);
    _bands.push_back(g);
    below = g;
  }
}

std::vector<std::pair<QCPGraph*, double>> StagePanel::points(const IntervalRow& r) const {
  std::vector<std::pair<QCPGraph*, double>> out;
  if (r.target_mean_us <= 0) return out;
  double top = 0;
  for (size_t i = 0; i < _bands.size() && i < r.stage_share_us.size(); ++i) {
    top += r.stage_share_us[i];
    out.emplace_back(_bands[i], top);
  }
  return out;
}

QString StagePanel::caption() {
  return QString("target: %1 (reads and writes)  ·  host (paler lines): the built-in load, submit -> completion  ·  "
                 "hover for the stages")
      .arg(QString::fromUtf8(target_span()));
}

QString StagePanel::explanation() {
  QStringList lines;
  lines << "Target latency: " + QString::fromUtf8(target_span()) + ".";
  lines << "Host latency: " + QString::fromUtf8(host_latency_span) + ".";
  lines << "Stages, stacked bottom to top (each band is its mean share per command; they add up to the mean target "
           "latency):";
  for (const auto* src : stages()) lines << "  " + stage_label(*src) + ": " + QString::fromUtf8(src->span);
  return lines.join('\n');
}

QString StagePanel::interval_text(const IntervalRow& r) {
  const QString when = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(r.time_s * 1000)).toString("hh:mm:ss.zzz");
  if (r.target_mean_us <= 0) return when + ": no command with a target latency";
  QStringList lines;
  lines << QString("%1: mean target latency %2 per command; reads and writes: %3, p99 %4")
               .arg(when, us(r.target_mean_us))
               .arg(r.target_commands)
               .arg(us(r.p99_us));
  const auto list = stages();
  for (size_t i = 0; i < list.size() && i < r.stage_share_us.size(); ++i)
    lines << QString("  %1: %2 per command, p99 %3").arg(stage_label(*list[i]), us(r.stage_share_us[i]), us(r.stage_p99_us[i]));
  if (r.host_ios) lines << QString("host (initiator): p50 %1, p99 %2").arg(us(r.host_p50_us), us(r.host_p99_us));
  return lines.join('\n');
}

}  // namespace ui
