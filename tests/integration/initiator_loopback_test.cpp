// The NVMe/TCP host (engine/initiator) against the real target engine over loopback.
// Every test starts its own engine on 127.0.0.1 port 0 with RAM namespaces.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/initiator/initiator.hpp"
#include "engine/nvme/le.hpp"
#include "engine/tcp/codec.hpp"
#include "engine/tcp/digest.hpp"
#include "support/eventually.hpp"

namespace {

using namespace initiator;
using namespace std::chrono_literals;

constexpr const char* test_nqn = "nqn.2026-12.io.nvmetune:itest";
constexpr const char* host_a = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001";
constexpr const char* host_b = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002";
constexpr uint32_t block = 512;
constexpr uint64_t MiB = 1024 * 1024;
constexpr int io_timeout_ms = 10000;

// Deterministic pseudo-random bytes (splitmix64) so any buffer can be regenerated to verify.
void fill(std::span<uint8_t> b, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < b.size(); i += 8) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(b.data() + i, &z, std::min<size_t>(8, b.size() - i));
  }
}

uint16_t nlb0_of(size_t bytes) { return static_cast<uint16_t>(bytes / block - 1); }

using test_support::eventually;

struct ServeOptions {
  uint64_t ns_bytes = 64 * MiB;
  bool allow_any_host = true;
  std::vector<std::string> hosts;
  std::string queue_cpu = "incoming";
};

class LoopbackTest : public ::testing::Test {
 protected:
  void serve(const ServeOptions& o = {}) {
    control::Config c;
    c.listeners.push_back(control::ListenerConfig{"tcp", "127.0.0.1", "0"});
    control::SubsystemConfig s;
    s.nqn = test_nqn;
    s.allow_any_host = o.allow_any_host;
    s.hosts = o.hosts;
    control::NamespaceConfig ns;
    ns.nsid = 1;
    ns.backend.kind = "ram";
    ns.backend.size_bytes = o.ns_bytes;
    ns.block_size = block;
    s.namespaces.push_back(ns);
    c.subsystems.push_back(s);
    c.threading.mode = "bound";  // one pinned worker per CPU
    c.threading.queue_cpu = o.queue_cpu;
    _engine = std::make_unique<engine::Engine>(c);
    const auto errs = _engine->start();
    for (const auto& e : errs) ADD_FAILURE() << "engine start: " << e.path << ": " << e.message;
    ASSERT_TRUE(errs.empty());
    const auto ls = _engine->listeners();
    ASSERT_EQ(ls.size(), 1u);
    ASSERT_NE(ls[0].port, 0);
    _port = ls[0].port;
  }

  void TearDown() override {
    if (_engine) _engine->stop();
  }

  Target target(bool hdgst = false, bool ddgst = false, const char* hostnqn = host_a) const {
    Target t;
    t.traddr = "127.0.0.1";
    t.port = _port;
    t.subnqn = test_nqn;
    t.hostnqn = hostnqn;
    t.hostid[0] = hostnqn[33];  // distinct per host
    t.hostid[15] = 0x42;
    t.hdgst = hdgst;
    t.ddgst = ddgst;
    return t;
  }

  engine::Engine& eng() { return *_engine; }

  std::unique_ptr<engine::Engine> _engine;
  uint16_t _port = 0;
};

#define ASSERT_RESULT(r) ASSERT_TRUE(r) << (r).error().to_string()
#define EXPECT_RESULT(r) EXPECT_TRUE(r) << (r).error().to_string()

// Writes then reads back one buffer at lba; fails the test on any difference.
void write_read_verify(TcpQueue& q, uint64_t lba, size_t bytes, uint64_t seed) {
  std::vector<uint8_t> w(bytes), r(bytes);
  fill(w, seed);
  auto wr = sync_io(q, Io{Op::write, 1, lba, nlb0_of(bytes), w}, io_timeout_ms);
  ASSERT_RESULT(wr) << " write " << bytes << " B at LBA " << lba;
  auto rd = sync_io(q, Io{Op::read, 1, lba, nlb0_of(bytes), r}, io_timeout_ms);
  ASSERT_RESULT(rd) << " read " << bytes << " B at LBA " << lba;
  ASSERT_TRUE(w == r) << "data mismatch: " << bytes << " B at LBA " << lba;
}

// Counts completions of a batch submitted through callbacks.
struct Batch {
  uint32_t done = 0;
  uint32_t failed = 0;
  uint32_t aborted = 0;
  std::string first_error;
  static void on_done(void* ctx, const Completion& c) {
    auto* b = static_cast<Batch*>(ctx);
    ++b->done;
    if (c.aborted) ++b->aborted;
    if (!c.ok()) {
      ++b->failed;
      if (b->first_error.empty())
        b->first_error = "cid " + std::to_string(c.cid) + " sct " + std::to_string(int(c.status.sct)) +
                         " sc " + std::to_string(c.status.sc) + (c.aborted ? " aborted" : "");
    }
  }
};

bool wait_batch(TcpQueue& q, const Batch& b, uint32_t n, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (b.done < n) {
    if (std::chrono::steady_clock::now() > end) return false;
    if (q.wait(100) < 0 && b.done < n) return false;
  }
  return true;
}

// ---- 1. write/read/verify at every size, digests off and on --------------------------------

class DataPathTest : public LoopbackTest, public ::testing::WithParamInterface<std::tuple<bool, bool>> {};

