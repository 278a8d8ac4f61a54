#include "engine/tcp/arrival_stamp.hpp"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>

#include <ctime>

namespace tcp {

bool enable_arrival_stamps(int fd) {
  // SOFTWARE: report software stamps; RX_SOFTWARE: take them as segments arrive.
  const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) == 0;
}

uint64_t arrival_stamp_of(const msghdr& msg) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING) continue;
    if (c->cmsg_len < CMSG_LEN(sizeof(scm_timestamping))) continue;
    const auto* ts = reinterpret_cast<const scm_timestamping*>(CMSG_DATA(c));
    // ts[0]: the software stamp (ts[2] would be the NIC's, which we did not ask for).
    return static_cast<uint64_t>(ts->ts[0].tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts->ts[0].tv_nsec);
  }
  return 0;
}

// The offset from a real-time read bracketed by two monotonic ones, the tightest of a few tries:
// a thread preempted between the reads (a busy CPU, the very case the stamps are for) would
// otherwise put every stamp of the next resync_ns that much early.
void StampClock::resync(uint64_t mono_now) {
  uint64_t best_gap = UINT64_MAX;
  for (int attempt = 0; attempt < 4 && best_gap > 2'000; ++attempt) {
    timespec m1, rt, m2;
    clock_gettime(CLOCK_MONOTONIC, &m1);
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &m2);
    const int64_t a = static_cast<int64_t>(m1.tv_sec) * 1'000'000'000ll + m1.tv_nsec;
    const int64_t b = static_cast<int64_t>(m2.tv_sec) * 1'000'000'000ll + m2.tv_nsec;
    const auto gap = static_cast<uint64_t>(b - a);
    if (gap >= best_gap) continue;
    best_gap = gap;
    _offset_ns = static_cast<int64_t>(rt.tv_sec) * 1'000'000'000ll + rt.tv_nsec - (a + (b - a) / 2);
  }
  _synced_ns = mono_now;
}

}  // namespace tcp
