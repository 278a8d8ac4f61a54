#include "engine/initiator/sync.hpp"

#include <algorithm>
#include <string>

namespace initiator {
namespace {

struct Waiter {
  bool done = false;
  Completion c;
  static void on_done(void* ctx, const Completion& c) {
    auto* w = static_cast<Waiter*>(ctx);
    w->c = c;
    w->done = true;
  }
};

int left_ms(uint64_t deadline) {
  const uint64_t now = monotonic_ns();
  return now >= deadline ? 0 : static_cast<int>((deadline - now + 999'999) / 1'000'000);
}

// submit_fn tries to submit with the waiter's callback; retried while the queue is full.
template <typename SubmitFn>
Result<Completion> run(Queue& q, SubmitFn submit_fn, int timeout_ms, const char* what) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(std::max(timeout_ms, 0)) * 1'000'000;
  Waiter w;
  std::optional<uint16_t> cid;
  while (!(cid = submit_fn(Callback{&Waiter::on_done, &w}))) {
    if (q.state() != Queue::State::live)
      return q.state() == Queue::State::failed ? q.error() : Error::usage("queue is not live");
    if (q.outstanding() < q.depth()) return Error::usage(std::string(what) + ": command refused");
    if (left_ms(deadline) == 0) return Error::timeout(std::string(what) + ": no free slot");
    q.wait(left_ms(deadline));
  }
  while (!w.done) {
    const int left = left_ms(deadline);
    if (left == 0) {
      q.forget(*cid);
      return Error::timeout(std::string(what) + ": no completion for CID " + std::to_string(*cid));
    }
    q.wait(left);
  }
  if (w.c.aborted) {
    if (q.state() == Queue::State::failed) return q.error();
    return Error::usage(std::string(what) + ": aborted, queue closed");
  }
  if (!w.c.status.ok()) return Error::from_status(w.c.status, w.c.cqe, what);
  return w.c;
}

}  // namespace

Result<Completion> sync_io(Queue& q, Io io, int timeout_ms) {
  return run(
      q,
      [&](Callback cb) {
        io.done = cb;
        return q.submit(io);
      },
      timeout_ms, "I/O");
}

Result<Completion> sync_raw(Queue& q, RawCommand c, int timeout_ms) {
  return run(
      q,
      [&](Callback cb) {
        c.done = cb;
        return q.submit_raw(c);
      },
      timeout_ms, "command");
}

}  // namespace initiator