TEST_P(DataPathTest, WriteReadVerifyAtEverySize) {
  ASSERT_NO_FATAL_FAILURE(serve());
  const auto [hdgst, ddgst] = GetParam();
  auto ctrl = Controller::connect(target(hdgst, ddgst));
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue();
  ASSERT_RESULT(q);
  TcpQueue& io = **q;
  EXPECT_EQ(io.hdgst(), hdgst);
  EXPECT_EQ(io.ddgst(), ddgst);
  EXPECT_EQ(io.icd_size(), 8192u);  // engine default in-capsule size: IOCCSZ*16 - 64
  EXPECT_GE(io.maxh2cdata(), 4096u);

  const std::vector<size_t> sizes = {512, 4096, 8192, 64 * 1024, 128 * 1024, MiB};
  uint64_t lba = 0;
  uint64_t seed = hdgst * 2 + ddgst + 1;
  for (size_t size : sizes) {
    const uint64_t r2t_before = io.counters().r2t;
    ASSERT_NO_FATAL_FAILURE(write_read_verify(io, lba, size, seed++));
    if (size > io.icd_size())
      EXPECT_GE(io.counters().r2t, r2t_before + 1) << size << " B should go through R2T";
    else
      EXPECT_EQ(io.counters().r2t, r2t_before) << size << " B should go in-capsule";
    lba += size / block;
  }
  EXPECT_GT(io.counters().c2h_data, 0u);
  EXPECT_GT(io.counters().h2c_data, 0u);
  EXPECT_GT(io.counters().in_capsule, 0u);

  // The same sizes pipelined: every write in flight at once, then every read.
  std::vector<std::vector<uint8_t>> wbufs, rbufs;
  for (size_t size : sizes) {
    wbufs.emplace_back(size);
    rbufs.emplace_back(size);
    fill(wbufs.back(), seed++);
  }
  Batch wb, rb;
  uint64_t at = lba;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(io.submit(Io{Op::write, 1, at, nlb0_of(sizes[i]), wbufs[i], false, {&Batch::on_done, &wb}}));
    at += sizes[i] / block;
  }
  ASSERT_TRUE(wait_batch(io, wb, sizes.size(), io_timeout_ms)) << io.error().to_string();
  EXPECT_EQ(wb.failed, 0u) << wb.first_error;
  at = lba;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(io.submit(Io{Op::read, 1, at, nlb0_of(sizes[i]), rbufs[i], false, {&Batch::on_done, &rb}}));
    at += sizes[i] / block;
  }
  ASSERT_TRUE(wait_batch(io, rb, sizes.size(), io_timeout_ms)) << io.error().to_string();
  EXPECT_EQ(rb.failed, 0u) << rb.first_error;
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_TRUE(wbufs[i] == rbufs[i]) << "pipelined size " << sizes[i];
  EXPECT_EQ(io.counters().data_digest_errors, 0u);
  EXPECT_RESULT(io.disconnect());
  EXPECT_RESULT((*ctrl)->disconnect());
}

INSTANTIATE_TEST_SUITE_P(Digests, DataPathTest,
                         ::testing::Values(std::make_tuple(false, false), std::make_tuple(true, false),
                                           std::make_tuple(false, true), std::make_tuple(true, true)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "hdgst" : "nohdgst") + "_" +
                                  (std::get<1>(info.param) ? "ddgst" : "noddgst");
                         });

// With SQ flow control disabled the target may end reads with C2HData SUCCESS (no CapsuleResp).
TEST_F(LoopbackTest, ReadsCompletedBySuccessFlag) {
  ASSERT_NO_FATAL_FAILURE(serve());
  Target t = target(true, true);
  t.disable_sqflow = true;
  auto ctrl = Controller::connect(t);
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(16);
  ASSERT_RESULT(q);
  uint64_t lba = 0;
  for (size_t size : {size_t{512}, size_t{8192}, 256 * 1024 + size_t{512}, MiB}) {
    ASSERT_NO_FATAL_FAILURE(write_read_verify(**q, lba, size, size));
    lba += size / block;
  }
  EXPECT_EQ((*q)->counters().success_flag, 4u) << "reads completed by CapsuleResp instead";
}

TEST_F(LoopbackTest, NvmCommandSet) {
  ASSERT_NO_FATAL_FAILURE(serve());
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(8);
  ASSERT_RESULT(q);
  TcpQueue& io = **q;
  std::vector<uint8_t> w(16 * 1024), r(w.size()), zero(w.size(), 0);
  fill(w, 77);

  ASSERT_RESULT(sync_io(io, Io{Op::write, 1, 100, nlb0_of(w.size()), w, /*fua=*/true}));
  EXPECT_RESULT(sync_io(io, Io{Op::compare, 1, 100, nlb0_of(w.size()), w}));
  std::vector<uint8_t> other = w;
  other[5000] ^= 0xff;
  auto cmp = sync_io(io, Io{Op::compare, 1, 100, nlb0_of(w.size()), other});
  ASSERT_FALSE(cmp);
  EXPECT_EQ(cmp.error().kind, Error::Kind::nvme);
  EXPECT_EQ(cmp.error().status, nvme::status::compare_failure) << cmp.error().to_string();
  EXPECT_RESULT(sync_io(io, Io{Op::flush, 1}));

  ASSERT_RESULT(sync_io(io, Io{Op::write_zeroes, 1, 100, nlb0_of(w.size())}));
  ASSERT_RESULT(sync_io(io, Io{Op::read, 1, 100, nlb0_of(r.size()), r}));
  EXPECT_TRUE(r == zero) << "Write Zeroes left data behind";

  ASSERT_RESULT(sync_io(io, Io{Op::write, 1, 200, nlb0_of(w.size()), w}));
  std::vector<uint8_t> ranges(16);
  cmd::put_dsm_range(ranges, 0, 200, static_cast<uint32_t>(w.size() / block));
  EXPECT_RESULT(sync_io(io, Io{Op::dsm, 1, 0, 0, ranges}));

  // Out of range and unknown namespace come back as NVMe statuses, the queue stays up.
  auto oor = sync_io(io, Io{Op::read, 1, 64 * MiB / block, 0, std::span<uint8_t>(r).first(block)});
  ASSERT_FALSE(oor);
  EXPECT_EQ(oor.error().status, nvme::status::lba_out_of_range) << oor.error().to_string();
  auto badns = sync_io(io, Io{Op::read, 9, 0, 0, std::span<uint8_t>(r).first(block)});
  ASSERT_FALSE(badns);
  EXPECT_EQ(badns.error().status, nvme::status::invalid_namespace) << badns.error().to_string();
  ASSERT_NO_FATAL_FAILURE(write_read_verify(io, 300, 4096, 78));
}

// ---- 2. 16 I/O queues x qd 128, concurrently ----------------------------------------------

