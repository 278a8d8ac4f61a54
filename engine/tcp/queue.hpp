#pragma once
// One NVMe/TCP queue: a TCP connection carrying one SQ/CQ pair. Receives PDUs into
// preallocated command slots, hands complete capsules to core/, sends R2T, C2HData and
// CapsuleResp back. Everything here runs on the thread executing this queue's io_work
// (one at a time), so nothing is locked and nothing is allocated per command.
#include <sys/uio.h>

#include <array>
#include <functional>
#include <mutex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/io_context.hpp"
#include "engine/core/submission_queue.hpp"
#include "engine/exec/executor.hpp"
#include "engine/stats/counter.hpp"
#include "engine/stats/registry.hpp"
#include "engine/tcp/arrival_stamp.hpp"
#include "engine/tcp/codec.hpp"
#include "engine/tcp/digest.hpp"
#include "engine/tcp/uring_socket.hpp"
#include "engine/transport/budgets.hpp"
#include "engine/transport/io_mechanism.hpp"

namespace core {
class Target;
}

namespace tcp {

struct QueueLimits {
  uint32_t queue_depth = 128;
  uint32_t io_icd_size = 8192;   // in-capsule data accepted on I/O queues
  uint32_t maxh2cdata = 128 * 1024;
  uint32_t mdts_bytes = 1 << 20;
  uint32_t connect_timeout_ms = 10000;  // accept to a completed Connect
  bool arrival_stamps = true;  // the kernel stamps received segments (arrival_stamp.hpp)
};

// The budgets and the I/O mechanism are every transport's (engine/transport/); TCP code names
// them as its own.
using transport::Budgets;
using transport::IoMechanism;
using transport::LiveBudgets;

inline constexpr uint32_t admin_icd_size = 8192;  // NVME_TCP_ADMIN_CCSZ: Connect and friends
inline constexpr size_t rx_buffer_size = 64 * 1024;  // the receive staging buffer of a queue

// Per-command state on the wire, changed only through TcpQueue::set_state.
enum class CmdState : uint8_t { free, recv_icd, wait_h2c, executing, sending };

// Transport-only counters; PDUs, commands and latencies live in the stats::QueueStats block.
struct QueueCounters {
  stats::Counter bytes_rx, bytes_tx, term_sent;
};

class TcpQueue final : public exec::Task, public core::TransportQueue {
 public:
  // With IoMechanism::io_uring and a kernel that refuses it, the queue falls back to epoll
  // (mechanism() says which it uses).
  TcpQueue(int fd, std::string peer, core::Target& target, exec::Executor& executor,
           const QueueLimits& limits, const LiveBudgets& budgets,
           IoMechanism mechanism = IoMechanism::epoll);
  ~TcpQueue() override;

  // exec::Task
  exec::Progress io_work() override { return pass(~0u); }
  exec::Progress io_work_limited(unsigned max_pdus) override { return pass(max_pdus); }
  int incoming_cpu() const override;
  void placed(int worker) override { _stats.worker.store(worker, std::memory_order_relaxed); }
  bool is_admin() const override { return _admin.load(std::memory_order_relaxed); }
  // io_uring: received data shows as CQEs or the ring's task-run flag (IoContext::work_waiting).
  bool polls_in_memory() const override { return _usock != nullptr; }
  // With io_uring the socket's data arrives as CQEs on the ring, yet the socket is watched too:
  // its readiness is what reliably wakes the queue. On an owned ring (DEFER_TASKRUN) the receive's
  // completion work waits for the owner, and the kernel's eventfd signal that should wake it came
  // 12-20 ms late on Linux 6.18 (4k randwrite qd32, bound: 2,005 IOPS, p99 17 ms; with the socket
  // watched 664k). Woken by the socket, the pass's reap asks the ring for the deferred work (on a
  // cooperative ring, bound's, the kernel ran it on the way out of epoll_wait).
  std::array<int, 2> fds() const override { return {_fd, _ioctx.notify_fd()}; }
  IoMechanism mechanism() const { return _usock ? IoMechanism::io_uring : IoMechanism::epoll; }
  // Where its commands' arrival times come from (stats::QueueRow::arrival_clock).
  const char* arrival_clock() const { return _stamps ? "kernel" : "readiness"; }
  void retire() override;

