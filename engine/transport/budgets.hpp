#pragma once
// The io_work budgets every transport's queues run under, and their defaults; in a header of
// their own so that the configuration (engine/config/config.hpp) takes its defaults from here
// without a queue.
#include <atomic>
#include <cstdint>

namespace transport {

// io_work budgets, named after nvmet-tcp's (recv 8, send 8, 64 ops per pass). Receive defaults
// to 32, not nvmet-tcp's 8: at 4k qd32 a pass of 8 sends 8 responses per sendmsg and the extra
// segments cost the kernel ~1.5 µs per I/O (bound: 260-407k IOPS at 8, 526-540k at 32,
// spdk_nvme_perf on loopback, A B A B). Send defaults to 64: a host that keeps SQ flow control
// (spdk_nvme_perf) gets a C2HData and a CapsuleResp per read, so 32 reads are 64 PDUs, and one
// sendmsg instead of two gave +7 % (bound) and +3 % (poll) per round, median of 5, 4k qd32.
// RDMA reads "PDUs" as work completions: receives (capsules) and sends (responses).
struct Budgets {
  unsigned recv_pdus = 32;
  unsigned send_pdus = 64;
  unsigned ops_per_pass = 64;
  unsigned reap_batch = 32;
  uint32_t bytes_per_pass = 0;  // 0 = unlimited
  unsigned deadline_us = 0;     // 0 = none
};

// Budgets shared by every queue of a transport and changed live: each pass reads them once
// (relaxed loads; a pass may run with the previous values, never with torn ones per field).
class LiveBudgets {
 public:
  explicit LiveBudgets(const Budgets& b) { set(b); }
  void set(const Budgets& b);
  Budgets load() const;

 private:
  std::atomic<unsigned> _recv{8}, _send{8}, _ops{64}, _reap{32}, _deadline{0};
  std::atomic<uint32_t> _bytes{0};
};

}  // namespace transport