TEST_F(LoopbackTest, SixteenQueuesAtFullDepth) {
  static constexpr int queues = 16, depth = 128, rounds = 3;
  static constexpr size_t slot_bytes = 16 * 1024;  // even slots write 4 KiB in-capsule, odd 16 KiB via R2T
  ASSERT_NO_FATAL_FAILURE(serve({.ns_bytes = queues * depth * slot_bytes}));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  std::vector<std::unique_ptr<TcpQueue>> qs;
  for (int i = 0; i < queues; ++i) {
    auto q = (*ctrl)->create_io_queue(depth);
    ASSERT_RESULT(q) << " queue " << i;
    qs.push_back(std::move(q.value()));
  }
  EXPECT_TRUE(eventually([&] { return eng().stats().queues == queues + 1; }, 2s)) << eng().stats().queues;

  std::vector<uint64_t> completions_before;
  for (auto& q : qs) completions_before.push_back(q->counters().completions);  // Connect
  std::atomic<int> failures{0};
  std::vector<std::string> errors(queues);
  auto worker = [&](int qi) {
    TcpQueue& q = *qs[qi];
    std::vector<uint8_t> wbuf(depth * slot_bytes), rbuf(depth * slot_bytes);
    auto slot_len = [](int s) { return s % 2 ? size_t{slot_bytes} : size_t{4096}; };
    auto lba_of = [&](int s) { return (uint64_t(qi) * depth + s) * (slot_bytes / block); };
    for (int round = 0; round < rounds; ++round) {
      Batch wb, rb;
      for (int s = 0; s < depth; ++s) {
        auto span = std::span<uint8_t>(wbuf).subspan(s * slot_bytes, slot_len(s));
        fill(span, (uint64_t(qi) << 32) | (uint64_t(round) << 16) | s);
        if (!q.submit(Io{Op::write, 1, lba_of(s), nlb0_of(span.size()), span, false, {&Batch::on_done, &wb}})) {
          errors[qi] = "write submit refused at slot " + std::to_string(s);
          ++failures;
          return;
        }
      }
      if (!wait_batch(q, wb, depth, 30000) || wb.failed) {
        errors[qi] = "writes round " + std::to_string(round) + ": " + wb.first_error + " " + q.error().to_string();
        ++failures;
        return;
      }
      for (int s = 0; s < depth; ++s) {
        auto span = std::span<uint8_t>(rbuf).subspan(s * slot_bytes, slot_len(s));
        if (!q.submit(Io{Op::read, 1, lba_of(s), nlb0_of(span.size()), span, false, {&Batch::on_done, &rb}})) {
          errors[qi] = "read submit refused at slot " + std::to_string(s);
          ++failures;
          return;
        }
      }
      if (!wait_batch(q, rb, depth, 30000) || rb.failed) {
        errors[qi] = "reads round " + std::to_string(round) + ": " + rb.first_error + " " + q.error().to_string();
        ++failures;
        return;
      }
      for (int s = 0; s < depth; ++s) {
        const size_t off = s * slot_bytes;
        if (std::memcmp(wbuf.data() + off, rbuf.data() + off, slot_len(s)) != 0) {
          errors[qi] = "mismatch round " + std::to_string(round) + " slot " + std::to_string(s);
          ++failures;
          return;
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < queues; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int i = 0; i < queues; ++i) EXPECT_TRUE(errors[i].empty()) << "queue " << i << ": " << errors[i];
  for (int i = 0; i < queues; ++i)
    EXPECT_EQ(qs[i]->counters().completions - completions_before[i], uint64_t(rounds) * depth * 2);
}

// ---- 2b. writes received in place ----------------------------------------------------------
// A RAM namespace receives a write's data straight into its memory as the data arrives (no
// copy through the command's buffer): a read from another queue sees the part that came. With
// a data digest the data waits in the command's buffer until the digest is checked, so a
// corrupted transfer never reaches the namespace.

class InPlaceWriteTest : public LoopbackTest {
 protected:
  static constexpr uint32_t len = 16 * 1024;  // > the 8 KiB in-capsule size: R2T and H2CData
  static constexpr uint64_t lba = 256;
  static constexpr uint16_t cid = 7;

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(serve());
    auto c = Controller::connect(target());
    ASSERT_RESULT(c);
    _ctrl = std::move(c.value());
    auto good = _ctrl->create_io_queue(8);
    ASSERT_RESULT(good);
    _good = std::move(good.value());
    _old.resize(len);
    _new.resize(len);
    fill(_old, 31);
    fill(_new, 32);
    ASSERT_RESULT(sync_io(*_good, Io{Op::write, 1, lba, nlb0_of(len), _old}, io_timeout_ms));
  }

  // A raw queue (digests as asked) with a write of _new at lba started: the R2T it got.
  void start_raw_write(bool ddgst) {
    auto c = Controller::connect(target(false, ddgst));
    ASSERT_RESULT(c);
    _raw_ctrl = std::move(c.value());
    auto q = _raw_ctrl->create_io_queue(8);
    ASSERT_RESULT(q);
    _raw = std::move(q.value());
    ASSERT_EQ(_raw->ddgst(), ddgst);
    ASSERT_GE(_raw->maxh2cdata(), len);
    nvme::Sqe sqe = cmd::write(1, lba, nlb0_of(len));
    sqe.set_cid(cid);
    sqe.set_sgl(0, len, nvme::sgl_transport_data_block);
    std::vector<uint8_t> hdr(tcp::max_hlen + tcp::digest_len);
    hdr.resize(tcp::write_capsule_cmd(hdr, sqe, 0, {false, ddgst}, _raw->cpda()));
    ASSERT_RESULT(_raw->send_raw(hdr));
    auto pdu = _raw->recv_raw_pdu(5000);
    ASSERT_RESULT(pdu);
    ASSERT_EQ(pdu->ch.type, tcp::PduType::r2t);
    _r2t = tcp::parse_r2t(pdu->bytes);
    ASSERT_EQ(_r2t.r2tl, len);
  }

  // The H2CData header for all of _new, then its first `part` bytes.
  void send_first(uint32_t part, bool ddgst) {
    std::vector<uint8_t> pdu(tcp::max_hlen + tcp::digest_len);
    pdu.resize(tcp::write_h2c_data(pdu, {cid, _r2t.ttag, 0, len}, true, {false, ddgst}, _raw->cpda()));
    pdu.insert(pdu.end(), _new.begin(), _new.begin() + part);
    ASSERT_RESULT(_raw->send_raw(pdu));
  }

  // The rest of _new (and its digest, right or spoiled); returns the response's status field.
  uint16_t send_rest(uint32_t part, bool ddgst, bool spoil_digest) {
    std::vector<uint8_t> rest(_new.begin() + part, _new.end());
    if (ddgst) {
      uint32_t crc = tcp::crc32c(_new.data(), len);
      if (spoil_digest) crc ^= 1;
      const size_t at = rest.size();
      rest.resize(at + tcp::digest_len);
      nvme::put_le(rest.data(), at, crc);
    }
    EXPECT_RESULT(_raw->send_raw(rest));
    auto pdu = _raw->recv_raw_pdu(5000);
    EXPECT_RESULT(pdu);
    if (!pdu) return 0xffff;
    EXPECT_EQ(pdu->ch.type, tcp::PduType::capsule_resp);
    const nvme::Cqe cqe = tcp::parse_capsule_resp(pdu->bytes);
    EXPECT_EQ(cqe.cid, cid);
    return static_cast<uint16_t>(cqe.status >> 1);
  }

  std::vector<uint8_t> read_back() {
    std::vector<uint8_t> r(len);
    auto rd = sync_io(*_good, Io{Op::read, 1, lba, nlb0_of(len), r}, io_timeout_ms);
    EXPECT_RESULT(rd);
    return r;
  }

  // What the namespace should hold with the first `part` bytes of _new written over _old.
  std::vector<uint8_t> mixed(uint32_t part) const {
    std::vector<uint8_t> m = _old;
    std::copy(_new.begin(), _new.begin() + part, m.begin());
    return m;
  }

  // Drops the raw I/O queue's connection and waits until the target closed its side (left: both
  // admin queues and _good).
  void drop_raw() {
    _raw->close();
    EXPECT_TRUE(eventually([&] { return eng().stats().queues == 3; }, 5s)) << "the dropped queue is still counted";
  }

  // Each logical block of what the namespace holds is all _old or all _new: the number of _new
  // ones, or -1 (and a failure, if asked to report) at the first block that is neither.
  int whole_blocks_new(bool report = true) {
    const auto r = read_back();
    int fresh = 0;
    for (uint32_t at = 0; at < len; at += block) {
      const auto b = r.begin() + at;
      const bool is_old = std::equal(b, b + block, _old.begin() + at);
      const bool is_new = std::equal(b, b + block, _new.begin() + at);
      if (!is_old && !is_new) {
        if (report) ADD_FAILURE() << "block " << at / block << " is torn: part old, part new";
        return -1;
      }
      fresh += is_new;
    }
    return fresh;
  }

  std::unique_ptr<Controller> _ctrl, _raw_ctrl;
  std::unique_ptr<TcpQueue> _good, _raw;
  std::vector<uint8_t> _old, _new;
  tcp::R2t _r2t{};
};

TEST_F(InPlaceWriteTest, DataReachesTheNamespaceAsItArrives) {
  constexpr uint32_t part = 8 * 1024;
  ASSERT_NO_FATAL_FAILURE(start_raw_write(false));
  ASSERT_NO_FATAL_FAILURE(send_first(part, false));
  // The command still waits for half its data, and its first half is in the namespace.
  const auto want = mixed(part);
  EXPECT_TRUE(eventually([&] { return read_back() == want; }, 2s)) << "the data that came is not in the namespace";
  EXPECT_EQ(send_rest(part, false, false), 0) << "the write failed";
  EXPECT_TRUE(read_back() == _new);
}

TEST_F(InPlaceWriteTest, WithADataDigestNothingLandsBeforeTheDigestIsChecked) {
  constexpr uint32_t part = 8 * 1024;
  ASSERT_NO_FATAL_FAILURE(start_raw_write(true));
  ASSERT_NO_FATAL_FAILURE(send_first(part, true));
  // Another queue's round trips give the target time to take the part in: it must stay out.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(read_back() == _old) << "data reached the namespace before its digest";
  // A spoiled digest fails the command (Transient Transport Error) and leaves the blocks alone.
  EXPECT_EQ(send_rest(part, true, true), 0x22);
  EXPECT_TRUE(read_back() == _old) << "a write whose data digest failed changed the namespace";
}

// A write the target refuses (its SGL describes half the blocks) is answered with an error, and
// its in-capsule data, already on the wire, is received only to be dropped.
TEST_F(InPlaceWriteTest, ARefusedWritesDataNeverReachesTheNamespace) {
  constexpr uint32_t icd = 4096;
  ASSERT_NO_FATAL_FAILURE(start_raw_write(false));  // a queue; the R2T's write stays open
  nvme::Sqe sqe = cmd::write(1, lba, nlb0_of(2 * icd));
  sqe.set_cid(cid + 1);
  sqe.set_sgl(0, icd, nvme::sgl_data_block_offset);
  std::vector<uint8_t> pdu(tcp::max_hlen + tcp::digest_len);
  pdu.resize(tcp::write_capsule_cmd(pdu, sqe, icd, {false, false}, _raw->cpda()));
  pdu.insert(pdu.end(), _new.begin(), _new.begin() + icd);
  ASSERT_RESULT(_raw->send_raw(pdu));
  auto resp = _raw->recv_raw_pdu(5000);
  ASSERT_RESULT(resp);
  ASSERT_EQ(resp->ch.type, tcp::PduType::capsule_resp);
  const nvme::Cqe cqe = tcp::parse_capsule_resp(resp->bytes);
  EXPECT_EQ(cqe.cid, cid + 1);
  EXPECT_EQ(cqe.status >> 1, nvme::status::sgl_length_invalid.field()) << "status field " << (cqe.status >> 1);
  EXPECT_TRUE(read_back() == _old) << "a refused write changed the namespace";
}

// Hardening 2, finding 2: Identify says one logical block is written atomically (AWUN/AWUPF
// 0), but in-place receive put every byte in the namespace as it came, so a connection lost
// mid-block left that block torn. Whole blocks still land as they arrive; the block cut off
// stays all old.
TEST_F(InPlaceWriteTest, AConnectionLostMidH2CDataLeavesNoTornBlock) {
  constexpr uint32_t part = 8 * 1024 + 100;  // 16 blocks and 100 bytes of the 17th
  ASSERT_NO_FATAL_FAILURE(start_raw_write(false));
  ASSERT_NO_FATAL_FAILURE(send_first(part, false));
  EXPECT_TRUE(eventually([&] { return whole_blocks_new(false) == int(part / block); }, 2s))
      << "the whole blocks that came are not in the namespace";
  drop_raw();
  EXPECT_EQ(whole_blocks_new(), int(part / block));
}

// The same for in-capsule data: 1000 of a 4 KiB write's bytes, then the connection is gone.
TEST_F(InPlaceWriteTest, AConnectionLostMidInCapsuleDataLeavesNoTornBlock) {
  constexpr uint32_t icd = 4096, part = 1000;
  ASSERT_NO_FATAL_FAILURE(start_raw_write(false));  // a raw queue; its R2T'd write stays open
  nvme::Sqe sqe = cmd::write(1, lba, nlb0_of(icd));
  sqe.set_cid(cid + 1);
  sqe.set_sgl(0, icd, nvme::sgl_data_block_offset);
  std::vector<uint8_t> pdu(tcp::max_hlen + tcp::digest_len);
  pdu.resize(tcp::write_capsule_cmd(pdu, sqe, icd, {false, false}, _raw->cpda()));
  pdu.insert(pdu.end(), _new.begin(), _new.begin() + part);
  ASSERT_RESULT(_raw->send_raw(pdu));
  EXPECT_TRUE(eventually([&] { return whole_blocks_new(false) == int(part / block); }, 2s))
      << "the whole block that came is not in the namespace";
  drop_raw();
  EXPECT_EQ(whole_blocks_new(), int(part / block));
}

// Hardening 2, finding 3: a lent read's data digest was computed over the namespace's memory
// before sendmsg() copied it, so a write landing in between sent the host bytes that did not
// match their digest. With a data digest reads are copied and the digest covers the copy: a
// read racing writes to the same blocks (another host, another worker) always verifies.
TEST_F(LoopbackTest, ADigestedReadRacingWritesIsNeverADigestError) {
  constexpr uint32_t len = 128 * 1024;
  constexpr int reads = 400;
  // Round robin over the workers: admin, admin, then the two I/O queues on different workers
  // (two or more CPUs), so the write can land while the read is between digest and send.
  ASSERT_NO_FATAL_FAILURE(serve({.queue_cpu = "round_robin"}));
  auto writer_ctrl = Controller::connect(target(false, true, host_b));
  ASSERT_RESULT(writer_ctrl);
  auto reader_ctrl = Controller::connect(target(false, true));
  ASSERT_RESULT(reader_ctrl);
  auto wq = (*writer_ctrl)->create_io_queue(8);
  ASSERT_RESULT(wq);
  auto rq = (*reader_ctrl)->create_io_queue(8);
  ASSERT_RESULT(rq);
  ASSERT_TRUE((*rq)->ddgst());
  std::atomic<bool> stop{false};
  std::string writer_error;
  std::thread writer([&] {
    std::vector<uint8_t> a(len), b(len);
    fill(a, 41);
    fill(b, 42);
    for (uint64_t i = 0; !stop.load(); ++i) {
      auto w = sync_io(**wq, Io{Op::write, 1, 0, nlb0_of(len), i % 2 ? a : b}, io_timeout_ms);
      if (!w) {
        writer_error = w.error().to_string();
        return;
      }
    }
  });
  std::vector<uint8_t> r(len);
  int digest_errors = 0;
  for (int i = 0; i < reads && digest_errors == 0; ++i) {
    auto rd = sync_io(**rq, Io{Op::read, 1, 0, nlb0_of(len), r}, io_timeout_ms);
    if (!rd) ++digest_errors;
  }
  stop = true;
  writer.join();
  EXPECT_EQ(digest_errors, 0) << "a read failed; data digest errors seen by the host: "
                              << (*rq)->counters().data_digest_errors;
  EXPECT_EQ((*rq)->counters().data_digest_errors, 0u);
  EXPECT_TRUE(writer_error.empty()) << writer_error;
}

// ---- 3. a host vanishing in the middle of transfers ---------------------------------------

TEST_F(LoopbackTest, AbruptDisconnectMidTransfer) {
  constexpr uint16_t depth = 64;
  ASSERT_NO_FATAL_FAILURE(serve({.ns_bytes = depth * MiB}));
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  auto q = (*ctrl)->create_io_queue(depth);
  ASSERT_RESULT(q);
  ASSERT_TRUE(eventually([&] { return eng().stats().queues == 2; }, 2s));

  std::vector<uint8_t> data(MiB);
  fill(data, 5);
  Batch b;
  for (uint16_t i = 0; i < depth; ++i)
    ASSERT_TRUE((*q)->submit(Io{Op::write, 1, uint64_t(i) * (MiB / block), nlb0_of(MiB), data, false,
                                {&Batch::on_done, &b}}));
  // Let the transfer get going (the target has asked for data), then vanish.
  const auto end = std::chrono::steady_clock::now() + 5s;
  while ((*q)->counters().h2c_data < 4 && std::chrono::steady_clock::now() < end) (*q)->wait(10);
  ASSERT_GE((*q)->counters().h2c_data, 4u);
  ASSERT_LT(b.done, depth) << "everything completed before the disconnect";
  (*q)->close();
  EXPECT_EQ(b.done, depth) << "every outstanding command gets its (aborted) completion";
  EXPECT_GT(b.aborted, 0u);
  EXPECT_TRUE(eventually([&] { return eng().stats().queues == 1; }, 5s))
      << "I/O queue still counted: " << eng().stats().queues;

  // The same controller takes a new I/O queue and it works.
  auto q2 = (*ctrl)->create_io_queue(8);
  ASSERT_RESULT(q2);
  ASSERT_NO_FATAL_FAILURE(write_read_verify(**q2, 0, MiB, 6));

  // Now the whole host vanishes: the engine drops both queues and the controller.
  (*q2)->close();
  (*ctrl)->admin_queue().close();
  EXPECT_TRUE(eventually([&] { return eng().stats().queues == 0 && eng().stats().controllers == 0; }, 5s))
      << "queues " << eng().stats().queues << " controllers " << eng().stats().controllers;

  // A fresh controller works.
  auto ctrl2 = Controller::connect(target());
  ASSERT_RESULT(ctrl2);
  auto q3 = (*ctrl2)->create_io_queue();
  ASSERT_RESULT(q3);
  ASSERT_NO_FATAL_FAILURE(write_read_verify(**q3, 2048, MiB, 7));
  EXPECT_EQ(eng().stats().controllers, 1u);
  EXPECT_EQ(eng().stats().queues, 2u);
}

// ---- 4. keep-alive timeout -----------------------------------------------------------------

TEST_F(LoopbackTest, KeepAliveTimeoutTearsDownSilentController) {
  ASSERT_NO_FATAL_FAILURE(serve());
  Target t = target();
  t.kato_ms = 1000;
  auto ctrl = Controller::connect(t);
  ASSERT_RESULT(ctrl);
  const auto silent_from = std::chrono::steady_clock::now();
  EXPECT_EQ(eng().stats().controllers, 1u);
  // Send nothing. Within ~2-3 s the target must close the admin queue and drop the controller.
  EXPECT_TRUE((*ctrl)->admin_queue().wait_peer_close(4000)) << "target did not close the admin queue";
  const auto elapsed = std::chrono::steady_clock::now() - silent_from;
  EXPECT_GE(elapsed, 900ms) << "torn down before KATO passed";
  EXPECT_LE(elapsed, 3500ms);
  EXPECT_TRUE(eventually([&] { return eng().stats().controllers == 0; }, 2s));
}

TEST_F(LoopbackTest, KeepAliveKeepsControllerAlive) {
  ASSERT_NO_FATAL_FAILURE(serve());
  Target t = target();
  t.kato_ms = 1000;
  auto ctrl = Controller::connect(t);
  ASSERT_RESULT(ctrl);
  const auto end = std::chrono::steady_clock::now() + 2500ms;
  while (std::chrono::steady_clock::now() < end) {
    ASSERT_TRUE((*ctrl)->poll()) << (*ctrl)->admin_queue().error().to_string();
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_RESULT((*ctrl)->identify(static_cast<uint8_t>(nvme::Cns::controller)));
  EXPECT_EQ(eng().stats().controllers, 1u);
}

// ---- 5. allowed hosts ----------------------------------------------------------------------

TEST_F(LoopbackTest, UnknownHostIsRefused) {
  ASSERT_NO_FATAL_FAILURE(serve({.allow_any_host = false, .hosts = {host_a}}));
  auto refused = Controller::connect(target(false, false, host_b));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, Error::Kind::nvme) << refused.error().to_string();
  EXPECT_EQ(refused.error().status.sct, nvme::Sct::command_specific);
  EXPECT_EQ(refused.error().status.sc, 0x84) << refused.error().to_string();  // Connect Invalid Host

  auto allowed = Controller::connect(target(false, false, host_a));
  ASSERT_RESULT(allowed);
  auto q = (*allowed)->create_io_queue(4);
  ASSERT_RESULT(q);
  ASSERT_NO_FATAL_FAILURE(write_read_verify(**q, 0, 4096, 9));
}

// ---- 6. asynchronous event on namespace add ------------------------------------------------

TEST_F(LoopbackTest, AsyncEventOnNamespaceAdd) {
  ASSERT_NO_FATAL_FAILURE(serve());
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  Controller& c = **ctrl;
  ASSERT_RESULT(c.submit_async_event());
  // Give the target time to take the AER in, so this test is about the notice itself; an
  // event raised before the AER arrives is AsyncEventRaisedBeforeRequestIsRetained's subject.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(c.poll());
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(c.take_async_event().has_value()) << "AER completed with nothing to report";

  control::NamespaceConfig ns;
  ns.nsid = 2;
  ns.backend.kind = "ram";
  ns.backend.size_bytes = 8 * MiB;
  ns.block_size = 4096;
  const auto add_err = eng().add_namespace(test_nqn, ns);
  ASSERT_FALSE(add_err.has_value()) << add_err->message;

  auto ev = c.wait_async_event(5000);
  ASSERT_RESULT(ev);
  EXPECT_EQ(*ev, 0x00040002u) << std::hex << *ev;  // notice, namespace attribute changed, log 04h

  auto log = c.get_log_page(static_cast<uint8_t>(nvme::LogPage::changed_namespace_list), 4096);
  ASSERT_RESULT(log);
  const auto changed = parse_changed_ns_list(*log);
  EXPECT_NE(std::find(changed.begin(), changed.end(), 2u), changed.end()) << "NSID 2 not in the changed list";

  auto list = c.identify(static_cast<uint8_t>(nvme::Cns::active_namespace_list), 0);
  ASSERT_RESULT(list);
  const auto active = parse_changed_ns_list(*list);  // same layout: NSIDs, zero-terminated
  EXPECT_EQ(active, (std::vector<uint32_t>{1, 2}));
  auto id = c.identify(static_cast<uint8_t>(nvme::Cns::namespace_), 2);
  ASSERT_RESULT(id);
  const auto nid = parse_identify_namespace(*id);
  EXPECT_EQ(nid.block_size, 4096u);
  EXPECT_EQ(nid.nsze, 8 * MiB / 4096);

  // The new namespace serves I/O.
  auto q = c.create_io_queue(4);
  ASSERT_RESULT(q);
  std::vector<uint8_t> w(8192), r(8192);
  fill(w, 11);
  ASSERT_RESULT(sync_io(**q, Io{Op::write, 2, 3, 1, w}));
  ASSERT_RESULT(sync_io(**q, Io{Op::read, 2, 3, 1, r}));
  EXPECT_TRUE(w == r);

  // Removal is announced the same way once a new AER is outstanding.
  ASSERT_RESULT(c.submit_async_event());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(c.poll());
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(eng().remove_namespace(test_nqn, 2).has_value());
  auto ev2 = c.wait_async_event(5000);
  ASSERT_RESULT(ev2);
  EXPECT_EQ(*ev2, 0x00040002u) << std::hex << *ev2;
}

// An event that happens while no AER is outstanding is kept and completes the next AER
// (NVMe Base 2.0, 5.2: events are queued until an Asynchronous Event Request is available).
TEST_F(LoopbackTest, AsyncEventRaisedBeforeRequestIsRetained) {
  ASSERT_NO_FATAL_FAILURE(serve());
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  Controller& c = **ctrl;
  control::NamespaceConfig ns;
  ns.nsid = 3;
  ns.backend.kind = "ram";
  ns.backend.size_bytes = 1 * MiB;
  ASSERT_FALSE(eng().add_namespace(test_nqn, ns).has_value());
  std::this_thread::sleep_for(50ms);  // the target has seen the event with no AER to take it
  ASSERT_RESULT(c.submit_async_event());
  auto ev = c.wait_async_event(3000);
  ASSERT_RESULT(ev);
  EXPECT_EQ(*ev, 0x00040002u) << std::hex << *ev;
  auto log = c.get_log_page(static_cast<uint8_t>(nvme::LogPage::changed_namespace_list), 4096);
  ASSERT_RESULT(log);
  EXPECT_EQ(parse_changed_ns_list(*log), (std::vector<uint32_t>{3}));
}

// ---- 7. Identify and discovery ---------------------------------------------------------------

TEST_F(LoopbackTest, IdentifyAndDiscovery) {
  ASSERT_NO_FATAL_FAILURE(serve());
  auto ctrl = Controller::connect(target());
  ASSERT_RESULT(ctrl);
  Controller& c = **ctrl;
  const auto& id = c.identity();
  EXPECT_EQ(id.subnqn, test_nqn);
  EXPECT_GE(id.nn, 1u);
  EXPECT_EQ(id.cntlid, c.cntlid());
  EXPECT_EQ(id.ioccsz, (8192u + 64) / 16);
  EXPECT_EQ(c.io_icd_size(), 8192u);
  EXPECT_EQ(c.mdts_bytes(), 1 * MiB);
  EXPECT_EQ(id.sqes & 0xf, 6);
  EXPECT_EQ(id.cqes & 0xf, 4);
  EXPECT_FALSE(id.sn.empty());
  EXPECT_EQ(id.mn, "nvmetune");
  EXPECT_TRUE(c.vs() >= nvme::version_1_3) << std::hex << c.vs();
  EXPECT_EQ((c.cap() & 0xffff) + 1, 128u) << "CAP.MQES+1 = queue depth";

  auto ns = c.identify(static_cast<uint8_t>(nvme::Cns::namespace_), 1);
  ASSERT_RESULT(ns);
  const auto nid = parse_identify_namespace(*ns);
  EXPECT_EQ(nid.block_size, block);
  EXPECT_EQ(nid.nsze, 64 * MiB / block);
  EXPECT_EQ(nid.ncap, nid.nsze);

  auto descs = c.identify(static_cast<uint8_t>(nvme::Cns::namespace_id_descriptors), 1);
  EXPECT_RESULT(descs);

  // A transfer larger than MDTS is refused with Invalid Field in Command; the queue stays up.
  auto q = c.create_io_queue(4);
  ASSERT_RESULT(q);
  std::vector<uint8_t> big(2 * MiB);
  auto too_big = sync_io(**q, Io{Op::read, 1, 0, nlb0_of(big.size()), big});
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().kind, Error::Kind::nvme) << too_big.error().to_string();
  EXPECT_EQ(too_big.error().status, nvme::status::invalid_field) << too_big.error().to_string();
  ASSERT_NO_FATAL_FAILURE(write_read_verify(**q, 0, 4096, 31));

  // Discovery.
  Target dt = target();
  dt.subnqn = nvme::discovery_nqn;
  auto disc = Controller::connect(dt);
  ASSERT_RESULT(disc);
  auto hdr = (*disc)->get_log_page(static_cast<uint8_t>(nvme::LogPage::discovery), discovery_header_size);
  ASSERT_RESULT(hdr);
  const uint64_t numrec = parse_discovery_log(*hdr).numrec;
  ASSERT_GE(numrec, 1u);
  auto full = (*disc)->get_log_page(static_cast<uint8_t>(nvme::LogPage::discovery),
                                    static_cast<uint32_t>(discovery_header_size + numrec * discovery_entry_size));
  ASSERT_RESULT(full);
  const auto log = parse_discovery_log(*full);
  ASSERT_EQ(log.entries.size(), numrec);
  bool found = false;
  for (const auto& e : log.entries) {
    if (e.subnqn != test_nqn) continue;
    found = true;
    EXPECT_EQ(e.trtype, 3);  // TCP
    EXPECT_EQ(e.adrfam, 1);  // IPv4
    EXPECT_EQ(e.subtype, 2);  // NVM subsystem
    EXPECT_EQ(e.traddr, "127.0.0.1");
    EXPECT_EQ(e.trsvcid, std::to_string(_port));
  }
  EXPECT_TRUE(found) << "subsystem missing from the discovery log";
  EXPECT_RESULT((*disc)->disconnect());
}

// ---- 8. malformed PDUs end only their queue --------------------------------------------------

class MalformedPduTest : public LoopbackTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(serve());
    auto c = Controller::connect(target(/*hdgst=*/true, /*ddgst=*/false));
    ASSERT_RESULT(c);
    _ctrl = std::move(c.value());
    auto good = _ctrl->create_io_queue(8);
    ASSERT_RESULT(good);
    _good = std::move(good.value());
    auto bad = _ctrl->create_io_queue(8);
    ASSERT_RESULT(bad);
    _bad = std::move(bad.value());
    ASSERT_TRUE(_bad->hdgst());
    _errors_before = eng().stats().protocol_errors;
  }

  // Sends bytes on the bad queue and expects a C2HTermReq with fes, then the target's close,
  // while the good queue keeps doing I/O.
  void expect_termination(std::span<const uint8_t> bytes, tcp::Fes fes, std::vector<uint32_t> feis) {
    ASSERT_RESULT(_bad->send_raw(bytes));
    auto pdu = _bad->recv_raw_pdu(5000);
    ASSERT_RESULT(pdu);
    ASSERT_EQ(pdu->ch.type, tcp::PduType::c2h_term_req) << "got PDU type " << int(pdu->ch.type);
    ASSERT_GE(pdu->bytes.size(), tcp::term_hlen);
    EXPECT_EQ(pdu->ch.hlen, tcp::term_hlen);
    const auto term = tcp::parse_term_req(pdu->bytes);
    EXPECT_EQ(term.fes, fes) << "FES " << int(term.fes) << " FEI " << term.fei;
    EXPECT_NE(std::find(feis.begin(), feis.end(), term.fei), feis.end()) << "FEI " << term.fei;
    EXPECT_TRUE(_bad->wait_peer_close(5000)) << "the target kept the connection open";
    EXPECT_TRUE(eventually([&] { return eng().stats().protocol_errors == _errors_before + 1; }, 2s));
    ASSERT_NO_FATAL_FAILURE(write_read_verify(*_good, 0, 64 * 1024, 21));
    EXPECT_EQ(_ctrl->admin_queue().state(), TcpQueue::State::live);
  }

  // A CapsuleCmd header with header digest (and optional in-capsule data length).
  std::vector<uint8_t> capsule(const nvme::Sqe& sqe, uint32_t icd_len) {
    std::vector<uint8_t> b(tcp::max_hlen + tcp::digest_len + 8);
    const size_t n = tcp::write_capsule_cmd(b, sqe, icd_len, {true, false}, _bad->cpda());
    b.resize(n);
    return b;
  }

  std::unique_ptr<Controller> _ctrl;
  std::unique_ptr<TcpQueue> _good, _bad;
  uint64_t _errors_before = 0;
};

