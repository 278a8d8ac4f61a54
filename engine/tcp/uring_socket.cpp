// io_uring receive for a TCP queue (see uring_socket.hpp).
#include "engine/tcp/uring_socket.hpp"

#include "engine/tcp/arrival_stamp.hpp"

#include <liburing.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tcp {
namespace {

constexpr uint16_t buffer_group = 0;  // one group per ring: the ring is the queue's own

void* map_pages(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

UringSocket::UringSocket(int fd, backend::IoContext& ctx, std::string& error) : _fd(fd), _ctx(ctx) {
  _msg.msg_controllen = arrival_cmsg_space;
  // The buffer ring itself must be page aligned (the kernel pins it); the buffers follow it in
  // the same mapping so a queue costs one mmap.
  _br_bytes = sizeof(io_uring_buf) * buffer_count;
  const size_t total = _br_bytes + size_t{buffer_count} * buffer_size;
  void* mem = map_pages(total);
  if (mem == nullptr) {
    error = std::string("cannot map receive buffers: ") + std::strerror(errno);
    return;
  }
  _br = static_cast<io_uring_buf_ring*>(mem);
  _bufs = static_cast<uint8_t*>(mem) + _br_bytes;
  if (!attach(error)) {
    munmap(mem, total);
    _br = nullptr;
  }
}

bool UringSocket::attach(std::string& error) {
  io_uring* ring = _ctx.ring();
  if (ring == nullptr) {
    error = std::string("io_uring setup failed: ") + std::strerror(errno);
    return false;
  }
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uintptr_t>(_br);
  reg.ring_entries = buffer_count;
  reg.bgid = buffer_group;
  if (const int ret = io_uring_register_buf_ring(ring, &reg, 0); ret < 0) {
    error = std::string("provided buffer ring refused: ") + std::strerror(-ret);
    return false;
  }
  io_uring_buf_ring_init(_br);
  // Buffers still holding unread chunks (from before a move) go back as they are consumed.
  bool held[buffer_count] = {};
  for (unsigned i = 0; i < _count; ++i) held[_fifo[(_head + i) % buffer_count].bid] = true;
  int added = 0;
  for (unsigned i = 0; i < buffer_count; ++i) {
    if (held[i]) continue;
    io_uring_buf_ring_add(_br, _bufs + size_t{i} * buffer_size, buffer_size, static_cast<uint16_t>(i),
                          io_uring_buf_ring_mask(buffer_count), added++);
  }
  io_uring_buf_ring_advance(_br, added);
  _attached = true;
  _ctx.set_foreign_sink(this);
  if (!_eof) arm_recv();
  return true;
}

void UringSocket::cancel_and_wait() {
  if (!_recv_armed) return;
  if (io_uring_sqe* sqe = _ctx.foreign_sqe()) {
    // Every operation of ours on this fd: the multishot receive.
    io_uring_prep_cancel_fd(sqe, _fd, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(sqe, tag(op_cancel));
  }
  _ctx.wait_foreign([this] { return !_recv_armed; });
}

bool UringSocket::detach() {
  if (!_attached) return true;
  if (!_ctx.usable_here()) return false;
  cancel_and_wait();
  // The registration goes with the ring; the buffers and the chunks in them are ours.
  io_uring_unregister_buf_ring(_ctx.ring(), buffer_group);
  _ctx.set_foreign_sink(nullptr);
  _attached = false;
  return true;
}

UringSocket::~UringSocket() {
  if (_br == nullptr) return;
  if (_attached) {
    cancel_and_wait();
    _ctx.set_foreign_sink(nullptr);
    io_uring_unregister_buf_ring(_ctx.ring(), buffer_group);
  }
  munmap(_br, _br_bytes + size_t{buffer_count} * buffer_size);
}

std::string UringSocket::probe() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return std::strerror(errno);
  std::string error;
  {
    backend::IoContext ctx(8);
    UringSocket s(sv[0], ctx, error);
    if (error.empty()) {
      // The receive must really deliver: older kernels accept the SQE and fail it with EINVAL.
      const char msg[] = "probe";
      if (write(sv[1], msg, sizeof msg) != sizeof msg) error = std::strerror(errno);
      ctx.flush_submissions();
      uint8_t got[sizeof msg];
      ssize_t n = 0;
      for (int spin = 0; spin < 1000 && n == 0 && error.empty(); ++spin) {
        io_uring_cqe* cqe = nullptr;
        (void)io_uring_wait_cqe(ctx.ring(), &cqe);  // blocks until a CQE; reap() consumes it
        ctx.reap(8, [](backend::Io&) {});
        n = s.read(got);
      }
      if (error.empty() && n != static_cast<ssize_t>(sizeof msg)) error = "multishot receive delivered nothing";
    }
  }
  close(sv[0]);
  close(sv[1]);
  return error;
}

void UringSocket::arm_recv() {
  io_uring_sqe* sqe = _ctx.foreign_sqe();
  if (sqe == nullptr) return;  // ring full: read() re-arms on its next call
  io_uring_prep_recvmsg_multishot(sqe, _fd, &_msg, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = buffer_group;
  io_uring_sqe_set_data64(sqe, tag(op_recv));
  _recv_armed = true;
}

void UringSocket::on_cqe(uint64_t user_data, int32_t res, uint32_t flags) {
  switch (static_cast<Op>(user_data >> 3)) {
    case op_cancel:
      return;
    case op_recv:
      break;
  }
  if (!(flags & IORING_CQE_F_MORE)) _recv_armed = false;
  if (res > 0 && (flags & IORING_CQE_F_BUFFER)) {
    const auto bid = static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT);
    uint8_t* buf = _bufs + size_t{bid} * buffer_size;
    io_uring_recvmsg_out* out = io_uring_recvmsg_validate(buf, res, &_msg);
    const uint32_t payload = out ? io_uring_recvmsg_payload_length(out, res, &_msg) : 0;
    if (payload > 0) {
      // The control messages sit between the header and the payload, in the buffer.
      msghdr got{};
      got.msg_control = io_uring_recvmsg_cmsg_firsthdr(out, &_msg);
      got.msg_controllen = got.msg_control ? out->controllen : 0;
      const auto off = static_cast<uint32_t>(static_cast<uint8_t*>(io_uring_recvmsg_payload(out, &_msg)) - buf);
      // At most buffer_count chunks exist: each holds one of the provided buffers.
      _fifo[(_head + _count++) % buffer_count] = {bid, off, off + payload,
                                                  got.msg_control ? arrival_stamp_of(got) : 0};
      ++_arrivals;
      return;
    }
    // A buffer with no payload: the end of the stream (a receive of 0 bytes), or one the
    // kernel could not fill as asked; either way it goes back, and the stream ends.
    if (_attached) recycle(bid);
    _eof = true;
    return;
  }
  // ENOBUFS: every buffer is waiting in the FIFO; read() re-arms once it frees one. ECANCELED:
  // our own teardown. Anything else (0 = the host closed, or a socket error) ends the stream.
  if (res == -ENOBUFS || res == -ECANCELED) return;
  if (res <= 0) _eof = true;
}

void UringSocket::recycle(uint16_t bid) {
  if (!_attached) return;  // attach() hands every buffer no chunk holds to the new ring
  io_uring_buf_ring_add(_br, _bufs + size_t{bid} * buffer_size, buffer_size, bid,
                        io_uring_buf_ring_mask(buffer_count), 0);
  io_uring_buf_ring_advance(_br, 1);
}

std::span<const uint8_t> UringSocket::front() {
  if (!_attached) {
    // First use on a new thread after a move: the ring is new too.
    std::string error;
    if (!attach(error)) _eof = true;
  }
  // A receive that stopped for lack of buffers resumes once one is back (submitted with this
  // pass's flush_submissions).
  if (_attached && !_recv_armed && !_eof && _count < buffer_count) arm_recv();
  if (_count == 0) return {};
  const Chunk& c = _fifo[_head];
  return {_bufs + size_t{c.bid} * buffer_size + c.off, c.len - c.off};
}

void UringSocket::consume(size_t n) {
  Chunk& c = _fifo[_head];
  c.off += static_cast<uint32_t>(n);
  if (c.off < c.len) return;
  recycle(c.bid);
  _head = (_head + 1) % buffer_count;
  --_count;
  if (_attached && !_recv_armed && !_eof) arm_recv();  // it stopped for lack of buffers
}

ssize_t UringSocket::read(std::span<uint8_t> dst) {
  size_t copied = 0;
  for (auto src = front(); !src.empty() && copied < dst.size(); src = front()) {
    const size_t n = std::min(src.size(), dst.size() - copied);
    std::memcpy(dst.data() + copied, src.data(), n);
    copied += n;
    consume(n);
  }
  if (copied > 0) return static_cast<ssize_t>(copied);
  return ended() ? -1 : 0;
}

}  // namespace tcp
