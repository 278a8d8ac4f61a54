// The host's interval from two readings (host_latency.hpp).
#include "ui/models/host_latency.hpp"

namespace ui {

HostInterval HostLatencyTap::next() {
  auto now = _live.read();
  HostInterval out{now.read.since(_last.read), now.write.since(_last.write)};
  _last = std::move(now);
  return out;
}

}  // namespace ui
