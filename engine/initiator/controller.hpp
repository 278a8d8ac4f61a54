#pragma once
// An NVMe-oF controller as the host sees it: the admin queue (its own TCP connection or RDMA
// queue pair, as Target::trtype says), the enable sequence, synchronous admin commands, and the
// factory of I/O queues.
//
// connect(): TCP + ICReq/ICResp (or rdma_cm connect), Fabrics Connect (QID 0, SQSIZE 31, KATO, dynamic CNTLID),
// Property Get CAP/VS, Property Set CC (EN=1, IOSQES=6, IOCQES=4), CSTS.RDY polled up to
// CAP.TO, Identify Controller. Not thread-safe: one thread drives a Controller at a time.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "engine/initiator/error.hpp"
#include "engine/initiator/identify.hpp"
#include "engine/initiator/tcp/tcp_queue.hpp"
#include "engine/initiator/target.hpp"

namespace initiator {

inline constexpr uint16_t admin_queue_depth = 32;     // Connect SQSIZE 31
inline constexpr uint32_t admin_icd_size = 8192;      // NVMe/TCP: admin in-capsule data
inline constexpr uint32_t capsule_sqe_bytes = 64;     // IOCCSZ counts the SQE too

class Controller {
 public:
  static Result<std::unique_ptr<Controller>> connect(const Target& t);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // A new I/O queue: its own TCP connection, Connect with the next QID, this CNTLID and
  // SQSIZE depth-1 (depth 0 = Target::queue_depth), in-capsule limit IOCCSZ*16-64.
  // NVMe/TCP only (tests that speak the TCP wire use its extras).
  Result<std::unique_ptr<TcpQueue>> create_io_queue(uint16_t depth = 0);
  // The same on the target's transport (TCP or RDMA): what transport-neutral callers use.
  Result<std::unique_ptr<Queue>> create_queue(uint16_t depth = 0);

  // --- Synchronous admin commands (each waits up to Target::timeout_ms). -------------------
  // Any admin command; a non-success status is Error{Kind::nvme} with the CQE.
  Result<Completion> admin(RawCommand c);
  Result<std::vector<uint8_t>> identify(uint8_t cns, uint32_t nsid = 0, uint16_t cntid = 0);
  Result<std::vector<uint8_t>> get_log_page(uint8_t lid, uint32_t len, uint64_t offset = 0,
                                            uint8_t lsp = 0, uint32_t nsid = 0xffffffff);
  Result<uint32_t> get_features(uint8_t fid, uint32_t cdw11 = 0, uint32_t nsid = 0);  // dw0
  Result<uint32_t> set_features(uint8_t fid, uint32_t value, uint32_t nsid = 0);      // dw0
  Result<Ok> keep_alive();
  // CAP is read as 8 bytes, every other property as 4.
  Result<uint64_t> property_get(nvme::Property p);
  Result<Ok> property_set(nvme::Property p, uint64_t value);

  // --- Asynchronous events (non-blocking). ---------------------------------------------------
  // Posts one Asynchronous Event Request; it completes when the controller has an event.
  Result<Ok> submit_async_event();
  // The oldest completed AER: its dw0 (type | info << 8 | log page << 16), or its error.
  std::optional<Result<uint32_t>> take_async_event();
  // Polls the admin queue until an AER completes or timeout_ms passes.
  Result<uint32_t> wait_async_event(int timeout_ms);

  // Processes admin completions without blocking and sends Keep Alive every KATO/2.
  // Returns false once the admin queue has failed.
  bool poll();

  // Normal shutdown: CC.SHN = 01b, wait for CSTS.SHST = 10b, close the admin queue.
  Result<Ok> disconnect();

  uint16_t cntlid() const { return _admin->cntlid(); }
  uint64_t cap() const { return _cap; }
  uint32_t vs() const { return _vs; }
  const ControllerIdentity& identity() const { return _id; }
  // In-capsule data limit of I/O queues: IOCCSZ*16 - 64 bytes (0 for a discovery controller).
  uint32_t io_icd_size() const;
  // Largest transfer per command from MDTS and CAP.MPSMIN; 0 = no limit.
  uint64_t mdts_bytes() const;
  Queue& admin_queue() { return *_admin; }
  const Target& target() const { return _target; }

 private:
  explicit Controller(const Target& t);
  Result<Ok> enable();
  QueueParams io_queue_params(uint16_t depth) const;

  Target _target;
  std::unique_ptr<Queue> _admin;
  uint64_t _cap = 0;
  uint32_t _vs = 0;
  ControllerIdentity _id;
  uint16_t _next_qid = 1;
  std::deque<Result<uint32_t>> _events;
  bool _keep_alive_outstanding = false;
  uint64_t _last_keep_alive_ns = 0;
};

}  // namespace initiator
