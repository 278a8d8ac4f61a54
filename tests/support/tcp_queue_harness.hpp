#pragma once
// What a test needs to drive one tcp::TcpQueue by hand, pass by pass, on a socketpair: an
// executor that runs nothing, the limits the host-side streams of tests/fuzz/pdu_builder.hpp
// assume, and a reader for what the controller sent. Used by the fuzzer's driver and by the
// queue's unit tests.
#include <unistd.h>

#include <array>
#include <cerrno>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/core/target.hpp"
#include "engine/exec/executor.hpp"
#include "engine/tcp/queue.hpp"
#include "tests/fuzz/pdu_builder.hpp"

namespace test_support {

// A test double, not an execution model: the real executors (engine/exec/) need worker threads
// and epoll, while these callers run one queue single-threaded and call io_work() themselves.
// TcpQueue calls schedule() only for kicks (controller teardown, asynchronous events) and
// watch_fd() only for an io_uring completion ring, which the RAM backend never creates. So
// every method does nothing, and release() hands over at once.
class PassiveExecutor final : public exec::Executor {
 public:
  std::string name() const override { return "passive (test double)"; }
  void attach(exec::Task&) override {}
  void schedule(exec::Task&) override {}
  void watch_fd(exec::Task&, int) override {}
  void stop() override {}
  void release(exec::Task& task, std::function<void(exec::Task&)> handover) override { handover(task); }
  std::vector<exec::Task*> tasks() const override { return {}; }
  std::vector<ThreadInfo> threads() const override { return {}; }
};

// The target's and the queue's limits as pdu_builder.hpp's streams expect them.
inline core::Limits harness_target_limits() {
  core::Limits l;
  l.queue_depth = fuzz::queue_depth;
  l.max_io_queues = 4;
  l.mdts_bytes = fuzz::mdts_bytes;
  l.io_ccsz = fuzz::io_icd_size + nvme::sqe_size;
  return l;
}

inline tcp::QueueLimits harness_queue_limits() {
  tcp::QueueLimits l;
  l.queue_depth = fuzz::queue_depth;
  l.io_icd_size = fuzz::io_icd_size;
  l.maxh2cdata = fuzz::maxh2cdata;
  l.mdts_bytes = fuzz::mdts_bytes;  // 2 x 128 KiB x 32 slots = 8 MiB reserved per queue, mostly untouched
  return l;
}

// Reads everything the controller sent so far from the host's end (non-blocking) and hands
// each chunk to out, if set.
inline void drain(int fd, const std::function<void(std::span<const uint8_t>)>& out) {
  std::array<uint8_t, 64 * 1024> buf;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      if (out) out({buf.data(), static_cast<size_t>(n)});
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // EAGAIN: all read; 0: the queue closed its end
  }
}

}  // namespace test_support
