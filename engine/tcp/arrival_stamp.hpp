#pragma once
// When a capsule reached this host: the kernel's software receive stamp of the segment that
// carried it (SO_TIMESTAMPING, SOF_TIMESTAMPING_RX_SOFTWARE), read from the receive call's
// control message (recvmsg on the epoll path, the multishot RECVMSG's buffer on io_uring).
//
// TCP hands one stamp per receive call: that of the newest segment the call read (the kernel
// keeps the last skb's). A call that reads several capsules stamps them all with the last one's
// arrival, so their target latency can only be short of the truth, never long, by the time the
// earlier ones sat in the socket before the last segment came.
//
// The stamp is CLOCK_REALTIME; the engine times everything on CLOCK_MONOTONIC. StampClock keeps
// their difference, read again every resync_ns: NTP slews the real-time clock by at most
// 500 ppm, so a 10 ms old difference is off by 5 us at the very worst (by nanoseconds at the
// slews NTP really makes).
#include <sys/socket.h>

#include <cstdint>

namespace tcp {

// Asks the kernel to stamp fd's received segments. False if it refused (the queue then times
// its commands from readiness: stats' arrival_clock says so).
bool enable_arrival_stamps(int fd);

// Room for the control message a stamped receive carries.
inline constexpr size_t arrival_cmsg_space = CMSG_SPACE(3 * sizeof(struct timespec));

// The receive stamp in msg's control messages, CLOCK_REALTIME ns; 0 when there is none.
uint64_t arrival_stamp_of(const msghdr& msg);

class StampClock {
 public:
  static constexpr uint64_t resync_ns = 10'000'000;
  // mono_now: a CLOCK_MONOTONIC read the caller just made (its pass start): the clocks are read
  // again once per resync_ns.
  void sync(uint64_t mono_now) {
    if (mono_now - _synced_ns < resync_ns && _synced_ns != 0) return;
    resync(mono_now);
  }
  // A real-time stamp on the monotonic clock; 0 stays 0 (no stamp).
  uint64_t to_monotonic(uint64_t realtime_ns) const {
    if (realtime_ns == 0 || _synced_ns == 0) return 0;
    const int64_t mono = static_cast<int64_t>(realtime_ns) - _offset_ns;
    return mono > 0 ? static_cast<uint64_t>(mono) : 0;
  }

 private:
  void resync(uint64_t mono_now);
  int64_t _offset_ns = 0;  // realtime - monotonic
  uint64_t _synced_ns = 0;
};

}  // namespace tcp
