#pragma once
// One NVMe/TCP queue of the host: a TCP connection carrying one SQ/CQ pair (the admin queue or
// an I/O queue). Non-blocking and pipelined: submit() only fills a preallocated command slot,
// poll() sends what is pending with batched sendmsg() and parses what arrived. No allocation
// and no lock per I/O; a queue belongs to one thread at a time.
//
// Data transfer: host-to-controller data goes in-capsule when it fits the queue's in-capsule
// size (8 KiB on the admin queue, IOCCSZ*16-64 on I/O queues), else the command carries a
// transport SGL (5Ah) and the data follows as H2CData PDUs split by the target's MAXH2CDATA in
// answer to each R2T. Controller-to-host data arrives as C2HData and is copied into the
// command's buffer at DATAO (large payloads are received straight into it).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/initiator/error.hpp"
#include "engine/initiator/queue.hpp"
#include "engine/nvme/spec.hpp"
#include "engine/tcp/codec.hpp"
#include "engine/tcp/pdu.hpp"

struct iovec;

namespace initiator {

// A PDU read without interpretation (tests expecting e.g. a C2HTermReq).
struct RawPdu {
  tcp::CommonHeader ch;
  std::vector<uint8_t> bytes;  // the whole PDU, plen bytes
};

// Per-queue counters (plain integers: a queue has one owner thread).
struct QueueCounters {
  uint64_t commands = 0;      // submitted
  uint64_t completions = 0;   // including aborted ones
  uint64_t pdus_tx = 0;       // complete PDUs sent (capsules and H2CData)
  uint64_t pdus_rx = 0;       // complete PDUs received
  uint64_t r2t = 0;           // R2Ts answered
  uint64_t h2c_data = 0;      // H2CData PDUs sent
  uint64_t c2h_data = 0;      // C2HData PDUs received
  uint64_t success_flag = 0;  // completions by C2HData SUCCESS (no CapsuleResp)
  uint64_t in_capsule = 0;    // commands whose data went in the capsule
  uint64_t bytes_tx = 0;      // socket bytes
  uint64_t bytes_rx = 0;
  uint64_t data_digest_errors = 0;
};

// State::live once ICResp was received; failed and closed close the socket.
class TcpQueue final : public Queue {
 public:

  // Opens a TCP connection, exchanges ICReq/ICResp (HPDA 0, MAXR2T 0, the target's digests)
  // and sends Fabrics Connect. On success cntlid() is the controller's ID from the response.
  static Result<std::unique_ptr<TcpQueue>> connect(const Target& t, const QueueParams& p);

  ~TcpQueue() override;  // closes the socket; outstanding commands are dropped without callbacks
  TcpQueue(const TcpQueue&) = delete;
  TcpQueue& operator=(const TcpQueue&) = delete;

  // Queues a command. Returns its CID, or nullopt when all slots are busy, the queue is not
  // live, or the command is invalid (e.g. in-capsule data larger than icd_size()).
  std::optional<uint16_t> submit(const Io& io) override;
  std::optional<uint16_t> submit_raw(const RawCommand& c) override;

  // Sends pending PDUs and processes received ones without blocking; runs completion callbacks.
  // Returns the number of commands completed, or -1 once the queue has failed.
  int poll() override;
  // Waits up to timeout_ms for the socket to become ready, then poll()s.
  int wait(int timeout_ms) override;
  // Sends as much of the pending PDUs as the socket takes now. False once failed.
  bool flush() override;

  // Drops the callback of an outstanding command (its completion will be discarded), for
  // callers that stop waiting for it and whose context goes away.
  void forget(uint16_t cid) override;

  // Closes the socket now (shutdown + close), as a host that vanishes would.
  void close() override;

