#include "engine/backend/io_context.hpp"

#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "engine/backend/backend.hpp"

namespace backend {

namespace {

// Ring flags tried first. COOP_TASKRUN avoids an IPI to a busy thread for every completion;
// the completion is posted when that thread next enters the kernel, and liburing's peek calls
// enter for us when the kernel flags pending task work (IORING_SQ_TASKRUN).
// IORING_SETUP_SINGLE_ISSUER is deliberately NOT used: it binds the ring to the thread that
// created it and io_uring_enter from any other thread fails with -EEXIST (verified on this
// kernel). A queue's io_work moves between threads (unbound pool, live executor switching),
// so the ring must accept submissions from whichever thread runs io_work next.
constexpr unsigned preferred_ring_flags = IORING_SETUP_COOP_TASKRUN;

// CQEs taken from the ring per peek; reap() loops until max or the ring is empty.
constexpr unsigned reap_batch = 32;

// A read or write that moved fewer bytes than asked is an error: a read past EOF must never
// look like success with short data, and a short write did not store the block.
int completion_result(const Io& io, int res) {
  if (res < 0) return res;
  bool transfers = io.op == IoOp::read || io.op == IoOp::write;
  if (transfers && static_cast<uint32_t>(res) != io.length) return -EIO;
  return 0;
}

// Takes up to want CQEs off the ring into ios, with each Io's result set. The CQ slots are
// released before anyone runs a completion callback, which may submit or reap again.
unsigned take_completions(io_uring* ring, Io** ios, unsigned want) {
  io_uring_cqe* cqes[reap_batch];
  unsigned got = io_uring_peek_batch_cqe(ring, cqes, want);
  for (unsigned i = 0; i < got; ++i) {
    ios[i] = static_cast<Io*>(io_uring_cqe_get_data(cqes[i]));
    ios[i]->result = completion_result(*ios[i], cqes[i]->res);
  }
  io_uring_cq_advance(ring, got);
  return got;
}

}  // namespace

IoContext::IoContext(unsigned entries) : _entries(entries) {}

IoContext::~IoContext() {
  if (_ring != nullptr) {
    // SQEs never submitted are unknown to the kernel and are simply dropped with the ring.
    unsigned pending = _inflight - _unsubmitted;
    // Submitted I/O still writes into its owner's buffer: wait for every completion before
    // the ring (and, after us, the buffers) go away.
    while (pending > 0) {
      io_uring_cqe* cqe = nullptr;
      int ret = io_uring_wait_cqe(_ring, &cqe);
      if (ret == -EINTR) continue;
      if (ret < 0) break;  // the ring itself is broken; nothing more will complete
      io_uring_cqe_seen(_ring, cqe);
      --pending;
    }
    io_uring_queue_exit(_ring);
    delete _ring;
  }
  if (_event_fd >= 0) close(_event_fd);
}

io_uring* IoContext::ring() {
  if (_ring != nullptr || _setup_failed) return _ring;
  auto* r = new io_uring{};
  int ret = io_uring_queue_init(_entries, r, preferred_ring_flags);
  if (ret < 0) ret = io_uring_queue_init(_entries, r, 0);  // older kernel: no COOP_TASKRUN
  int efd = -1;
  if (ret == 0) {
    efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ret = efd < 0 ? -errno : io_uring_register_eventfd(r, efd);
    if (ret < 0) io_uring_queue_exit(r);
  }
  if (ret < 0) {
    // Without an eventfd the executor could not learn of completions: treat it as no ring,
    // so backends fall back to synchronous I/O, which is always correct. Not retried.
    if (efd >= 0) close(efd);
    delete r;
    _setup_failed = true;
    errno = -ret;
    return nullptr;
  }
  _ring = r;
  _event_fd = efd;
  return _ring;
}

void IoContext::flush_submissions() {
  if (_ring == nullptr || _unsubmitted == 0) return;
  int ret = io_uring_submit(_ring);
  // On -EAGAIN/-EBUSY/-EINTR the SQEs stay queued in the ring; the next pass retries them.
  if (ret <= 0) return;
  unsigned done = static_cast<unsigned>(ret);
  _unsubmitted = done >= _unsubmitted ? 0 : _unsubmitted - done;
}

unsigned IoContext::reap(unsigned max, const std::function<void(Io&)>& done) {
  if (_ring == nullptr) return 0;
  // Drain the counter first: a completion posted after this read signals it again.
  // EAGAIN only means nothing was signalled.
  uint64_t counter;
  [[maybe_unused]] ssize_t drained = read(_event_fd, &counter, sizeof counter);
  unsigned count = 0;
  Io* ios[reap_batch];
  while (count < max) {
    unsigned got = take_completions(_ring, ios, std::min(max - count, reap_batch));
    if (got == 0) break;
    _inflight -= got;  // before done(): it may look at inflight() (quiescing a queue)
    for (unsigned i = 0; i < got; ++i) done(*ios[i]);
    count += got;
  }
  // Budget exhausted with completions left: the eventfd was drained above, so re-signal it,
  // otherwise an epoll-driven executor would never come back for them.
  if (count == max && io_uring_cq_ready(_ring) > 0) eventfd_write(_event_fd, 1);
  return count;
}

}  // namespace backend
