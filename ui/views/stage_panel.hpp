#pragma once
// The dashboard's "where the time goes" panel: per interval, each stage's mean share of the
// target latency (IntervalRow::stage_share_us, from stats::stage_breakdown), stacked so that the
// top edge is the mean target latency. One filled band per stage of stats::latency_sources, in
// its order; the texts that say what each stage is come from the same table.
#include <QString>

#include <utility>
#include <vector>

class QCPAxisRect;
class QCPGraph;

namespace ui {

struct IntervalRow;

class StagePanel {
 public:
  // Adds the bands (and their legend entries) to rect's plot; rect's first inset is its legend.
  explicit StagePanel(QCPAxisRect* rect);

  // The bands' values for r: each the sum of the shares up to its stage (empty when r has no
  // target latency: a gap, not a zero).
  std::vector<std::pair<QCPGraph*, double>> points(const IntervalRow& r) const;
  const std::vector<QCPGraph*>& bands() const { return _bands; }

  // One line: what target latency measures, and what the stacked bands are.
  static QString caption();
  // Every stage, what it spans (latency_sources' texts), one a line: the panels' tooltip.
  static QString explanation();
  // r's figures: the mean target latency and each stage's share and p99, one a line.
  static QString interval_text(const IntervalRow& r);

 private:
  std::vector<QCPGraph*> _bands;  // latency_sources' stages, in order
};

}  // namespace ui