  State state() const override { return _state; }
  const Error& error() const override { return _error; }  // valid when state() == failed
  uint16_t qid() const override { return _params.qid; }
  uint16_t cntlid() const override { return _cntlid; }
  uint16_t depth() const override { return _params.depth; }
  uint32_t outstanding() const override { return _outstanding; }
  uint32_t icd_size() const { return _params.icd_size; }
  void set_icd_size(uint32_t bytes) { _params.icd_size = bytes; }
  uint32_t maxh2cdata() const { return _maxh2cdata; }
  bool hdgst() const { return _rx_neg.hdgst; }
  bool ddgst() const { return _rx_neg.ddgst; }
  uint8_t cpda() const { return _cpda; }
  const nvme::Cqe& connect_response() const override { return _connect_cqe; }
  const char* trtype() const override { return "tcp"; }
  const QueueCounters& counters() const { return _counters; }
  // True while PDUs wait for socket space (poll for POLLOUT too).
  bool pending_tx() const { return _tx_count > 0; }

  // --- Raw access for tests that speak the wire themselves. -----------------------------
  int fd() const { return _fd; }
  // Sends bytes as they are (after anything pending), blocking up to timeout_ms.
  Result<Ok> send_raw(std::span<const uint8_t> bytes, int timeout_ms = 5000);
  // Reads the next whole PDU without interpreting it (no digest checks, no state changes).
  Result<RawPdu> recv_raw_pdu(int timeout_ms);
  // True when the target closes the connection (EOF or reset) within timeout_ms; data that
  // arrives meanwhile is discarded.
  bool wait_peer_close(int timeout_ms) override;

 private:
  struct Slot;
  enum class RxState : uint8_t { header, header_rest, pad, data, ddgst };

  explicit TcpQueue(const QueueParams& p);
  Result<Ok> open_socket(const Target& t);
  Result<Ok> exchange_ic(const Target& t);
  Result<Ok> send_connect(const Target& t);

  std::optional<uint16_t> start(Slot& s, const nvme::Sqe& sqe, std::span<uint8_t> data, Dir dir,
                                Placement placement, Callback done);
  void enqueue_tx(uint16_t cid);
  void build_capsule(Slot& s, uint16_t cid, uint32_t icd_len);
  void build_h2c(Slot& s, uint16_t cid);
  int fill_iov(struct iovec* iov, int max) const;
  void advance_tx(size_t n);
  void pdu_sent(uint16_t cid);

  int receive();
  size_t consume(const uint8_t* p, size_t n);
  bool header_done();
  bool on_capsule_resp();
  bool on_r2t();
  bool on_c2h_data_header();
  bool data_done();
  void complete(uint16_t cid, const nvme::Cqe& cqe, bool success_flag);
  void release(uint16_t cid, Completion& c);
  void maybe_finish(uint16_t cid);
  bool protocol_error(tcp::Fes fes, uint32_t fei, std::string what);
  void fail(Error e);

  Result<Ok> run_until_done(uint16_t cid, const bool& done, int timeout_ms);
  Result<Ok> fill_staging(int timeout_ms);

  QueueParams _params;
  State _state = State::idle;
  Error _error;
  int _fd = -1;
  uint16_t _cntlid = 0xffff;
  nvme::Cqe _connect_cqe{};
  tcp::Negotiated _rx_neg;  // what we accept (HPDA 0)
  tcp::Digests _tx_dgst;
  uint8_t _cpda = 0;
  uint32_t _maxh2cdata = 0;

  std::unique_ptr<Slot[]> _slots;
  std::vector<uint16_t> _free;  // stack of free CIDs
  uint32_t _outstanding = 0;
  uint32_t _completed = 0;  // by the current poll()
  QueueCounters _counters;

  // Transmit FIFO of CIDs whose PDU is (partly) unsent; a CID is in it at most once.
  std::vector<uint16_t> _txq;
  uint32_t _tx_head = 0, _tx_count = 0;

  // Receive: a staging buffer and the PDU being parsed.
  std::vector<uint8_t> _rx;
  size_t _rx_begin = 0, _rx_end = 0;
  RxState _rx_state = RxState::header;
  std::array<uint8_t, tcp::max_hlen + tcp::digest_len> _rx_hdr{};
  uint32_t _rx_have = 0;  // bytes of the current state's unit already read
  tcp::CommonHeader _rx_ch;
  tcp::Framing _rx_fr;
  uint16_t _rx_cid = 0;
  uint8_t* _rx_dst = nullptr;  // where this PDU's data goes (nullptr: discarded)
  uint32_t _rx_crc = 0;
  std::array<uint8_t, tcp::term_max_data> _rx_term{};
};

}  // namespace initiator
