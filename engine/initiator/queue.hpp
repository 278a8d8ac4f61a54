#pragma once
// One NVMe-oF queue of the host (an SQ/CQ pair: the admin queue or an I/O queue), whatever
// carries it: a TCP connection (TcpQueue, tcp/tcp_queue.hpp) or an RDMA queue pair (RdmaQueue,
// rdma/rdma_queue.hpp). The load generator, the Controller and the sync wrappers drive this
// interface only. Non-blocking and pipelined: submit() fills a preallocated command slot, poll()
// moves what is pending and runs completion callbacks. No allocation and no lock per I/O; a
// queue belongs to one thread at a time.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "engine/initiator/error.hpp"
#include "engine/nvme/spec.hpp"

namespace initiator {

struct Target;

// CLOCK_MONOTONIC in nanoseconds; the clock of every latency the initiator reports.
uint64_t monotonic_ns();

enum class Op : uint8_t { read, write, flush, write_zeroes, dsm, compare };

// Direction of a command's data.
enum class Dir : uint8_t { none, host_to_ctrl, ctrl_to_host };

// How host-to-controller data travels over NVMe/TCP. automatic: in-capsule when it fits, else
// R2T. An RDMA queue sends all data by keyed SGL and ignores it.
enum class Placement : uint8_t { automatic, in_capsule, r2t };

struct Completion {
  uint16_t cid = 0;
  nvme::Cqe cqe{};           // as received; zeros when the C2HData SUCCESS flag completed it
  nvme::Status status{};     // from cqe.status (success for SUCCESS-flag completions)
  bool aborted = false;      // the queue failed before the response came: see Queue::error()
  bool success_flag = false; // completed by C2HData with SUCCESS, no CapsuleResp
  uint32_t bytes = 0;        // data length of the command
  uint64_t submit_ns = 0;    // monotonic_ns() at submit()
  uint64_t complete_ns = 0;  // monotonic_ns() when the completion was parsed
  void* ctx = nullptr;       // the ctx given at submit

  uint64_t latency_ns() const { return complete_ns - submit_ns; }
  bool ok() const { return !aborted && status.ok(); }
};

// Called from poll() (or from a failing queue) exactly once per submitted command, after its
// slot was freed, so it may submit again (but not poll()/wait() the same queue). A plain
// function and a context: no allocation. The destructor drops outstanding commands silently.
using CompletionFn = void (*)(void* ctx, const Completion& c);

struct Callback {
  CompletionFn fn = nullptr;
  void* ctx = nullptr;
};

// Fills in what c reports about command cid and runs cb. Queues call it after freeing the
// command's slot, so the callback may submit again.
void deliver(Completion& c, uint16_t cid, uint32_t bytes, uint64_t submit_ns, Callback cb);

// A typed NVM command. buf is the destination of read, the source of write/compare (never
// modified) and the 16-byte ranges of dsm; flush and write_zeroes take none. The buffer must
// stay valid until the completion.
struct Io {
  Op op = Op::read;
  uint32_t nsid = 1;
  uint64_t slba = 0;
  uint16_t nlb0 = 0;  // number of logical blocks - 1
  std::span<uint8_t> buf;
  bool fua = false;
  Callback done;
};

// Any command: the SQE (CID and DPTR are filled in), its data and direction.
struct RawCommand {
  nvme::Sqe sqe;
  std::span<uint8_t> data;
  Dir dir = Dir::none;
  Placement placement = Placement::automatic;
  Callback done;
};

// What queue connection needs; Controller fills it from a Target.
struct QueueParams {
  uint16_t qid = 0;
  uint16_t depth = 32;          // command slots: commands this host keeps outstanding
  // Connect SQSIZE (0's based entries); 0 = depth - 1, the kernel host's convention (depth
  // commands in depth entries, one more than SQ flow control allows). Controller picks
  // depth itself, capped at CAP.MQES, so that depth commands fit under SQ flow control.
  uint16_t sqsize = 0;
  uint32_t kato_ms = 0;         // admin queue only
  uint16_t cntlid = 0xffff;     // 0xFFFF: dynamic (admin queue)
  uint32_t icd_size = 8192;     // in-capsule data limit for host-to-controller data
  int timeout_ms = 5000;        // TCP connect, ICReq/ICResp and Connect
};

// The SQE and data direction of a typed command; nullopt when io is invalid (DSM ranges).
struct BuiltCommand {
  nvme::Sqe sqe;
  Dir dir = Dir::none;
};
std::optional<BuiltCommand> build_command(const Io& io);

class Queue {
 public:
  enum class State : uint8_t {
    idle,       // not connected
    live,       // connected: commands may be submitted
    failed,     // ended by an error (error() says which); the connection is closed
    closed,     // closed by close() or disconnect()
  };

  virtual ~Queue() = default;

  // Queues a command. Returns its CID, or nullopt when all slots are busy, the queue is not
  // live, or the command is invalid for this queue.
  virtual std::optional<uint16_t> submit(const Io& io) = 0;
  virtual std::optional<uint16_t> submit_raw(const RawCommand& c) = 0;
  // Moves pending commands and completions without blocking; runs completion callbacks.
  // Returns the number of commands completed, or -1 once the queue has failed.
  virtual int poll() = 0;
  // Waits up to timeout_ms for something to arrive, then poll()s.
  virtual int wait(int timeout_ms) = 0;
  // Hands pending commands to the transport now. False once failed.
  virtual bool flush() = 0;
  // Drops the callback of an outstanding command (its completion will be discarded).
  virtual void forget(uint16_t cid) = 0;
  // Ends the connection now, as a host that vanishes would; outstanding commands abort.
  virtual void close() = 0;
  // True when the target ends the connection within timeout_ms.
  virtual bool wait_peer_close(int timeout_ms) = 0;
  // Makes [p, p + len) usable as command data without per-command work: RDMA registers it once
  // (commands on other memory pay a registration each); TCP needs nothing.
  virtual Result<Ok> register_memory(void* p, size_t len) {
    (void)p, (void)len;
    return Ok{};
  }

  // Fabrics Disconnect on an I/O queue (waits for its response), then closes; the admin queue
  // just closes (Controller::disconnect() shuts the controller down first). Closed either way.
  Result<Ok> disconnect(int timeout_ms = 5000);

  virtual State state() const = 0;
  virtual const Error& error() const = 0;  // valid when state() == failed
  virtual uint16_t qid() const = 0;
  virtual uint16_t cntlid() const = 0;
  virtual uint16_t depth() const = 0;
  virtual uint32_t outstanding() const = 0;
  virtual const nvme::Cqe& connect_response() const = 0;
  virtual const char* trtype() const = 0;  // "tcp" or "rdma"
};

}  // namespace initiator
