#pragma once
// How long a worker keeps polling after its last work before it sleeps.
//
// Fixed, it is nvmet-tcp's idle_poll_period_usecs: always the ceiling. Adaptive, it follows the
// gaps between bursts of work, after the idea of the haltpoll cpuidle governor and KVM's
// halt_poll_ns: a gap the worker slept through but that a window under the ceiling would have
// caught opens the window to cover it (with headroom); a gap longer than the ceiling closes it.
// So a load whose commands come closer together than the ceiling (qd1 over a fast network) keeps
// the worker polling and saves a wake-up per command, and a sparse one leaves the worker
// sleeping at once, spending no CPU on polls that would expire unused. A gap the window caught
// changes nothing.
//
// Worker thread only: plain fields, one compare per busy pass.
#include <algorithm>
#include <cstdint>

namespace exec::event {

class IdlePollWindow {
 public:
  // The smallest window opened: a shorter poll would end before most wake-ups (several µs on
  // these machines) even begin, so it would save none of them.
  static constexpr uint64_t kMinNs = 5'000;

  // The window in force for the given ceiling (a live change of the ceiling applies at once).
  uint64_t window_ns(uint64_t ceiling_ns, bool adaptive) const {
    return adaptive ? std::min(_window_ns, ceiling_ns) : ceiling_ns;
  }

  // Work came after gap_ns without any.
  void on_work(uint64_t gap_ns, uint64_t ceiling_ns) {
    if (gap_ns <= _window_ns) return;  // caught by the poll, or within a burst
    if (gap_ns > ceiling_ns) {
      _window_ns = 0;  // longer than any poll may last: sleep at once until gaps are short again
      return;
    }
    _window_ns = std::min(ceiling_ns, std::max(kMinNs, gap_ns + gap_ns / 2));
  }

 private:
  uint64_t _window_ns = 0;
};

}  // namespace exec::event
