#include "engine/stats/stage_breakdown.hpp"

namespace stats {

StageBreakdown stage_breakdown(const QueueRow& row) {
  StageBreakdown b;
  uint64_t target_sum = 0;
  for (const auto& src : latency_sources) {
    if (src.kind != LatencyKind::target) continue;
    b.commands += (row.*src.row).count;
    target_sum += (row.*src.row).sum_ns;
  }
  if (b.commands) b.target_mean_ns = static_cast<double>(target_sum) / static_cast<double>(b.commands);
  for (const auto& src : latency_sources) {
    if (src.kind != LatencyKind::stage) continue;
    const HistogramData& h = row.*src.row;
    StageFigure f;
    f.source = &src;
    f.count = h.count;
    if (b.commands) f.share_ns = static_cast<double>(h.sum_ns) / static_cast<double>(b.commands);
    if (h.count) {
      f.mean_ns = static_cast<double>(h.sum_ns) / static_cast<double>(h.count);
      f.p99_ns = h.percentile(99);
    }
    b.stages.push_back(f);
  }
  return b;
}

}  // namespace stats
