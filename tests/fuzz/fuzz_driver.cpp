// See fuzz_driver.hpp. One process-wide core::Target (built once), one fresh TcpQueue per input.
#include "tests/fuzz/fuzz_driver.hpp"

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.hpp"
#include "engine/core/controller.hpp"
#include "engine/core/namespace.hpp"
#include "engine/core/subsystem.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/executor.hpp"
#include "engine/nvme/le.hpp"
#include "engine/tcp/queue.hpp"
#include "tests/fuzz/pdu_builder.hpp"
#include "tests/support/tcp_queue_harness.hpp"

namespace fuzz {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fuzz_driver: %s\n", what.c_str());
  std::abort();
}

// Bound on io_work() passes for one chunk in socket mode (a 64 KiB chunk of the smallest
// PDUs needs about 15 passes at the default budgets); more means io_work is not converging.
constexpr int max_passes_per_chunk = 4096;

struct Env {
  core::Target target{test_support::harness_target_limits()};
  test_support::PassiveExecutor executor;
  tcp::LiveBudgets budgets{tcp::Budgets{}};
  tcp::QueueLimits limits = test_support::harness_queue_limits();
  int admin_peer = -1;
  tcp::TcpQueue* admin = nullptr;  // the long-lived controller's admin queue (never closed)
};

void add_ram_namespace(core::Subsystem& s, uint32_t nsid, uint64_t bytes, uint32_t block) {
  std::string err;
  backend::BackendSpec spec;
  spec.kind = "ram";
  spec.size_bytes = bytes;
  auto be = backend::open_backend(spec, err);
  if (!be) die("ram backend: " + err);
  auto ns = std::make_unique<core::Namespace>(nsid, std::move(be), block,
                                              core::derive_uuid(s.nqn(), nsid));
  if (!s.add_namespace(std::move(ns))) die("add_namespace failed");
}

// Reads and discards (or hands to out) everything the controller sent so far.
void drain(int fd, const OutputFn* out) { test_support::drain(fd, out ? *out : OutputFn{}); }

Env* make_env() {
  auto* e = new Env;  // never freed: outlives every input, reachable for LeakSanitizer
  if (const char* v = std::getenv("NVMETUNE_FUZZ_LOG"); v && *v && *v != '0') {
    e->target.set_log([](core::EventLevel, std::string_view m) {
      std::fprintf(stderr, "[engine] %.*s\n", static_cast<int>(m.size()), m.data());
    });
  }
  auto subsys = std::make_shared<core::Subsystem>(std::string(subnqn), "FUZZ0001", "nvmetune fuzz",
                                                   true, std::vector<std::string>{}, false);
  add_ram_namespace(*subsys, 1, 1u << 20, 512);
  add_ram_namespace(*subsys, 2, 512u << 10, 4096);
  e->target.add_subsystem(subsys);
  e->target.add_listener(core::ListenerAddress{3, 1, "127.0.0.1", "4420", 0});

  // The long-lived controller: ICReq, Connect (admin queue, in-capsule data), CC.EN=1.
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
  e->admin = new tcp::TcpQueue(sv[0], "fuzz-admin", e->target, e->executor, e->limits, e->budgets);
  e->admin_peer = sv[1];
  Stream s;
  s.icreq();
  s.capsule(connect(1, 0, queue_depth - 1, Xfer::in_capsule), connect_data(subnqn, hostnqn));
  s.capsule(property_set(2, nvme::Property::cc, cc_enable));
  if (!e->admin->feed(s.bytes)) die("set-up queue closed");
  drain(e->admin_peer, nullptr);
  auto ctrl = subsys->find_controller(io_cntlid);
  if (!ctrl || !ctrl->enabled()) die("set-up controller is not enabled");
  return e;
}

Env& env() {
  static Env* e = make_env();
  return *e;
}

}  // namespace

void for_each_chunk(uint8_t split, std::span<const uint8_t> stream,
                    const std::function<bool(std::span<const uint8_t>)>& fn) {
  static constexpr size_t fixed[8] = {SIZE_MAX, 0, 1, 8, 72, 100, 4095, 4097};
  uint32_t rng = (split * 0x9e3779b9u) ^ 0x5bd1e995u;
  if (rng == 0) rng = 1;
  size_t pos = 0;
  while (pos < stream.size()) {
    const size_t left = stream.size() - pos;
    size_t n;
    if (split & split_random) {
      rng ^= rng << 13;
      rng ^= rng >> 17;
      rng ^= rng << 5;
      n = 1 + rng % (size_t{2} << (split & 0x0f));
    } else if ((split & 7) == static_cast<uint8_t>(Split::per_pdu)) {
      n = left >= tcp::ch_len ? nvme::get_le<uint32_t>(stream.data() + pos, 4) : left;
    } else {
      n = fixed[split & 7];
    }
    n = std::clamp<size_t>(n, 1, left);
    if (!fn(stream.subspan(pos, n))) return;
    pos += n;
  }
}

void run_input(const uint8_t* data, size_t size, const OutputFn* out) {
  Env& e = env();
  if (size == 0) return;
  const std::span<const uint8_t> stream(data + 1, size - 1);
  const bool via_socket = data[0] & split_socket;
  const bool slow_host = data[0] & split_slow_host;

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
  // The queue owns sv[0] (closed by its destructor); sv[1] is the host's end.
  auto q = std::make_unique<tcp::TcpQueue>(sv[0], "fuzz", e.target, e.executor, e.limits, e.budgets);
  uint64_t tx_seen = 0;
  auto drain_new = [&](bool at_end = false) {
    if (slow_host && !at_end) return;  // the socket fills up: EAGAIN, partial sends
    const uint64_t tx = q->counters().bytes_tx.get();
    if (tx == tx_seen) return;
    tx_seen = tx;
    drain(sv[1], out);
  };
  bool closed = false;  // io_work() reported closed: SubmissionQueue already unbound

  // Socket mode: the chunk goes through the socket and io_work() runs as an executor would run
  // it (level-triggered: again while it reports more work or unread bytes wait in the socket).
  auto deliver = [&](std::span<const uint8_t> chunk) {
    size_t off = 0;
    for (int pass = 0; pass < max_passes_per_chunk; ++pass) {
      if (off < chunk.size()) {
        const ssize_t n = ::write(sv[1], chunk.data() + off, chunk.size() - off);
        if (n > 0) off += static_cast<size_t>(n);
      }
      const exec::Progress p = q->io_work();
      drain_new();
      if (p == exec::Progress::closed) {
        closed = true;
        return false;
      }
      int unread = 0;
      if (::ioctl(sv[0], FIONREAD, &unread) != 0) unread = 0;
      if (p == exec::Progress::idle && off == chunk.size() && unread == 0) return true;
    }
    die("io_work() still busy after " + std::to_string(max_passes_per_chunk) + " passes on one chunk");
  };

  for_each_chunk(data[0], stream, [&](std::span<const uint8_t> chunk) {
    if (via_socket) return deliver(chunk);
    const bool open = q->feed(chunk);
    drain_new();  // keep the socket empty so the queue's sends never see EAGAIN
    return open;
  });
  drain_new(true);

  // The host disconnects: the queue must notice and close within a few io_work passes, as it
  // would under a real executor (this also runs SubmissionQueue::unbind like production does).
  ::close(sv[1]);
  for (int pass = 0; !closed; ++pass) {
    if (q->io_work() == exec::Progress::closed) break;
    if (pass == 64) die("queue did not close 64 io_work passes after the host disconnected");
  }
  q->retire();
}

}  // namespace fuzz