TEST_F(MalformedPduTest, UnknownPduType) {
  std::vector<uint8_t> pdu(tcp::data_hlen + tcp::digest_len, 0);
  pdu[0] = 0x0b;  // no such PDU type
  pdu[1] = tcp::flag::hdgstf;
  pdu[2] = tcp::data_hlen;
  nvme::put_le(pdu.data(), 4, static_cast<uint32_t>(pdu.size()));
  nvme::put_le(pdu.data(), tcp::data_hlen, tcp::crc32c(pdu.data(), tcp::data_hlen));
  expect_termination(pdu, tcp::Fes::invalid_header_field, {tcp::field::type});
}

TEST_F(MalformedPduTest, CapsuleWithBadHeaderDigest) {
  nvme::Sqe sqe = cmd::flush(1);
  sqe.set_cid(1);
  sqe.set_sgl(0, 0, nvme::sgl_transport_data_block);
  auto pdu = capsule(sqe, 0);
  pdu[tcp::capsule_cmd_hlen] ^= 0x5a;  // corrupt the header digest
  expect_termination(pdu, tcp::Fes::header_digest_error, {0, tcp::capsule_cmd_hlen});
}

TEST_F(MalformedPduTest, H2CDataBeyondR2T) {
  constexpr uint32_t len = 16 * 1024;  // > in-capsule size: the target answers with an R2T
  nvme::Sqe sqe = cmd::write(1, 64, nlb0_of(len));
  sqe.set_cid(3);
  sqe.set_sgl(0, len, nvme::sgl_transport_data_block);
  ASSERT_RESULT(_bad->send_raw(capsule(sqe, 0)));
  auto r2t_pdu = _bad->recv_raw_pdu(5000);
  ASSERT_RESULT(r2t_pdu);
  ASSERT_EQ(r2t_pdu->ch.type, tcp::PduType::r2t);
  const auto r2t = tcp::parse_r2t(r2t_pdu->bytes);
  EXPECT_EQ(r2t.cccid, 3);
  ASSERT_GT(r2t.r2tl, 0u);

  const uint32_t datal = r2t.r2tl + block;  // one block more than asked for
  ASSERT_LE(datal, _bad->maxh2cdata());
  std::vector<uint8_t> pdu(tcp::max_hlen + tcp::digest_len);
  const size_t hl = tcp::write_h2c_data(pdu, {3, r2t.ttag, r2t.r2to, datal}, true, {true, false}, _bad->cpda());
  pdu.resize(hl + datal, 0xab);
  expect_termination(pdu, tcp::Fes::data_out_of_range, {tcp::field::datao, tcp::field::datal});
}

