#pragma once
// The host's view of one interval: what the app's own load (ui/builtin_load.hpp) measured
// between two snapshots' arrivals, as the difference of two cumulative readings of its
// initiator::LiveLatency. Plain data and a small reader; no Qt.
#include "engine/initiator/load_generator.hpp"
#include "engine/stats/histogram_data.hpp"

namespace ui {

// What a host source measures, from where to where (for titles and tooltips).
inline constexpr const char* host_latency_span =
    "the app's own load: I/O submitted -> its completion seen by the initiator (network, target and host together)";

// Submit -> completion of each I/O the load measured, as its initiator saw it.
struct HostInterval {
  stats::HistogramData read, write;
};

// Reads a LiveLatency once per closed interval. It must outlive this reader.
class HostLatencyTap {
 public:
  explicit HostLatencyTap(const initiator::LiveLatency& live) : _live(live), _last(live.read()) {}
  // What the load measured since the previous call (or since construction); empty while no
  // load of the app's own runs.
  HostInterval next();

 private:
  const initiator::LiveLatency& _live;
  initiator::LiveLatency::Reading _last;
};

}  // namespace ui
