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

void StampClock::resync(uint64_t mono_now) {
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  const int64_t rt_ns = static_cast<int64_t>(rt.tv_sec) * 1'000'000'000ll + rt.tv_nsec;
  _offset_ns = rt_ns - static_cast<int64_t>(mono_now);
  _synced_ns = mono_now;
}

}  // namespace tcp
