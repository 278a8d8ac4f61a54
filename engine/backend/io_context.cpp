#include "engine/backend/io_context.hpp"

#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/time_types.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "engine/backend/backend.hpp"

namespace backend {

namespace {

// Ring flags of a shared ring. IORING_SETUP_COOP_TASKRUN is deliberately NOT used: completions
// are posted by task work on the submitting thread, and with COOP_TASKRUN that thread is not
// interrupted for it while it runs. The submitter of a shared ring may be busy with other queues
// while the queue's watcher sleeps in epoll_wait on the eventfd, so a completion would wait (ms,
// measured: a 2 ms timer reaped at 8-48 ms) until the submitter made a syscall.
constexpr unsigned shared_ring_flags = 0;
// An owned ring: task work is deferred to the owner (run when it asks for events: liburing's
// peek does when the kernel sets IORING_SQ_TASKRUN), and the kernel signals the eventfd when such
// work is queued, so a worker asleep in epoll_wait still wakes. R_DISABLED: the ring is created
// on the accepting thread, and SINGLE_ISSUER binds it to the thread that enables it, the queue's
// worker at its first submit. Needs Linux 6.1; older kernels get a shared ring.
constexpr unsigned owned_ring_flags =
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_R_DISABLED;
// An owned ring whose owner sleeps in epoll_wait between events (bound): the kernel runs the
// completion work as the owner returns from any syscall, the epoll_wait the socket woke it from
// included, so the CQEs are in memory when the pass reaps and no io_uring_enter asks for them
// (4k randread qd32, bound: 0.058 io_uring_enter per I/O to none, 1.08-1.21x IOPS). A sleeping
// owner is woken for the work (a 1 ms timer completes in 1 ms: uring_socket_test); a running one
// meets it at its next syscall, and IORING_SQ_TASKRUN keeps it from going idle meanwhile.
constexpr unsigned owned_coop_ring_flags =
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_R_DISABLED;

// CQEs taken from the ring per peek; reap() loops until max or the ring is empty.
constexpr unsigned reap_batch = 32;

static_assert(sizeof(IoTimespec) == sizeof(__kernel_timespec) &&
                  offsetof(IoTimespec, tv_nsec) == offsetof(__kernel_timespec, tv_nsec),
              "Io::delay is handed to the kernel as a __kernel_timespec");

// Timer completions carry their Io pointer with the low bit set (an Io is at least 8-byte
// aligned): their result was set at submission, the CQE's res only says the timer fired.
constexpr uintptr_t timer_tag = 1;

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
constexpr uintptr_t tag_mask = 7;

// Takes up to want CQEs: block I/O ones go to ios (the count is returned), foreign ones to
// sink at once. consumed: CQEs taken in all (0 = the ring is empty).
unsigned take_completions(io_uring* ring, Io** ios, unsigned want, IoContext::ForeignSink* sink,
                          unsigned& consumed) {
  io_uring_cqe* cqes[reap_batch];
  consumed = io_uring_peek_batch_cqe(ring, cqes, want);
  unsigned got = 0;
  for (unsigned i = 0; i < consumed; ++i) {
    const auto data = reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqes[i]));
    if ((data & tag_mask) == IoContext::foreign_tag) {
      if (sink != nullptr) sink->on_cqe(data, cqes[i]->res, cqes[i]->flags);
      continue;
    }
    Io*& io = ios[got++];
    io = reinterpret_cast<Io*>(data & ~timer_tag);
    const int res = cqes[i]->res;
    if ((data & timer_tag) == 0) {
      io->result = completion_result(*io, res);
    } else if (res != -ETIME && res != 0) {
      io->result = res;  // the timer itself failed (a bug, not a medium error): say so
    }
  }
  io_uring_cq_advance(ring, consumed);
  return got;
}

}  // namespace

IoContext::IoContext(unsigned entries) : _entries(entries) {}

IoContext::~IoContext() {
  if (_ring != nullptr) {
    // Submitted I/O still writes into its owner's buffer: wait for every completion before
    // the ring (and, after us, the buffers) go away. SQEs not yet submitted go in first so
    // that every operation counted in _inflight is one the kernel knows of.
    flush_submissions();
    _inflight -= std::min(_inflight, _unsubmitted);  // refused by the kernel: dropped with the ring
    _foreign = nullptr;  // its owner went first and waited for its own operations
    wait_foreign([this] { return _inflight == 0; });
    io_uring_queue_exit(_ring);
    delete _ring;
  }
  if (_event_fd >= 0) close(_event_fd);
}

io_uring* IoContext::ring() {
  if (_ring != nullptr || _setup_failed) return _ring;
  auto* r = new io_uring{};
  bool owned = _want_owned;
  const unsigned owned_flags = _want_deferred ? owned_ring_flags : owned_coop_ring_flags;
  int ret = io_uring_queue_init(_entries, r, owned ? owned_flags : shared_ring_flags);
  if (ret == -EINVAL && owned) {
    owned = false;  // a kernel before 6.1: no deferred task work
    ret = io_uring_queue_init(_entries, r, shared_ring_flags);
  }
  if (ret == 0 && _event_fd < 0) {
    // The eventfd outlives rings (close_ring): the executor watches this one fd throughout.
    _event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (_event_fd < 0) ret = -errno;
    if (ret < 0) io_uring_queue_exit(r);
  }
  if (ret == 0) {
    ret = io_uring_register_eventfd(r, _event_fd);
    if (ret < 0) io_uring_queue_exit(r);
  }
  if (ret < 0) {
    // Without an eventfd the executor could not learn of completions: treat it as no ring,
    // so backends fall back to synchronous I/O, which is always correct. Not retried.
    delete r;
    _setup_failed = true;
    errno = -ret;
    return nullptr;
  }
  _ring = r;
  _owned = owned;
  _enabled = !owned;
  _owner_tid = 0;
  return _ring;
}

