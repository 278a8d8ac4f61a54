#pragma once
// The io_uring receive side of a TCP queue (io_mechanism "io_uring"): one multishot RECVMSG with
// provided buffers armed on the queue's own ring (RECVMSG, not RECV: its buffers carry the
// receive's control messages, where the kernel's arrival stamp is; arrival_stamp.hpp), so the kernel delivers data without a
// recv() syscall per pass. The executor watches the socket and the ring's eventfd (the one its
// backend completions use): socket readiness is the dependable wake-up (TcpQueue::fds()).
// Received chunks wait in a fixed FIFO until the receive path parses them in place (front(),
// consume()); a buffer goes back to the kernel as soon as it is consumed.
//
// Sends are not here: the send path stays one sendmsg() per pass (it already batches every PDU
// of the pass), and the watched socket tells when a full one drains.
//
// Only the thread running the queue's io_work touches it, like everything in the queue.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include <sys/socket.h>

#include "engine/backend/io_context.hpp"

struct io_uring_buf_ring;

namespace tcp {

class UringSocket final : backend::IoContext::ForeignSink {
 public:
  static constexpr unsigned buffer_count = 16;       // power of two (buffer-ring size)
  // One receive fills at most one buffer, and each costs a pass through tcp_recvmsg (socket
  // lock, window update, perhaps an ACK). At 16 KiB a qd32 burst of 4k writes (133 KiB) took 9
  // of them where the epoll path's recv() into its 64 KiB staging buffer takes 3: 64 KiB buffers
  // gave 1.25x (1.08-1.42) the 4k randwrite qd32 IOPS in bound, 1.20x in poll (4 rounds).
  static constexpr uint32_t buffer_size = 64 * 1024;

  // Sets up the buffer ring on ctx's ring and arms the receive. On failure error is set and
  // the object is unusable (armed() false).
  UringSocket(int fd, backend::IoContext& ctx, std::string& error);
  // Cancels the receive and waits for its last completions: until then the
  // kernel may still write into the buffers.
  ~UringSocket();
  UringSocket(const UringSocket&) = delete;
  UringSocket& operator=(const UringSocket&) = delete;

  bool armed() const { return _br != nullptr; }
  // The queue moves to another thread and its ring goes (IoContext::close_ring): cancels the
  // receive and waits for its last completions, on the ring's owner. Received
  // chunks stay readable; the next read() sets the buffers up on the new ring. False when
  // called on another thread than the owner (nothing done).
  bool detach();
  // The oldest received bytes not yet consumed, in place in a provided buffer (empty when none
  // are buffered). The receive path parses PDUs straight out of it: no copy to a staging buffer.
  std::span<const uint8_t> front();
  // The kernel's receive stamp of front()'s chunk (CLOCK_REALTIME ns; 0 = none).
  uint64_t front_stamp() const { return _count ? _fifo[_head].stamp : 0; }
  // n bytes of front() were used; a buffer goes back to the kernel once all of it was.
  void consume(size_t n);
  // The host closed the connection or it failed, and every byte before that was consumed.
  bool ended() const { return _eof && _count == 0; }
  // Copies received bytes into dst. Returns the count, 0 when nothing is buffered (and the
  // connection is fine), -1 when the host closed the connection or it failed.
  ssize_t read(std::span<uint8_t> dst);
  bool buffered() const { return _count > 0; }
  // Chunks received since the last call. A receive armed or re-armed by a flush completes in
  // that flush when data already waits (a new queue's ICReq, a resume after ENOBUFS), so the
  // reap after it is where those bytes show up: the caller's receive has not seen them yet.
  unsigned take_arrivals() { return std::exchange(_arrivals, 0u); }

  // Whether the probe could set a multishot receive with provided buffers up on this kernel.
  static std::string probe();

 private:
  enum Op : uint64_t { op_recv = 1, op_cancel = 3 };
  struct Chunk {
    uint16_t bid = 0;
    uint32_t off = 0, len = 0;  // the payload is [off, len) of the buffer, after RECVMSG's header
    uint64_t stamp = 0;
  };

  void on_cqe(uint64_t user_data, int32_t res, uint32_t flags) override;
  // Registers the buffer ring on the context's current ring with every buffer not held by a
  // chunk, and arms the receive. False (with error) when the ring refuses it.
  bool attach(std::string& error);
  void cancel_and_wait();
  void arm_recv();
  void recycle(uint16_t bid);
  static uint64_t tag(Op op) { return (uint64_t{op} << 3) | backend::IoContext::foreign_tag; }

  int _fd;
  backend::IoContext& _ctx;
  // The multishot RECVMSG's template: no address, room for the stamp's control message. The
  // kernel reads it when the receive is armed.
  msghdr _msg{};
  io_uring_buf_ring* _br = nullptr;
  size_t _br_bytes = 0;
  uint8_t* _bufs = nullptr;
  bool _attached = false;  // the buffer ring is registered on the context's ring
  bool _recv_armed = false;
  bool _eof = false;  // end of stream or an error: nothing more will arrive
  // Chunks received and not yet consumed, oldest first. At most buffer_count exist (one per
  // provided buffer), so a fixed ring suffices.
  Chunk _fifo[buffer_count];
  unsigned _head = 0, _count = 0;
  unsigned _arrivals = 0;  // take_arrivals()
};

}  // namespace tcp
