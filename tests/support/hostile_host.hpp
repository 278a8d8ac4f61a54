#pragma once
// A hostile NVMe/TCP host over real loopback sockets (issue 33): malformed PDUs, connections
// that vanish mid-command, connect/close storms, and the health check that follows each. Shared
// by churn_soak_test (every execution model, live switches, sanitizer builds) and the
// hostile_host tool that runs the same battery against a `nvmetune serve` for repeated runs.
// No GoogleTest here: results come back as strings, the caller decides what fails.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/nvme/le.hpp"
#include "engine/tcp/codec.hpp"
#include "fuzz/pdu_builder.hpp"

namespace hostile {

using fuzz::Bytes;
using Clock = std::chrono::steady_clock;

// One TCP connection to the target; blocking I/O bounded by poll() deadlines.
class RawHost {
 public:
  explicit RawHost(uint16_t port, const char* addr = "127.0.0.1") {
    _fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (_fd < 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, addr, &a.sin_addr);
    const int one = 1;
    setsockopt(_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close_now();
  }
  ~RawHost() { close_now(); }
  RawHost(const RawHost&) = delete;
  RawHost& operator=(const RawHost&) = delete;

  bool ok() const { return _fd >= 0; }
  int fd() const { return _fd; }

  bool send(std::span<const uint8_t> b) {
    size_t off = 0;
    while (_fd >= 0 && off < b.size()) {
      const ssize_t n = ::send(_fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += size_t(n);
    }
    return _fd >= 0;
  }
  bool send(const fuzz::Stream& s) { return send(s.bytes); }

  // One whole PDU (common header, then plen - 8 bytes); nullopt on close, error or timeout.
  std::optional<Bytes> recv_pdu(int timeout_ms) {
    const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
    Bytes pdu(tcp::ch_len);
    if (!recv_exact(pdu.data(), pdu.size(), end)) return std::nullopt;
    const uint32_t plen = nvme::get_le<uint32_t>(pdu.data(), 4);
    if (plen < tcp::ch_len || plen > (16u << 20)) return std::nullopt;
    pdu.resize(plen);
    if (!recv_exact(pdu.data() + tcp::ch_len, plen - tcp::ch_len, end)) return std::nullopt;
    return pdu;
  }

  // Reads until the target closes the connection: whether a C2HTermReq came before the end.
  // nullopt when the connection was still open at the deadline.
  std::optional<bool> term_req_then_close(int timeout_ms) {
    const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
    bool term = false;
    for (;;) {
      const int left = remaining_ms(end);
      if (left <= 0) return std::nullopt;
      auto pdu = recv_pdu(left);
      if (!pdu) return closed_by_peer(end) ? std::optional<bool>(term) : std::nullopt;
      term |= (*pdu)[0] == uint8_t(tcp::PduType::c2h_term_req);
    }
  }

  void shutdown_write() {
    if (_fd >= 0) ::shutdown(_fd, SHUT_WR);
  }
  // Close with a RST instead of a FIN: the peer's next recv fails with ECONNRESET.
  void reset() {
    if (_fd < 0) return;
    linger l{1, 0};
    setsockopt(_fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close_now();
  }
  void close_now() {
    if (_fd >= 0) ::close(_fd);
    _fd = -1;
  }

 private:
  static int remaining_ms(Clock::time_point end) {
    return int(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
  }
  bool recv_exact(uint8_t* p, size_t n, Clock::time_point end) {
    while (n > 0) {
      pollfd pfd{_fd, POLLIN, 0};
      const int left = remaining_ms(end);
      if (_fd < 0 || left <= 0 || ::poll(&pfd, 1, left) <= 0) return false;
      const ssize_t got = ::recv(_fd, p, n, 0);
      if (got <= 0) return false;
      p += got;
      n -= size_t(got);
    }
    return true;
  }
  // After a failed recv: true when the peer closed (end of stream or reset), not a timeout.
  bool closed_by_peer(Clock::time_point end) {
    pollfd pfd{_fd, POLLIN, 0};
    const int left = std::max(remaining_ms(end), 0);
    if (_fd < 0 || ::poll(&pfd, 1, left) <= 0) return false;
    uint8_t b;
    const ssize_t n = ::recv(_fd, &b, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN);
  }

  int _fd = -1;
};

inline constexpr int answer_ms = 5000;  // a target that answers at all answers well within this

// ICReq / ICResp, then a Connect on qid (admin: dynamic CNTLID); the CQE, or nullopt.
inline std::optional<nvme::Cqe> handshake(RawHost& h, std::string_view subnqn, std::string_view hostnqn,
                                          uint16_t qid = 0, uint16_t cntlid = 0xffff, uint16_t sqsize0 = 31) {
  fuzz::Stream s;
  s.icreq();
  if (!h.send(s) || !h.recv_pdu(answer_ms)) return std::nullopt;
  const auto data = fuzz::connect_data(subnqn, hostnqn, cntlid);
  fuzz::Stream c;
  c.capsule(fuzz::connect(1, qid, sqsize0, fuzz::Xfer::in_capsule), data);
  if (!h.send(c)) return std::nullopt;
  auto resp = h.recv_pdu(answer_ms);
  if (!resp || (*resp)[0] != uint8_t(tcp::PduType::capsule_resp) || resp->size() < tcp::capsule_resp_hlen)
    return std::nullopt;
  return tcp::parse_capsule_resp(*resp);
}

inline bool cqe_ok(const nvme::Cqe& c) { return (c.status >> 1) == 0; }

// An admin queue with its controller enabled (CC.EN) and an I/O queue (qid 1) on it: what the
// cases that need the NVM command set start from. Both stay open while the object lives.
struct IoSession {
  RawHost admin, io;
  bool ready = false;
  IoSession(uint16_t port, std::string_view subnqn, std::string_view hostnqn) : admin(port), io(port) {
    auto a = handshake(admin, subnqn, hostnqn);
    if (!a || !cqe_ok(*a)) return;
    const auto cntlid = uint16_t(a->dw0);
    fuzz::Stream en;
    en.capsule(fuzz::property_set(2, nvme::Property::cc, fuzz::cc_enable));
    if (!admin.send(en) || !admin.recv_pdu(answer_ms)) return;
    auto q = handshake(io, subnqn, hostnqn, 1, cntlid);
    ready = q && cqe_ok(*q);
  }
};

// What a case expects of the target besides staying up.
enum class Expect : uint8_t {
  term_req,  // the queue ends with a C2HTermReq (the spec's answer to a protocol error)
  closed,    // the queue ends, with or without a TermReq (no ICReq yet, or a vanished host)
  anything,  // the target may answer with an NVMe error and keep the queue
};

struct Case {
  const char* name;
  Expect expect;
  bool needs_io;  // runs on an IoSession's I/O queue; otherwise on a fresh connection
  std::function<Bytes()> bytes;  // sent in one piece
};

inline Bytes icreq_with(const std::function<void(uint8_t*)>& edit) {
  uint8_t h[tcp::max_hlen + tcp::digest_len]{};
  const size_t n = tcp::write_icreq(h, tcp::IcReq{0, 0, false, false, 0});
  edit(h);
  return Bytes(h, h + n);
}

inline Bytes after_icreq(const Bytes& tail) {
  fuzz::Stream s;
  s.icreq();
  s.raw(tail);
  return s.bytes;
}

// A CapsuleCmd header with hand-set framing fields (type, hlen, pdo, plen) and no data.
inline Bytes common_header_pdu(uint8_t type, uint8_t hlen, uint8_t pdo, uint32_t plen, size_t body) {
  Bytes b(std::max<size_t>(body, tcp::ch_len), 0);
  b[0] = type;
  b[2] = hlen;
  b[3] = pdo;
  nvme::put_le<uint32_t>(b.data(), 4, plen);
  return b;
}

// One H2CData PDU of len bytes of fill for cccid/ttag, the last of its transfer.
inline Bytes h2c_bytes(uint16_t cccid, uint16_t ttag, size_t len, uint8_t fill) {
  fuzz::Stream s;
  const Bytes d(len, fill);
  s.h2c_data(cccid, ttag, 0, d, true);
  return s.bytes;
}

inline Bytes capsule_bytes(const nvme::Sqe& sqe, std::span<const uint8_t> icd = {}) {
  fuzz::Stream s;
  s.capsule(sqe, icd);
  return s.bytes;
}

// The battery: every case a hostile or broken host might send. subnqn is a subsystem the
// target serves (for the cases that connect first).
inline std::vector<Case> battery(std::string subnqn, std::string hostnqn) {
  using tcp::PduType;
  std::vector<Case> c;
  c.push_back({"icreq bad pfv", Expect::term_req, false,
               []() { return icreq_with([](uint8_t* h) { nvme::put_le<uint16_t>(h, 8, 7); }); }});
  c.push_back({"icreq hpda out of range", Expect::term_req, false,
               []() { return icreq_with([](uint8_t* h) { h[10] = 200; }); }});
  c.push_back({"icreq plen lies (short)", Expect::closed, false,
               []() { return icreq_with([](uint8_t* h) { nvme::put_le<uint32_t>(h, 4, 64); }); }});
  c.push_back({"icreq hlen wrong", Expect::closed, false,
               []() { return icreq_with([](uint8_t* h) { h[2] = 24; }); }});
  c.push_back({"icreq twice", Expect::term_req, false, []() {
                 fuzz::Stream s;
                 s.icreq().icreq();
                 return s.bytes;
               }});
  c.push_back({"capsule before icreq", Expect::closed, false, [subnqn, hostnqn]() {
                 return capsule_bytes(fuzz::connect(1, 0, 31, fuzz::Xfer::in_capsule),
                                      fuzz::connect_data(subnqn, hostnqn));
               }});
  c.push_back({"h2c data before icreq", Expect::closed, false, []() { return h2c_bytes(1, 0, 512, 0xab); }});
  c.push_back({"plen smaller than hlen", Expect::term_req, false, []() {
                 return after_icreq(common_header_pdu(uint8_t(PduType::capsule_cmd), 72, 0, 16, 72));
               }});
  c.push_back({"hlen wrong for capsule", Expect::term_req, false, []() {
                 return after_icreq(common_header_pdu(uint8_t(PduType::capsule_cmd), 24, 0, 24, 24));
               }});
  c.push_back({"pdo inside the header", Expect::term_req, false, []() {
                 return after_icreq(common_header_pdu(uint8_t(PduType::capsule_cmd), 72, 8, 72 + 512, 72 + 512));
               }});
  c.push_back({"pdo beyond plen", Expect::term_req, false, []() {
                 return after_icreq(common_header_pdu(uint8_t(PduType::capsule_cmd), 72, 250, 80, 80));
               }});
  c.push_back({"plen 4 GiB", Expect::term_req, false, []() {
                 return after_icreq(common_header_pdu(uint8_t(PduType::capsule_cmd), 72, 72, 0xffffffffu, 72));
               }});
  c.push_back({"unknown pdu type", Expect::term_req, false,
               []() { return after_icreq(common_header_pdu(0x7f, 8, 0, 8, 8)); }});
  c.push_back({"c2h pdu from the host", Expect::term_req, false, []() {
                 return after_icreq(common_header_pdu(uint8_t(PduType::c2h_data), 24, 0, 24, 24));
               }});
  c.push_back({"unterminated nqns", Expect::anything, false, []() {
                 Bytes d = fuzz::connect_data("", "");
                 std::memset(d.data() + nvme::connect_data::subnqn, 'A', 2 * nvme::connect_data::nqn_width);
                 return after_icreq(capsule_bytes(fuzz::connect(1, 0, 31, fuzz::Xfer::in_capsule), d));
               }});
  c.push_back({"hostile host nqn to discovery", Expect::anything, false, []() {
                 const std::string nasty = std::string("nqn.2014-08.evil:\xff\x1b[31mred\n") + "forged log line";
                 return after_icreq(capsule_bytes(fuzz::connect(1, 0, 31, fuzz::Xfer::in_capsule),
                                                  fuzz::connect_data("nqn.2014-08.org.nvmexpress.discovery", nasty)));
               }});
  c.push_back({"io before connect", Expect::anything, false, []() {
                 return after_icreq(capsule_bytes(fuzz::rw(1, nvme::NvmOpcode::read, 1, 0, 8, 512, fuzz::Xfer::transport)));
               }});
  c.push_back({"connect data beyond in-capsule size", Expect::term_req, false, [subnqn, hostnqn]() {
                 Bytes d = fuzz::connect_data(subnqn, hostnqn);
                 d.resize(64 * 1024, 0);
                 return after_icreq(capsule_bytes(fuzz::connect(1, 0, 31, fuzz::Xfer::in_capsule), d));
               }});
  c.push_back({"truncated header then close", Expect::closed, false, []() {
                 Bytes b = after_icreq(common_header_pdu(uint8_t(PduType::capsule_cmd), 72, 0, 72, 72));
                 b.resize(b.size() - 40);
                 return b;
               }});
  c.push_back({"h2c data without r2t", Expect::term_req, true, []() { return h2c_bytes(7, 3, 4096, 0x5a); }});
  c.push_back({"h2c data with a bad ttag", Expect::term_req, true, []() {
                 fuzz::Stream s;
                 const Bytes d(512, 0x5a);
                 s.capsule(fuzz::rw(9, nvme::NvmOpcode::write, 1, 0, 1, 512, fuzz::Xfer::transport));
                 s.h2c_data(9, 0x7777, 0, d, true);
                 return s.bytes;
               }});
  c.push_back({"huge out-of-range read", Expect::anything, true, []() {
                 // 64 Ki blocks past the end of any namespace: an NVMe error, not a transfer.
                 return capsule_bytes(fuzz::rw(5, nvme::NvmOpcode::read, 1, ~uint64_t{0} - 10, 65535, 512,
                                               fuzz::Xfer::transport));
               }});
  c.push_back({"random garbage", Expect::closed, false, []() {
                 std::mt19937 rng(33);
                 Bytes b(3000);
                 for (auto& x : b) x = uint8_t(rng());
                 b[0] = 0x04;  // a CapsuleCmd type, so the framing checks and not the type check end it
                 return b;
               }});
  c.push_back({"h2c term req mid stream", Expect::closed, true, []() {
                 fuzz::Stream s;
                 s.h2c_term_req(tcp::Fes::invalid_header_field, 0);
                 return s.bytes;
               }});
  return c;
}

// The health check: a fresh connection gets ICResp and an admin Connect succeeds.
inline std::string health_check(uint16_t port, std::string_view subnqn, std::string_view hostnqn) {
  RawHost h(port);
  if (!h.ok()) return "cannot connect";
  auto cqe = handshake(h, subnqn, hostnqn);
  if (!cqe) return "no ICResp or Connect response";
  if (!cqe_ok(*cqe)) return "Connect failed with status " + std::to_string(cqe->status >> 1);
  return {};
}

// Runs one case on its own connection: "" or what went wrong.
inline std::string run_case(const Case& c, uint16_t port, const std::string& subnqn, const std::string& hostnqn) {
  std::optional<IoSession> io;
  std::optional<RawHost> fresh;
  RawHost* h = nullptr;
  if (c.needs_io) {
    io.emplace(port, subnqn, hostnqn);
    if (!io->ready) return "could not set up an I/O queue";
    h = &io->io;
  } else {
    h = &fresh.emplace(port);
    if (!h->ok()) return "cannot connect";
  }
  if (!h->send(c.bytes()) && c.expect == Expect::term_req) return "send failed";
  if (c.expect == Expect::closed) h->shutdown_write();
  if (c.expect == Expect::anything) {
    // Whatever it answers, the queue must not hang the target: take what comes for a moment.
    (void)h->recv_pdu(200);
    return {};
  }
  const auto ended = h->term_req_then_close(answer_ms + 10000);
  if (!ended) return "the target kept the queue open";
  if (c.expect == Expect::term_req && !*ended) return "closed without a C2HTermReq";
  return {};
}

// Connections that vanish mid-command on an I/O queue: after the R2T of a write, halfway
// through its H2CData, with a read's data unread, by reset.
inline std::string mid_command_disconnects(uint16_t port, const std::string& subnqn, const std::string& hostnqn,
                                           unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) {
    IoSession s(port, subnqn, hostnqn);
    if (!s.ready) return "mid-command round " + std::to_string(r) + ": no I/O queue";
    fuzz::Stream w;
    const uint32_t blocks = 64;  // 32 KiB: beyond the in-capsule size, so an R2T comes
    w.capsule(fuzz::rw(3, nvme::NvmOpcode::write, 1, 1024 + r % 64, blocks, 512, fuzz::Xfer::transport));
    fuzz::Stream rd;
    rd.capsule(fuzz::rw(4, nvme::NvmOpcode::read, 1, 0, 256, 512, fuzz::Xfer::transport));
    s.io.send(w);
    s.io.send(rd);
    auto r2t = s.io.recv_pdu(answer_ms);
    if (r2t && (*r2t)[0] == uint8_t(tcp::PduType::r2t) && r % 2 == 0) {
      const auto hdr = tcp::parse_r2t(*r2t);
      fuzz::Stream data;
      const Bytes half(hdr.r2tl / 2, uint8_t(r));
      data.h2c_data(hdr.cccid, hdr.ttag, hdr.r2to, half, false);
      s.io.send(data);
    }
    if (r % 3 == 0) s.io.reset();
    else s.io.close_now();
    if (r % 4 == 0) s.admin.reset();
  }
  return {};
}

// Connect / ICReq / close cycles from `threads` threads until `until`: the count made.
inline uint64_t churn(uint16_t port, Clock::time_point until, unsigned threads = 2) {
  std::atomic<uint64_t> made{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      fuzz::Stream ic;
      ic.icreq();
      for (uint64_t i = 0; Clock::now() < until; ++i) {
        RawHost h(port);
        if (!h.ok()) continue;
        h.send(ic);
        // Mostly close at once; sometimes after the answer, sometimes by reset.
        if ((i + t) % 7 == 0) (void)h.recv_pdu(100);
        if ((i + t) % 5 == 0) h.reset();
        made.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& th : ts) th.join();
  return made.load();
}

}  // namespace hostile
