// NVMe/TCP receive path: bytes from the socket → PDUs → commands handed to core/.
// Headers are parsed out of a staging buffer filled by large recv() calls; large data parts
// are received straight into the command's buffer (no copy through the staging buffer).
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/core/target.hpp"
#include "engine/stats/usdt.hpp"
#include "engine/tcp/command.hpp"

namespace tcp {
namespace {

// Below this many data bytes, copying out of the staging buffer beats another recv().
inline constexpr uint32_t direct_recv_min = 4096;

}  // namespace

unsigned TcpQueue::rx_pass(unsigned budget) {
  unsigned pdus = rx_process(budget);
  while (pdus < budget && !_closing && _fd >= 0) {
    if (_usock) {
      const unsigned got = rx_in_place(budget - pdus);
      pdus += got;
      if (got > 0 || (!_usock->front().empty() && !_closing)) continue;
      if (!_usock->ended()) break;
      _closing = true;  // the host closed the connection, or it failed
      drop_tx();
      break;
    }
    const auto win = rx_window();
    const size_t fresh_from = _rx_tail;
    // recvmsg, not recv: its control message carries the kernel's arrival stamp.
    iovec iov{win.data(), win.size()};
    alignas(cmsghdr) char control[arrival_cmsg_space];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (_stamps) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
    }
    const ssize_t n = ::recvmsg(_fd, &msg, MSG_DONTWAIT);
    if (n > 0) {
      note_arrival(_stamps ? arrival_stamp_of(msg) : 0, fresh_from);
      _counters.bytes_rx.add(static_cast<uint64_t>(n));
      _pass_bytes += static_cast<uint64_t>(n);
      rx_commit(static_cast<size_t>(n));
      pdus += rx_process(budget - pdus);
      // A short read took all the socket had, and the data coming next raises a new readiness
      // event (edge-triggered, or found by the re-arm): asking again now only finds EAGAIN, a
      // syscall that also locks the socket, and the host's segments arriving meanwhile wait in
      // its backlog for this CPU to process them. Unless the host shut down: its end of stream
      // may have come with the data just read, in the same event, and no event follows it.
      if (static_cast<size_t>(n) < win.size() && !exec_peer_closed.load(std::memory_order_relaxed)) break;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    // 0: the host closed the connection; other errors: the connection is gone.
    _closing = true;
    drop_tx();
    break;
  }
  return pdus;
}

// io_uring: parses the oldest received chunk where the kernel put it (one copy fewer than
// through the staging buffer: 4k writes carry their data in the capsule). The parser keeps no
// pointer into its input: headers are gathered in _hdr and data copied to the command.
unsigned TcpQueue::rx_in_place(unsigned budget) {
  const auto chunk = _usock->front();
  if (chunk.empty()) return 0;
  _rx_base = chunk.data();
  _rx_head = 0;
  _rx_tail = chunk.size();
  note_arrival(_usock->front_stamp(), 0);
  const unsigned pdus = rx_process(budget);
  const size_t used = _rx_head;
  _rx_base = _rxbuf.get();
  _rx_head = _rx_tail = 0;
  _usock->consume(used);
  _counters.bytes_rx.add(used);
  _pass_bytes += used;
  return pdus;
}

// A receive brought bytes stamped realtime_ns (0: none); those from fresh_from on are its.
void TcpQueue::note_arrival(uint64_t realtime_ns, size_t fresh_from) {
  _rx_stamp_old = _rx_stamp_new;
  _rx_stamp_new = _stamp_clock.to_monotonic(realtime_ns);
  _rx_fresh_from = fresh_from;
}

std::span<uint8_t> TcpQueue::rx_window() {
  // A write received in place takes the recv() in the command's buffer: a short recv() would
  // leave a torn block in the namespace (rx_land publishes whole blocks from there).
  if (_rx == RxState::data && _rx_pad == 0 && _rx_head == _rx_tail && _rx_left >= direct_recv_min)
    return {_rx_stage ? _rx_stage : _rx_dst, _rx_left};
  if (_rx_head == _rx_tail) _rx_head = _rx_tail = 0;
  if (_rx_tail == rx_buffer_size || (_rx_head > rx_buffer_size / 2)) {
    std::memmove(_rxbuf.get(), _rxbuf.get() + _rx_head, _rx_tail - _rx_head);
    _rx_fresh_from = _rx_fresh_from > _rx_head ? _rx_fresh_from - _rx_head : 0;
    _rx_tail -= _rx_head;
    _rx_head = 0;
  }
  return {_rxbuf.get() + _rx_tail, rx_buffer_size - _rx_tail};
}

void TcpQueue::rx_commit(size_t n) {
  if (_rx == RxState::data && _rx_pad == 0 && _rx_head == _rx_tail && _rx_left >= direct_recv_min &&
      n <= _rx_left) {
    // Landed directly in the command buffer (see rx_window).
    if (_fr.has_ddgst) _rx_crc = crc32c_update(_rx_crc, _rx_dst, n);
    rx_land(_rx_stage ? _rx_stage : _rx_dst, n);
    if (_rx_left == 0) {
      if (_fr.has_ddgst) _rx = RxState::ddgst;
      else rx_data_done();
    }
    return;
  }
  _rx_tail += n;
}

// The next n data bytes, at src (received elsewhere, or at _rx_stage by a direct recv()).
// In place, the namespace gets whole logical blocks only: a block split between two receives
// waits in the command's buffer until its last byte came, then goes in one copy. A connection
// lost mid-block so leaves that block all old, as AWUPF 0 (one block) promises; whole blocks
// still go straight to the namespace, the copy this path exists to save.
void TcpQueue::rx_land(const uint8_t* src, size_t n) {
  if (!_rx_stage) {
    if (src != _rx_dst) std::memcpy(_rx_dst, src, n);
  } else {
    const size_t unit = _rx_unit_mask + 1u;
    const size_t head = static_cast<size_t>(_rx_stage - _rx_cmd->req.buf) & _rx_unit_mask;
    size_t done = 0;
    if (head != 0) {  // the rest of a block begun by an earlier receive
      done = std::min(n, unit - head);
      if (src != _rx_stage) std::memcpy(_rx_stage, src, done);
      if (head + done == unit) std::memcpy(_rx_dst - head, _rx_stage - head, unit);
    }
    const size_t whole = (n - done) & ~size_t{_rx_unit_mask};
    std::memcpy(_rx_dst + done, src + done, whole);
    done += whole;
    if (done < n && src != _rx_stage) std::memcpy(_rx_stage + done, src + done, n - done);
    _rx_stage += n;
  }
  _rx_dst += n;
  _rx_left -= static_cast<uint32_t>(n);
}

// The data of c from offset on goes to dst + offset (the command's buffer, or where data_in()
// says), through rx_land.
void TcpQueue::rx_start_data(Command& c, uint8_t* dst, uint32_t offset) {
  _rx_cmd = &c;
  _rx_dst = dst + offset;
  const bool in_place = dst != c.req.buf;
  _rx_stage = in_place ? c.req.buf + offset : nullptr;
  _rx_unit_mask = in_place ? c.req.write_unit - 1 : 0;
}

// Consumes staged bytes; returns the number of complete PDUs.
unsigned TcpQueue::rx_process(unsigned budget) {
  unsigned pdus = 0;
  while (pdus < budget && !_closing && _rx_head < _rx_tail) {
    const size_t avail = _rx_tail - _rx_head;
    const uint8_t* src = _rx_base + _rx_head;
    if (_rx == RxState::header) {
      if (!rx_header()) break;
      if (_rx == RxState::header) ++pdus;  // a PDU with no data part is complete
      continue;
    }
    if (_rx == RxState::data) {
      if (_rx_pad) {  // padding up to PDO
        const size_t k = std::min<size_t>(_rx_pad, avail);
        _rx_pad -= static_cast<uint32_t>(k);
        _rx_head += k;
        continue;
      }
      const size_t k = std::min<size_t>(_rx_left, avail);
      if (_fr.has_ddgst) _rx_crc = crc32c_update(_rx_crc, src, k);
      rx_land(src, k);
      _rx_head += k;
      if (_rx_left == 0) {
        if (_fr.has_ddgst) {
          _rx = RxState::ddgst;
        } else {
          rx_data_done();
          ++pdus;
        }
      }
      continue;
    }
    // RxState::ddgst
    const size_t k = std::min<size_t>(digest_len - _rx_ddgst_have, avail);
    std::memcpy(_rx_ddgst.data() + _rx_ddgst_have, src, k);
    _rx_ddgst_have += static_cast<uint32_t>(k);
    _rx_head += k;
    if (_rx_ddgst_have == digest_len) {
      rx_data_done();
      ++pdus;
    }
  }
  return pdus;
}

// Gathers a whole header from the staging buffer; true once it is complete and handled, false
// if more bytes are needed (or the header was fatal). The common header and the rest are
// taken in one call: returning after the common header made rx_process count every PDU twice
// against the receive budget, so a budget of 32 received 16 capsules per round.
bool TcpQueue::rx_header() {
  if (_hdr_have == 0) _pdu_arrival_ns = _rx_head >= _rx_fresh_from ? _rx_stamp_new : _rx_stamp_old;
  if (_hdr_have < ch_len) {
    const size_t k = std::min<size_t>(ch_len - _hdr_have, _rx_tail - _rx_head);
    std::memcpy(_hdr.data() + _hdr_have, _rx_base + _rx_head, k);
    _hdr_have += static_cast<uint32_t>(k);
    _rx_head += k;
    if (_hdr_have < ch_len) return false;
    _ch = parse_common(std::span<const uint8_t, ch_len>(_hdr.data(), ch_len));
    const auto r = check_common(_ch, Role::controller, _neg);
    if (r.error) {
      _hdr_valid = ch_len;
      fatal(r.error->fes, r.error->fei);
      return false;
    }
    _fr = r.framing;
  }
  const size_t k = std::min<size_t>(_fr.header_len - _hdr_have, _rx_tail - _rx_head);
  std::memcpy(_hdr.data() + _hdr_have, _rx_base + _rx_head, k);
  _hdr_have += static_cast<uint32_t>(k);
  _rx_head += k;
  if (_hdr_have < _fr.header_len) return false;
  _hdr_valid = _ch.hlen;
  if (_fr.has_hdgst && !header_digest_ok({_hdr.data(), _hdr_have}, _ch.hlen)) {
    fatal(Fes::header_digest_error, 0);
    return false;
  }
  _stats.pdus_rx.add();
  _hdr_have = 0;
  on_pdu_header();
  return true;
}

void TcpQueue::on_pdu_header() {
  _rx_cmd = nullptr;
  _rx_crc = crc32c_seed;
  _rx_ddgst_have = 0;
  switch (_ch.type) {
    case PduType::icreq: return on_icreq();
    case PduType::capsule_cmd: return on_capsule_cmd();
    case PduType::h2c_data: return on_h2c_data();
    case PduType::h2c_term_req: {
      const auto t = parse_term_req(_hdr);
      _target.log(core::EventLevel::warning, std::string("H2CTermReq from ") + _peer + ": FES " +
                                                 std::to_string(static_cast<int>(t.fes)) + " FEI " +
                                                 std::to_string(t.fei));
      _closing = true;
      return;
    }
    default:  // check_common admits only the four types above
      return fatal(Fes::invalid_header_field, field::type);
  }
}

void TcpQueue::on_icreq() {
  const IcReq r = parse_icreq(_hdr);
  if (r.pfv != 0) return fatal(Fes::invalid_header_field, field::pfv);
  if (r.hpda > 31) return fatal(Fes::invalid_header_field, field::hpda);
  _neg.connected = true;
  _neg.hdgst = r.hdgst;
  _neg.ddgst = r.ddgst;
  _neg.pda = 0;  // we ask for no extra alignment of H2C data (CPDA 0)
  _hpda = r.hpda;
  IcResp resp{0, 0, r.hdgst, r.ddgst, _limits.maxh2cdata};
  queue_control(_icresp.data(), write_icresp(_icresp, resp));
}

nvme::Status TcpQueue::parse_sgl(Command& c) {
  const nvme::Sqe& sqe = c.req.sqe;
  const uint32_t len = sqe.sgl_length();
  c.req.sgl_len = len;
  if (_fr.data_len) {  // in-capsule data: a data block descriptor with offset 0
    if (sqe.sgl_id() != nvme::sgl_data_block_offset) return nvme::status::sgl_type_invalid.at(39);
    if (sqe.sgl_addr() != 0) return nvme::status::sgl_offset_invalid.at(24);
    if (len != _fr.data_len) return nvme::status::sgl_length_invalid.at(32);
    return nvme::status::success;
  }
  if (len == 0 || sqe.sgl_id() == nvme::sgl_transport_data_block) return nvme::status::success;
  return nvme::status::sgl_type_invalid.at(39);
}

void TcpQueue::on_capsule_cmd() {
  Command* c = alloc_command();
  if (!c) return fatal(Fes::pdu_sequence_error, field::type);  // host exceeded SQ size
  c->req.start_ns = 0;
  c->req.arrival_ns = _pdu_arrival_ns;
  // Only prepare() may point this command's data at the namespace; an SGL refused before it
  // must not inherit where the slot's previous write went.
  c->req.write_dst = nullptr;
  c->req.sqe = parse_capsule_cmd(_hdr);
  if (_fr.data_len > in_capsule_size() || _fr.data_len > c->req.buf_cap) {
    free_command(*c);
    return fatal(Fes::data_transfer_limit_exceeded, field::plen);
  }
  nvme::Status st = parse_sgl(*c);
  if (st.ok()) st = _sq.prepare(c->req);
  if (st.ok() && _fr.data_len && c->req.dir != core::DataDir::host_to_controller)
    st = nvme::status::sgl_type_invalid.at(39);
  c->early = st;
  if (_fr.data_len) {
    set_state(*c, CmdState::recv_icd);
    rx_start_data(*c, c->req.data_in(), 0);
    _rx_left = _fr.data_len;
    _rx_pad = _fr.data_off - _fr.header_len;
    _rx = RxState::data;
    return;
  }
  start_command(*c);
}

// A command whose capsule (and in-capsule data) is complete: fail, ask for data, or run.
void TcpQueue::start_command(Command& c) {
  set_state(c, CmdState::executing);
  c.req.start_ns = exec::monotonic_ns();
  _sq.record_received(c.req, c.req.arrival_ns, _pass);
  NVMT_USDT3(cmd_arrival, this, c.req.sqe.cid(), c.req.sqe.opcode());
  if (!c.early.ok()) return _sq.complete(c.req, c.early);
  if (c.digest_error) return _sq.complete(c.req, nvme::Status{nvme::Sct::generic, 0x22, false});
  if (c.req.dir == core::DataDir::host_to_controller && c.h2c_next < c.req.transfer_len &&
      !(c.req.sqe.sgl_id() == nvme::sgl_data_block_offset)) {
    set_state(c, CmdState::wait_h2c);
    return queue_r2t(c);
  }
  _sq.execute(c.req, c.req.start_ns);  // executes as it arrives: the same moment
}

void TcpQueue::on_h2c_data() {
  const DataHeader h = parse_data(_hdr);
  Command* cp = command_of_ttag(h.ttag);
  if (!cp || cp->state != CmdState::wait_h2c) return fatal(Fes::invalid_header_field, field::ttag);
  Command& c = *cp;
  if (h.cccid != c.req.sqe.cid()) return fatal(Fes::invalid_header_field, field::cccid);
  // A zero-length H2CData has no data part (and no PDO to skip to): nothing to accept.
  if (h.datal == 0 || h.datal != _fr.data_len) return fatal(Fes::invalid_header_field, field::datal);
  if (h.datao != c.h2c_next) return fatal(Fes::data_out_of_range, field::datao);
  if (uint64_t{h.datao} + h.datal > c.req.transfer_len) return fatal(Fes::data_out_of_range, field::datal);
  if (h.datal > _limits.maxh2cdata) return fatal(Fes::data_transfer_limit_exceeded, field::datal);
  rx_start_data(c, c.req.data_in(), h.datao);
  _rx_left = h.datal;
  _rx_pad = _fr.data_off - _fr.header_len;
  _rx = RxState::data;
}

void TcpQueue::rx_data_done() {
  _rx = RxState::header;
  Command* c = _rx_cmd;
  _rx_cmd = nullptr;
  if (_fr.has_ddgst && crc32c_final(_rx_crc) != nvme::get_le<uint32_t>(_rx_ddgst.data(), 0)) {
    // A data digest error spoils the command, not the connection: the framing is intact.
    if (c) c->digest_error = true;
  }
  if (!c) return;
  if (c->state == CmdState::recv_icd) {
    c->h2c_next = c->req.transfer_len;
    return start_command(*c);
  }
  c->h2c_next += _fr.data_len;
  if (c->h2c_next < c->req.transfer_len) return;  // more H2CData PDUs to come
  set_state(*c, CmdState::executing);
  const uint64_t now = exec::monotonic_ns();
  _sq.record_data_wait(c->req, now);
  if (c->digest_error) return _sq.complete(c->req, nvme::Status{nvme::Sct::generic, 0x22, false});
  _sq.execute(c->req, now);
}

void TcpQueue::fatal(Fes fes, uint32_t fei) {
  if (_closing) return;
  _closing = true;
  _counters.term_sent.add();
  const size_t n = std::min<size_t>(_hdr_valid, term_max_data);
  _target.log(core::EventLevel::warning, std::string("protocol error from ") + _peer + ": FES " +
                                             std::to_string(static_cast<int>(fes)) + " FEI " +
                                             std::to_string(fei) + ", sending C2HTermReq");
  queue_control(_term.data(), write_term_req(_term, PduType::c2h_term_req, TermReq{fes, fei}, {_hdr.data(), n}));
}

bool TcpQueue::feed(std::span<const uint8_t> bytes) {
  while (!bytes.empty() && !_closing) {
    auto win = rx_window();
    const size_t n = std::min(win.size(), bytes.size());
    std::memcpy(win.data(), bytes.data(), n);
    bytes = bytes.subspan(n);
    rx_commit(n);
    while (rx_process(_budgets.recv_pdus) > 0 && !_closing) {
    }
    _ioctx.flush_submissions();
    reap(_budgets.reap_batch);
    tx_pass(~0u);
  }
  return !_closing;
}

}  // namespace tcp