  // core::TransportQueue
  void complete(core::Request& req) override;
  backend::IoContext& io_context() override { return _ioctx; }
  void kick() override;
  uint32_t in_capsule_size() const override;
  // Reads go out of Request::data() by sendmsg, which copies: lent memory is released in
  // free_command(), once the response (after the data) is in the socket. Not with a data
  // digest: it is computed at complete() and sendmsg() copies later, so a write landing in
  // between would make the host see a digest error for bytes nobody spoiled. The copy into the
  // command's buffer is what the digest then covers.
  bool sends_lent_data() const override { return !_neg.ddgst; }
  // In-capsule and H2CData data land where data_in() says; with a data digest they wait in the
  // slot's buffer until the digest is checked, so a corrupted transfer never reaches the medium.
  bool receives_in_place() const override { return !_neg.ddgst; }
  bool size_for(uint32_t entries) override;
  bool defer(core::Request& req) override;
  const char* peer() const override { return _peer.c_str(); }

  // Receive path without a socket (fuzzer, tests): processes bytes as if received.
  // Returns false once the queue decided to close.
  bool feed(std::span<const uint8_t> bytes);
  bool closing() const { return _closing; }
  // Any thread (the accept thread's timer): close the queue unless Connect completed by now.
  void expire_handshake() {
    _handshake_expired.store(true, std::memory_order_relaxed);
    kick();
  }
  bool connected() const { return _connected.load(std::memory_order_relaxed); }
  const QueueCounters& counters() const { return _counters; }
  stats::QueueStats& stats() { return _stats; }
  const stats::QueueStats& stats() const { return _stats; }
  const core::SubmissionQueue& sq() const { return _sq; }
  // Live switching: the executor this queue now belongs to (called during handover, while no
  // io_work runs).
  void set_executor(exec::Executor& e);
  // Called by the owner after retire(); the owner deletes the queue.
  void set_retire_hook(std::function<void(TcpQueue*)> hook) { _retire_hook = std::move(hook); }

 private:
  struct Command;
  enum class RxState : uint8_t { header, data, ddgst };
  enum class TxKind : uint8_t { control, r2t, c2h, c2h_final, resp };
  struct TxItem {
    std::array<iovec, 3> iov;
    uint32_t len = 0;  // bytes over iov (tx_push sums them once, not on every send attempt)
    uint8_t niov = 0;
    TxKind kind = TxKind::control;
    Command* cmd = nullptr;
  };

  // receive.cpp
  unsigned rx_pass(unsigned budget);
  std::span<uint8_t> rx_window();
  void rx_commit(size_t n);
  void note_arrival(uint64_t realtime_ns, size_t fresh_from);
  unsigned rx_process(unsigned budget);
  unsigned rx_in_place(unsigned budget);
  void rx_start_data(Command& c, uint8_t* dst, uint32_t offset);
  void rx_land(const uint8_t* src, size_t n);
  bool rx_header();
  void rx_data_done();
  void on_pdu_header();
  void on_icreq();
  void on_capsule_cmd();
  void on_h2c_data();
  nvme::Status parse_sgl(Command& c);
  void start_command(Command& c);
  void fatal(Fes fes, uint32_t fei);

  // send.cpp
  unsigned tx_pass(unsigned budget);
  void tx_push(const TxItem& item);
  void unstage_responses();
  void tx_sent(const TxItem& item, uint64_t handed_ns);
  uint64_t transmit_end(uint64_t call_ns, uint64_t return_ns);
  void queue_r2t(Command& c);
  void queue_control(uint8_t* pdu, size_t len);
  void drop_tx();
  void arm_writable();

  // queue.cpp
  exec::Progress pass(unsigned max_rx_pdus);
  void identify();
  Command* alloc_command();
  Command* command_of_ttag(uint16_t ttag);
  void free_command(Command& c);
  void set_state(Command& c, CmdState s);
  unsigned reap(unsigned budget);
  void move_ring(const exec::Executor& next);
  // The kind of ring the executor's threads want, made at the next IoContext::ring().
  void want_ring_for(const exec::Executor& e) { _ioctx.set_owned(e.keeps_tasks_on_one_thread(), e.busy_polls()); }
  unsigned resume_deferred();
  Digests digests() const { return {_neg.hdgst, _neg.ddgst}; }