bool IoContext::usable_here() const { return !_owned || !_enabled || _owner_tid == gettid(); }

void IoContext::enable_here() {
  _enabled = true;
  _owner_tid = gettid();
  // liburing 2.3 declares io_uring_enable_rings but does not export it.
  (void)syscall(__NR_io_uring_register, _ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
}

bool IoContext::close_ring(const std::function<void(Io&)>& done) {
  if (_ring == nullptr) return true;
  if (!usable_here()) return false;
  if (_enabled) {
    flush_submissions();
    while (_inflight > 0) {
      if (reap(_inflight, done) > 0) continue;
      io_uring_cqe* cqe = nullptr;
      if (const int ret = io_uring_wait_cqe(_ring, &cqe); ret < 0 && ret != -EINTR) break;
    }
  }
  // A ring never enabled never submitted: its queued SQEs go with it.
  _inflight -= std::min(_inflight, _unsubmitted);
  _unsubmitted = 0;
  io_uring_queue_exit(_ring);
  delete _ring;
  _ring = nullptr;
  return true;
}

bool IoContext::complete_after(Io& io, uint64_t delay_ns) {
  io_uring* r = ring();
  if (r == nullptr) return false;
  io_uring_sqe* sqe = io_uring_get_sqe(r);
  if (sqe == nullptr) {
    flush_submissions();  // a full ring: submit once to make room
    sqe = io_uring_get_sqe(r);
  }
  if (sqe == nullptr) return false;
  io.delay.tv_sec = static_cast<int64_t>(delay_ns / 1'000'000'000ull);
  io.delay.tv_nsec = static_cast<int64_t>(delay_ns % 1'000'000'000ull);
  // count 0: a pure timer, never satisfied by other completions; it ends with -ETIME.
  io_uring_prep_timeout(sqe, reinterpret_cast<__kernel_timespec*>(&io.delay), 0, 0);
  io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&io) | timer_tag));
  note_submitted();
  return true;
}

io_uring_sqe* IoContext::foreign_sqe() {
  io_uring* r = ring();
  if (r == nullptr) return nullptr;
  io_uring_sqe* sqe = io_uring_get_sqe(r);
  if (sqe == nullptr) {
    flush_submissions();
    sqe = io_uring_get_sqe(r);
  }
  if (sqe != nullptr) ++_unsubmitted;
  return sqe;
}

void IoContext::wait_foreign(const std::function<bool()>& done) {
  if (_ring == nullptr) return;
  flush_submissions();
  if (!_enabled) return;  // nothing was ever submitted: nothing to wait for
  while (!done()) {
    io_uring_cqe* cqe = nullptr;
    const int ret = io_uring_wait_cqe(_ring, &cqe);
    if (ret == -EINTR) continue;
    if (ret < 0) return;  // a broken ring completes nothing more
    const auto data = reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe));
    if ((data & tag_mask) == foreign_tag) {
      if (_foreign != nullptr) _foreign->on_cqe(data, cqe->res, cqe->flags);
    } else if (_inflight > 0) {
      --_inflight;  // its owner is going away with the queue; nothing to complete to
    }
    io_uring_cqe_seen(_ring, cqe);
  }
}

void IoContext::flush_submissions() {
  if (_ring == nullptr || _unsubmitted == 0) return;
  if (!_enabled) enable_here();
  int ret = io_uring_submit(_ring);
  // On -EAGAIN/-EBUSY/-EINTR the SQEs stay queued in the ring; the next pass retries them.
  if (ret <= 0) return;
  unsigned done = static_cast<unsigned>(ret);
  _unsubmitted = done >= _unsubmitted ? 0 : _unsubmitted - done;
}

unsigned IoContext::reap(unsigned max, const std::function<void(Io&)>& done) {
  if (_ring == nullptr) return 0;
  unsigned count = 0;
  Io* ios[reap_batch];
  while (count < max) {
    unsigned consumed = 0;
    unsigned got = take_completions(_ring, ios, std::min(max - count, reap_batch), _foreign, consumed);
    if (consumed == 0) break;
    _inflight -= got;  // before done(): it may look at inflight() (quiescing a queue)
    for (unsigned i = 0; i < got; ++i) done(*ios[i]);
    count += got;
  }
  // Budget exhausted with completions left: the caller made progress and runs again (it does
  // not go idle), so nothing needs re-signalling.
  return count;
}

bool IoContext::consume_notifications() {
  if (_ring == nullptr) return false;
  // EAGAIN only means nothing was signalled.
  uint64_t counter;
  [[maybe_unused]] ssize_t drained = read(_event_fd, &counter, sizeof counter);
  return work_waiting();
}

bool IoContext::work_waiting() const {
  if (_ring == nullptr) return false;
  return io_uring_cq_ready(_ring) > 0 || (IO_URING_READ_ONCE(*_ring->sq.kflags) & IORING_SQ_TASKRUN) != 0;
}

}  // namespace backend
