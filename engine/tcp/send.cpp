// NVMe/TCP send path: R2T, C2HData and CapsuleResp PDUs gathered into one sendmsg() per
// pass. Headers live in the command slot; data is sent from the command's buffer (no copy).
#include <sys/socket.h>

#include <cerrno>
#include <algorithm>
#include <climits>

#include "engine/stats/usdt.hpp"
#include "engine/tcp/command.hpp"

namespace tcp {
namespace {

// Iovecs per sendmsg: a response with data is 2-3 (header, data, digest) plus a CapsuleResp
// when the host keeps SQ flow control (spdk_nvme_perf does), so 32 commands need 96.
inline constexpr size_t max_iov = 128;

// CapsuleResps are held back behind the data of the pass, and go to the socket once 64 KiB of
// data (one TSO/GSO segment; loopback's too) is queued ahead of them, or with the pass's
// sendmsg(). The host completes a command on its response and answers at once with new
// commands. Interleaved, each response next to its data, the host started on the first ones
// while the rest of the batch was still in sendmsg(), its commands hit our socket while that
// call held it (this CPU then processed them from the backlog: 56-63 % of the host's segments)
// and its batches split (7.5 commands per segment against SPDK's 23). All responses at the end
// of the batch went too far: one batch circulated at a time, the host and the target waited on
// each other, 0.78x (bound) at 4k randread qd32. Trailing each 64 KiB (16 4k reads) keeps two
// batches in flight at qd32 and changes nothing for reads of 64 KiB or more.
inline constexpr uint64_t resp_trail_bytes = 64 * 1024;

// A sendmsg() shorter than this is never taken for a preempted one (transmit_end): a loopback
// delivery of one pass's PDUs takes 5-15 us here.
inline constexpr uint64_t min_transmit_limit_ns = 40'000;

}  // namespace

// The peer is gone: nothing queued can be delivered, and nothing more will be queued.
void TcpQueue::drop_tx() {
  _tx_dead = true;
  _resp_staged.clear();
  _staged_data = 0;
  _tx_count = 0;
  _tx_head = 0;
  _tx_off = 0;
}

void TcpQueue::tx_push(const TxItem& item) {
  if (_tx_dead) return;
  // The ring holds 2 items per command plus ICResp, TermReq and the boot slot's: it cannot
  // overflow. Wrapped by comparison, not %: the ring's size is not a constant, and a division
  // per PDU showed in the profile.
  size_t at = _tx_head + _tx_count;
  if (at >= _tx.size()) at -= _tx.size();
  TxItem& slot = _tx[at];
  slot = item;
  slot.len = 0;
  for (uint8_t k = 0; k < slot.niov; ++k) slot.len += static_cast<uint32_t>(slot.iov[k].iov_len);
  ++_tx_count;
}

void TcpQueue::queue_control(uint8_t* pdu, size_t len) {
  TxItem it;
  it.iov[0] = {pdu, len};
  it.niov = 1;
  it.kind = TxKind::control;
  tx_push(it);
}

void TcpQueue::queue_r2t(Command& c) {
  R2t r{c.req.sqe.cid(), c.index, c.h2c_next, c.req.transfer_len - c.h2c_next};
  TxItem it;
  it.iov[0] = {c.r2t_hdr.data(), write_r2t(c.r2t_hdr, r, digests())};
  it.niov = 1;
  it.kind = TxKind::r2t;
  it.cmd = &c;
  tx_push(it);
}

// core/ finished a command: data first (reads, Identify, log pages), then the response,
// which the SUCCESS flag lets us omit when the host disabled SQ flow control.
void TcpQueue::complete(core::Request& req) {
  // req is always the first member of a slot of this queue (set up in the constructor).
  static_assert(offsetof(Command, req) == 0);
  Command& cmd = *reinterpret_cast<Command*>(&req);
  set_state(cmd, CmdState::sending);
  _sq.record_latency(req, this);
  const bool ok = req.status.ok();
  const bool data = ok && req.dir == core::DataDir::controller_to_host && req.response_len > 0;
  const bool success_flag = data && _sq.sq_flow_disabled();
  if (data) {
    const uint8_t flags = flag::last_pdu | (success_flag ? flag::success : 0);
    DataHeader h{req.sqe.cid(), 0, 0, req.response_len};
    TxItem it;
    it.iov[0] = {cmd.c2h_hdr.data(), write_c2h_data(cmd.c2h_hdr, h, flags, digests(), _hpda)};
    // Lent reads are sent from the namespace's memory (see Request::data()).
    it.iov[1] = {const_cast<uint8_t*>(req.data()), req.response_len};
    it.niov = 2;
    if (_neg.ddgst) {
      nvme::put_le<uint32_t>(cmd.ddgst.data(), 0, crc32c(req.data(), req.response_len));
      it.iov[2] = {cmd.ddgst.data(), digest_len};
      it.niov = 3;
    }
    it.kind = success_flag ? TxKind::c2h_final : TxKind::c2h;
    it.cmd = &cmd;
    tx_push(it);
    if (success_flag) return;
    _staged_data += req.response_len;
  }
  TxItem it;
  it.iov[0] = {cmd.resp_hdr.data(), write_capsule_resp(cmd.resp_hdr, req.cqe, digests())};
  it.niov = 1;
  it.kind = TxKind::resp;
  it.cmd = &cmd;
  // One slot per command was reserved (size_for): the fallback only keeps a response from being
  // lost if that ever changed; its own data is queued already, so the order stays valid.
  if (_resp_staged.size() == _resp_staged.capacity()) return tx_push(it);
  _resp_staged.push_back(it);
  if (_staged_data >= resp_trail_bytes) unstage_responses();
}

// Responses follow the data queued with them, up to resp_trail_bytes of it (see there).
void TcpQueue::unstage_responses() {
  for (const TxItem& it : _resp_staged) tx_push(it);
  _resp_staged.clear();
  _staged_data = 0;
}


// item's last byte is in the socket, handed to it at handed_ns: a response ends its command's
// target latency there.
void TcpQueue::tx_sent(const TxItem& item, uint64_t handed_ns) {
  if (item.kind != TxKind::resp && item.kind != TxKind::c2h_final) return;
  _sq.record_sent(item.cmd->req, handed_ns);
  free_command(*item.cmd);
}

// The one writability rule for both mechanisms: the executor watches the socket (fds()), edge-
// triggered for EPOLLOUT, so a send that filled it makes the kernel signal the next drain;
// one-shot executors arm EPOLLOUT when told (exec::Task).
void TcpQueue::arm_writable() { exec_tx_blocked = true; }

// When a sendmsg() that began at call_ns and returned at return_ns handed its data over: its
// return, the end of the kernel's transmit work (on loopback that includes delivering to the
// host's socket), unless the call took far longer than this queue's calls do. Then the thread
// was preempted in it, and almost always right after the transmit: the softirq that delivers
// the data runs with preemption off, so a reschedule due meanwhile happens the moment it ends.
// The host has the data by then; charging the target for the time the worker spent off its CPU
// after it (an 80 % hog: milliseconds) put its p99 at 2-3x the host's. Such a call ends at its
// start plus the usual transmit time, which this queue learns as it goes (a moving average of
// its calls, each counted up to the limit).
uint64_t TcpQueue::transmit_end(uint64_t call_ns, uint64_t return_ns) {
  const uint64_t took = return_ns - call_ns;
  const uint64_t limit = std::max<uint64_t>(4 * _transmit_ns, min_transmit_limit_ns);
  const uint64_t counted = std::min(took, limit);
  _transmit_ns = _transmit_ns - _transmit_ns / 16 + counted / 16;
  return took <= limit ? return_ns : call_ns + _transmit_ns;
}

// Sends up to budget PDUs in one sendmsg(); returns the PDUs fully sent.
unsigned TcpQueue::tx_pass(unsigned budget) {
  if (!_resp_staged.empty()) unstage_responses();
  if (_tx_count == 0 || _fd < 0) return 0;
  std::array<iovec, max_iov> iov;
  const size_t cap = _tx.size();
  size_t niov = 0, items = 0, offered = 0;
  for (size_t at = _tx_head; items < _tx_count && items < budget; ++items) {
    const TxItem& it = _tx[at];
    if (niov + it.niov > max_iov) break;
    for (uint8_t k = 0; k < it.niov; ++k) iov[niov++] = it.iov[k];
    offered += it.len;
    if (++at == cap) at = 0;
  }
  if (niov == 0) return 0;  // a zero budget
  // Skip what a previous partial send already wrote.
  size_t skip = _tx_off, first = 0;
  while (skip >= iov[first].iov_len) skip -= iov[first++].iov_len;
  iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + skip;
  iov[first].iov_len -= skip;

  offered -= _tx_off;

  msghdr msg{};
  msg.msg_iov = iov.data() + first;
  msg.msg_iovlen = niov - first;
  const uint64_t call_ns = exec::monotonic_ns();
  const ssize_t n = ::sendmsg(_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  const uint64_t handed_ns = transmit_end(call_ns, exec::monotonic_ns());
  if (n < 0 && errno != EAGAIN && errno != EINTR) {
    _closing = true;
    drop_tx();
    return 0;
  }
  // The socket took less than offered (EAGAIN or a short send): data is left unsent, so the
  // queue must learn when the socket drains, whatever else wakes it.
  if (n < 0 || static_cast<size_t>(n) < offered) arm_writable();
  if (n < 0) return 0;
  _counters.bytes_tx.add(static_cast<uint64_t>(n));
  _pass_bytes += static_cast<uint64_t>(n);
  size_t left = static_cast<size_t>(n) + _tx_off;
  unsigned done = 0;
  while (_tx_count > 0) {
    const TxItem& it = _tx[_tx_head];
    if (left < it.len) break;
    left -= it.len;
    if (++_tx_head == cap) _tx_head = 0;
    --_tx_count;
    ++done;
    tx_sent(it, handed_ns);  // frees the command, never queues: the slot stays as it is until reused
  }
  _tx_off = left;
  _stats.pdus_tx.add(done);
  return done;
}

}  // namespace tcp