  int _fd;
  std::string _peer;
  core::Target& _target;
  stats::QueueStats _stats;  // before _sq, which records into it
  bool _identified = false;
  // Kicks come from other threads while a live switch may replace the executor: the pointer
  // is guarded (kicks are control-path events, never per command).
  std::mutex _exec_mu;
  exec::Executor* _executor;
  QueueLimits _limits;
  const LiveBudgets& _live_budgets;
  Budgets _budgets;  // this pass's copy
  std::atomic<bool> _admin{false};
  std::atomic<bool> _connected{false};
  std::atomic<bool> _handshake_expired{false};
  uint64_t _pass_bytes = 0;
  // Command data buffers: one mapping, 2 x MDTS per slot (data + Compare scratch), reserved
  // but committed only where transfers touch it; mapped at Connect for the entries the host
  // asked for (an idle or half-open connection maps none). Declared before _ioctx so it
  // outlives any backend I/O still in flight when the queue is destroyed.
  struct Slab {
    uint8_t* base = nullptr;
    size_t len = 0;
    Slab() = default;
    explicit Slab(size_t bytes);
    ~Slab();
    Slab(const Slab&) = delete;
    Slab& operator=(const Slab&) = delete;
  };
  std::unique_ptr<Slab> _slab;
  backend::IoContext _ioctx;
  // After _ioctx: destroyed first, it cancels its receive on the ring before the ring goes.
  std::unique_ptr<UringSocket> _usock;
  core::SubmissionQueue _sq;
  Negotiated _neg;
  uint8_t _hpda = 0;  // the host's required C2H data alignment
  bool _closing = false;
  bool _ring_watched = false;
  std::function<void(TcpQueue*)> _retire_hook;
  QueueCounters _counters;

  // Command slots (the Io inside each is what in-flight backend operations point at). Until
  // Connect the queue has one boot slot (ICReq, then the Connect capsule with its in-capsule
  // data); size_for() then allocates the slots the host asked for.
  std::unique_ptr<Command> _boot;
  std::unique_ptr<uint8_t[]> _boot_buf;
  std::unique_ptr<Command[]> _cmds;
  uint32_t _ncmds = 0;
  std::vector<uint16_t> _free;
  // Commands that yielded (defer()), resumed on the next round; at most one per slot, so the
  // reserve made in size_for() keeps it allocation-free.
  std::vector<core::Request*> _deferred, _resuming;

  // Receive state.
  RxState _rx = RxState::header;
  std::unique_ptr<uint8_t[]> _rxbuf;
  // What rx_process parses: the staging buffer, or (io_uring) a received chunk in place.
  const uint8_t* _rx_base = nullptr;
  size_t _rx_head = 0, _rx_tail = 0;
  std::array<uint8_t, max_hlen + digest_len> _hdr{};
  uint32_t _hdr_have = 0;
  uint32_t _hdr_valid = 0;  // bytes of the current header a TermReq may quote
  CommonHeader _ch;
  Framing _fr;
  Command* _rx_cmd = nullptr;   // command receiving data, or nullptr (TermReq payload)
  uint8_t* _rx_dst = nullptr;
  // A write received in place: the same offset in the command's buffer, where a logical block
  // waits until it is whole (rx_land), and the block size - 1. nullptr / 0 otherwise.
  uint8_t* _rx_stage = nullptr;
  uint32_t _rx_unit_mask = 0;
  uint32_t _rx_left = 0;        // data bytes still to come in this PDU
  uint32_t _rx_pad = 0;         // padding bytes between header and data still to skip
  uint32_t _rx_crc = crc32c_seed;
  std::array<uint8_t, digest_len> _rx_ddgst{};
  uint32_t _rx_ddgst_have = 0;
  std::array<uint8_t, term_max_data> _term_scratch{};
  // Arrival stamps (arrival_stamp.hpp), on the monotonic clock: of the newest receive and of the
  // one before, and where the newest one's bytes begin in what rx_process parses (a PDU that
  // starts before came with the older). _pdu_arrival_ns: the PDU being received.
  bool _stamps = false;
  StampClock _stamp_clock;
  uint64_t _rx_stamp_new = 0, _rx_stamp_old = 0;
  size_t _rx_fresh_from = 0;
  uint64_t _pdu_arrival_ns = 0;
  core::SubmissionQueue::PassTimes _pass;

  // Send state: a ring of PDUs waiting for the socket.
  std::vector<TxItem> _tx;
  size_t _tx_head = 0, _tx_count = 0, _tx_off = 0;
  // CapsuleResps held back behind the data queued with them (send.cpp, resp_trail_bytes).
  std::vector<TxItem> _resp_staged;
  uint64_t _staged_data = 0;  // data bytes queued ahead of the staged responses
  bool _tx_dead = false;
  uint64_t _transmit_ns = 10'000;  // this queue's usual sendmsg() time (transmit_end)
  std::array<uint8_t, ic_hlen> _icresp{};
  std::array<uint8_t, term_max_plen> _term{};
};

}  // namespace tcp