// An H2CTermReq from the host makes the target close the queue without answering.
TEST_F(MalformedPduTest, HostTerminationRequestClosesQueue) {
  std::array<uint8_t, tcp::term_max_plen> term{};
  const std::array<uint8_t, tcp::ch_len> offending{0x07, 0, 24, 0, 24, 0, 0, 0};
  const size_t n = tcp::write_term_req(term, tcp::PduType::h2c_term_req,
                                       {tcp::Fes::invalid_header_field, tcp::field::type}, offending);
  ASSERT_RESULT(_bad->send_raw(std::span<const uint8_t>(term.data(), n)));
  auto pdu = _bad->recv_raw_pdu(5000);
  ASSERT_FALSE(pdu) << "target answered an H2CTermReq with PDU type " << int(pdu->ch.type);
  EXPECT_EQ(pdu.error().kind, Error::Kind::transport) << pdu.error().to_string();
  EXPECT_TRUE(eventually([&] { return eng().stats().queues == 2; }, 2s)) << eng().stats().queues;
  ASSERT_NO_FATAL_FAILURE(write_read_verify(*_good, 0, 64 * 1024, 22));
}

TEST_F(MalformedPduTest, CapsuleWithBadPdo) {
  constexpr uint32_t len = 512;
  nvme::Sqe sqe = cmd::write(1, 8, nlb0_of(len));
  sqe.set_cid(4);
  sqe.set_sgl(0, len, nvme::sgl_data_block_offset);
  auto pdu = capsule(sqe, len);
  pdu[tcp::field::pdo] = 70;  // inside the header (which ends at 76 with its digest)
  const uint32_t plen = 70 + len;
  nvme::put_le(pdu.data(), tcp::field::plen, plen);
  nvme::put_le(pdu.data(), tcp::capsule_cmd_hlen, tcp::crc32c(pdu.data(), tcp::capsule_cmd_hlen));
  pdu.resize(plen, 0xcd);
  expect_termination(pdu, tcp::Fes::invalid_header_field, {tcp::field::pdo});
}

}  // namespace
