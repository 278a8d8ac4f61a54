#include "engine/initiator/load_generator.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/initiator/controller.hpp"
#include "engine/initiator/identify.hpp"
#include "engine/initiator/queue.hpp"
#include "engine/stats/histogram.hpp"
#include "engine/stats/print.hpp"
#include "engine/tcp/digest.hpp"

namespace initiator {

namespace {

bool is_random(Pattern p) { return p == Pattern::randread || p == Pattern::randwrite || p == Pattern::randrw; }

// ---------------------------------------------------------------------------- workers

constexpr uint64_t verify_written = 1ull << 63;
constexpr uint64_t verify_busy = 1ull << 62;
constexpr uint64_t verify_tag_mask = (1ull << 30) - 1;  // bits 32..61: the write's tag

struct DirStats {
  stats::Histogram hist;
  uint64_t errors = 0;
  double shift = -1, sum = 0, sumsq = 0;  // latency moments (shifted) for the stddev

  void record(uint64_t ns) {
    hist.record(ns);
    const double x = static_cast<double>(ns);
    if (shift < 0) shift = x;
    const double d = x - shift;
    sum += d;
    sumsq += d * d;
  }
};

struct Shared;
struct Worker;

struct Slot {
  Worker* w = nullptr;
  Queue* q = nullptr;
  uint8_t* buf = nullptr;
  uint64_t unit = 0;      // I/O-sized block index
  uint64_t old = 0;       // verify: table entry before this I/O
  bool read = true;
};

struct Worker {
  Shared* sh = nullptr;
  unsigned index = 0;
  int cpu = -1;
  std::vector<Queue*> queues;
  std::unique_ptr<Slot[]> slots;
  size_t nslots = 0;
  uint8_t* bufs = nullptr;
  std::vector<Slot*> idle;  // capacity nslots: slots waiting for a free verify block

  alignas(64) DirStats rd;
  alignas(64) DirStats wr;

  uint64_t rng = 0;
  uint64_t seq_begin = 0, seq_end = 0, seq_next = 0;
  uint64_t issued = 0, budget = UINT64_MAX;  // measured I/Os submitted / allowed (--size)
  uint32_t inflight = 0;
  uint32_t tag = 0;
  bool measuring = false, stopping = false, readback = false;
  uint64_t rb_next = 0;  // read-back cursor
  std::atomic<bool> budget_done{false};

  std::string failure;  // the first queue failure or I/O error
  uint64_t verify_checked = 0, verify_mismatches = 0;
  std::vector<LoadMismatch> mismatches;  // the first few

  ~Worker() { std::free(bufs); }

  uint64_t next_rand() {  // xorshift64*
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
  }
};

struct Shared {
  LoadSpec cfg;
  uint32_t nsid = 1;
  uint32_t block_size = 512;
  uint32_t lbas_per_unit = 8;
  uint64_t units = 0;
  bool verify = false;
  std::unique_ptr<std::atomic<uint64_t>[]> table;  // verify: per unit, written|busy|tag|crc
  std::atomic<int> phase{0};                       // 0 ramp, 1 measure, 2 stop
  std::atomic<unsigned> drained{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> readback_go{false};  // verify: set once before_readback has run
  unsigned nworkers = 1;
};


// The verify pattern of one logical block: its LBA and the write's tag, then a xorshift stream
// seeded by both, so a mismatch can be located to the block and byte.
void fill_block(uint8_t* p, uint32_t len, uint64_t lba, uint32_t tag) {
  uint64_t x = (lba * 0x9E3779B97F4A7C15ull) ^ (uint64_t{tag} << 17) ^ 0x5DEECE66Dull;
  if (x == 0) x = 1;
  std::memcpy(p, &lba, 8);
  const uint64_t t64 = tag;
  std::memcpy(p + 8, &t64, 8);
  for (uint32_t i = 16; i + 8 <= len; i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t v = x * 0x2545F4914F6CDD1Dull;
    std::memcpy(p + i, &v, 8);
  }
}

void on_complete(void* ctx, const Completion& c);

// Picks the next block for s (and locks it in verify mode). False: none available now.
bool pick_unit(Worker& w, Slot& s) {
  Shared& sh = *w.sh;
  if (w.readback) {
    while (w.rb_next < sh.units) {
      const uint64_t u = w.rb_next;
      w.rb_next += sh.nworkers;
      const uint64_t e = sh.table[u].load(std::memory_order_acquire);
      if (e & verify_written) {
        s.unit = u;
        s.old = e;
        return true;
      }
    }
    return false;
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t u;
    if (is_random(sh.cfg.pattern)) {
      u = static_cast<uint64_t>((static_cast<unsigned __int128>(w.next_rand()) * sh.units) >> 64);
    } else {
      u = w.seq_next++;
      if (w.seq_next >= w.seq_end) w.seq_next = w.seq_begin;
    }
    if (!sh.verify) {
      s.unit = u;
      return true;
    }
    uint64_t e = sh.table[u].load(std::memory_order_acquire);
    if (e & verify_busy) continue;
    if (sh.table[u].compare_exchange_strong(e, e | verify_busy, std::memory_order_acq_rel)) {
      s.unit = u;
      s.old = e;
      return true;
    }
  }
  return false;
}

// Submits the next I/O on s. False when the slot stays unused (stopping, budget, no block).
bool submit(Slot& s) {
  Worker& w = *s.w;
  Shared& sh = *w.sh;
  if (w.stopping && !w.readback) return false;
  if (w.measuring && !w.readback) {
    if (w.issued >= w.budget) return false;
  }
  if (w.readback) {
    s.read = true;
  } else {
    switch (sh.cfg.pattern) {
      case Pattern::read:
      case Pattern::randread: s.read = true; break;
      case Pattern::write:
      case Pattern::randwrite: s.read = false; break;
      case Pattern::randrw: s.read = (w.next_rand() % 100) < sh.cfg.mixread; break;
    }
  }
  if (!pick_unit(w, s)) {
    if (!w.readback) w.idle.push_back(&s);
    return false;
  }
  const uint64_t slba = s.unit * sh.lbas_per_unit;
  if (sh.verify && !s.read) {
    w.tag = (w.tag + 1) & static_cast<uint32_t>(verify_tag_mask >> 8);
    const uint32_t tag = (w.tag << 8) | (w.index & 0xff);
    for (uint32_t i = 0; i < sh.lbas_per_unit; ++i)
      fill_block(s.buf + size_t{i} * sh.block_size, sh.block_size, slba + i, tag);
    const uint32_t crc = tcp::crc32c(s.buf, sh.cfg.bs);
    s.old = verify_written | (uint64_t{tag} << 32) | crc;  // the entry once written
  }
  Io io;
  io.op = s.read ? Op::read : Op::write;
  io.nsid = sh.nsid;
  io.slba = slba;
  io.nlb0 = static_cast<uint16_t>(sh.lbas_per_unit - 1);
  io.buf = std::span<uint8_t>(s.buf, sh.cfg.bs);
  io.done = {on_complete, &s};
  if (!s.q->submit(io)) {
    if (w.failure.empty())
      w.failure = "submit failed on queue " + std::to_string(s.q->qid()) +
                  (s.q->state() == Queue::State::failed ? ": " + s.q->error().to_string() : "");
    if (sh.verify) sh.table[s.unit].store(0, std::memory_order_release);
    return false;
  }
  if (w.measuring && !w.readback) ++w.issued;
  ++w.inflight;
  return true;
}

void check_read(Worker& w, Slot& s) {
  Shared& sh = *w.sh;
  if (!(s.old & verify_written)) return;
  ++w.verify_checked;
  if (tcp::crc32c(s.buf, sh.cfg.bs) == static_cast<uint32_t>(s.old)) return;
  ++w.verify_mismatches;
  if (w.mismatches.size() >= 16) return;
  // Locate the first differing logical block and byte by regenerating the pattern.
  const uint32_t tag = static_cast<uint32_t>((s.old >> 32) & verify_tag_mask);
  const uint64_t slba = s.unit * sh.lbas_per_unit;
  std::vector<uint8_t> expect(sh.block_size);
  for (uint32_t i = 0; i < sh.lbas_per_unit; ++i) {
    fill_block(expect.data(), sh.block_size, slba + i, tag);
    const uint8_t* got = s.buf + size_t{i} * sh.block_size;
    for (uint32_t b = 0; b < sh.block_size; ++b) {
      if (got[b] != expect[b]) {
        w.mismatches.push_back({slba + i, b});
        return;
      }
    }
  }
  w.mismatches.push_back({slba, 0});  // the crc differs but the pattern matches: report the I/O
}

std::string status_text(const nvme::Status& st) {
  char b[64];
  std::snprintf(b, sizeof b, "NVMe status SCT %u SC 0x%02x%s", static_cast<unsigned>(st.sct), st.sc,
                st.dnr ? " DNR" : "");
  return b;
}

void on_complete(void* ctx, const Completion& c) {
  Slot& s = *static_cast<Slot*>(ctx);
  Worker& w = *s.w;
  Shared& sh = *w.sh;
  --w.inflight;
  DirStats& d = s.read ? w.rd : w.wr;
  if (!c.ok()) {
    ++d.errors;
    if (w.failure.empty())
      w.failure = std::string(s.read ? "read" : "write") + " of LBA " +
                  std::to_string(s.unit * sh.lbas_per_unit) + " failed: " +
                  (c.aborted ? "aborted (" + s.q->error().to_string() + ")" : status_text(c.status));
    if (sh.verify) sh.table[s.unit].store(s.read ? s.old : 0, std::memory_order_release);
  } else {
    if (w.measuring && !w.readback) d.record(c.latency_ns());
    if (sh.verify) {
      if (s.read) check_read(w, s);
      // read: restore the entry (unlocks); write: the new crc and tag (unlocks).
      if (!w.readback) sh.table[s.unit].store(s.old, std::memory_order_release);
    }
  }
  if (c.aborted) return;
  submit(s);
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    std::fprintf(stderr, "nvmetune: warning: cannot pin a load thread to CPU %d\n", cpu);
}

// Polls every queue of w once; false once a queue has failed.
bool poll_all(Worker& w) {
  for (auto* q : w.queues) {
    if (q->poll() < 0) {
      if (w.failure.empty()) w.failure = "queue " + std::to_string(q->qid()) + " failed: " + q->error().to_string();
      return false;
    }
  }
  return true;
}

bool drain(Worker& w, uint64_t timeout_ns) {
  const uint64_t deadline = monotonic_ns() + timeout_ns;
  while (w.inflight > 0) {
    if (!poll_all(w)) return false;
    if (monotonic_ns() > deadline) {
      if (w.failure.empty()) w.failure = std::to_string(w.inflight) + " I/Os still outstanding after the drain timeout";
      return false;
    }
  }
  return true;
}

void run_worker(Worker& w) {
  Shared& sh = *w.sh;
  pin_to(w.cpu);
  int seen = -1;
  bool ok = true;
  auto follow_phase = [&] {
    const int ph = sh.phase.load(std::memory_order_relaxed);
    if (ph != seen) {
      seen = ph;
      if (ph >= 1) w.measuring = true;
      if (ph >= 2) w.stopping = true;
    }
  };
  follow_phase();
  for (size_t i = 0; i < w.nslots; ++i) submit(w.slots[i]);
  while (ok) {
    follow_phase();
    ok = poll_all(w);
    if (!w.idle.empty() && !w.stopping) {
      const size_t n = w.idle.size();
      for (size_t i = 0; i < n; ++i) {
        Slot* s = w.idle[i];
        w.idle[i] = nullptr;
        submit(*s);  // may push it back (at the end)
      }
      w.idle.erase(w.idle.begin(), w.idle.begin() + static_cast<std::ptrdiff_t>(n));
    }
    if (!w.failure.empty()) ok = false;
    if (w.inflight == 0) {
      if (w.stopping) break;
      if (w.measuring && w.issued >= w.budget) w.budget_done.store(true, std::memory_order_relaxed);
      if (w.idle.empty() && !w.budget_done.load(std::memory_order_relaxed)) {
        if (w.failure.empty()) w.failure = "no I/O could be submitted";
        ok = false;
      }
    }
  }
  if (!ok) sh.failed.store(true);
  if (ok) ok = drain(w, 30'000'000'000ull);
  sh.drained.fetch_add(1);
  if (!ok || !sh.verify) {
    if (!ok) sh.failed.store(true);
    return;
  }
  // Read back every written block (this worker's share) once all writes are done and the
  // caller's before_readback ran.
  while (!sh.readback_go.load()) std::this_thread::yield();
  if (sh.failed.load()) return;
  w.readback = true;
  w.measuring = false;
  for (size_t i = 0; i < w.nslots; ++i) submit(w.slots[i]);
  while (w.inflight > 0 && w.failure.empty()) {
    if (!poll_all(w)) break;
  }
  if (!w.failure.empty()) sh.failed.store(true);
}

// ---------------------------------------------------------------------------- results

LoadDirResult collect(const std::vector<std::unique_ptr<Worker>>& ws, bool read) {
  LoadDirResult r;
  double n = 0, mean_acc = 0, m2 = 0;  // pooled over workers via each one's shifted moments
  for (const auto& w : ws) {
    const DirStats& d = read ? w->rd : w->wr;
    r.h.merge(d.hist.read());
    r.errors += d.errors;
    const double k = static_cast<double>(d.hist.count());
    if (k == 0) continue;
    const double m = d.shift + d.sum / k;
    const double var = std::max(0.0, d.sumsq / k - (d.sum / k) * (d.sum / k));
    // Chan et al. parallel combination.
    const double nn = n + k, delta = m - mean_acc;
    m2 += var * k + delta * delta * n * k / nn;
    mean_acc += delta * k / nn;
    n = nn;
  }
  r.stddev = n > 1 ? std::sqrt(m2 / (n - 1)) : 0;
  return r;
}
double cpu_seconds(int who, bool user) {
  rusage ru{};
  getrusage(who, &ru);
  const timeval& t = user ? ru.ru_utime : ru.ru_stime;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}
LoadResult fail_with(LoadResult::Status status, std::string error) {
  LoadResult r;
  r.status = status;
  r.error = std::move(error);
  return r;
}

// Opens the queues and the workers' slots and buffers. Empty on failure (error set).
std::vector<std::unique_ptr<Worker>> make_workers(Shared& sh, std::vector<std::unique_ptr<Queue>>& queues,
                                                  std::string& error) {
  const LoadSpec& cfg = sh.cfg;
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < cfg.threads; ++t) {
    auto w = std::make_unique<Worker>();
    w->sh = &sh;
    w->index = t;
    w->cpu = cfg.cpus.empty() ? -1 : static_cast<int>(cfg.cpus[t % cfg.cpus.size()]);
    w->rng = 0x9E3779B97F4A7C15ull * (t + 1) ^ monotonic_ns();
    if (w->rng == 0) w->rng = 1;
    for (unsigned i = t; i < cfg.queues; i += cfg.threads) w->queues.push_back(queues[i].get());
    w->nslots = w->queues.size() * cfg.qd;
    w->slots = std::make_unique<Slot[]>(w->nslots);
    const size_t bytes = (w->nslots * size_t{cfg.bs} + 4095) / 4096 * 4096;
    w->bufs = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
    if (!w->bufs) {
      error = "cannot allocate " + std::to_string(bytes) + " bytes of buffers";
      return {};
    }
    uint64_t x = w->rng;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {  // incompressible write data
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      const uint64_t v = x * 0x2545F4914F6CDD1Dull;
      std::memcpy(w->bufs + i, &v, 8);
    }
    for (Queue* q : w->queues) {  // RDMA: registered once here, not per I/O
      if (auto r = q->register_memory(w->bufs, bytes); !r) {
        error = "queue " + std::to_string(q->qid()) + ": " + r.error().to_string();
        return {};
      }
    }
    for (size_t i = 0; i < w->nslots; ++i) {
      Slot& s = w->slots[i];
      s.w = w.get();
      s.q = w->queues[i / cfg.qd];
      s.buf = w->bufs + i * size_t{cfg.bs};
    }
    w->idle.reserve(w->nslots);
    const uint64_t per = sh.units / cfg.threads;
    w->seq_begin = per * t;
    w->seq_end = t + 1 == cfg.threads ? sh.units : per * (t + 1);
    if (w->seq_end <= w->seq_begin) w->seq_end = w->seq_begin + 1;
    w->seq_next = w->seq_begin;
    if (cfg.size_bytes) {
      const uint64_t total = std::max<uint64_t>(1, cfg.size_bytes / cfg.bs);
      w->budget = total / cfg.threads + (t < total % cfg.threads ? 1 : 0);
    }
    workers.push_back(std::move(w));
  }
  return workers;
}

// One progress line: the last second's IOPS, MiB/s, p50, p99 and p99.9 per direction (the
// host's own view of the interval, to read beside the engine's target latency).
void print_progress(const Shared& sh, const std::vector<std::unique_ptr<Worker>>& workers,
                    std::vector<stats::HistogramData>& prev_rd, std::vector<stats::HistogramData>& prev_wr,
                    int second, double secs) {
  std::string line;
  char b[160];
  for (int dir = 0; dir < 2; ++dir) {
    const bool read = dir == 0;
    if (read ? !has_reads(sh.cfg.pattern) : !has_writes(sh.cfg.pattern)) continue;
    stats::HistogramData iv;
    for (size_t i = 0; i < workers.size(); ++i) {
      auto now = (read ? workers[i]->rd : workers[i]->wr).hist.read();
      auto& prev = read ? prev_rd[i] : prev_wr[i];
      iv.merge(now.since(prev));
      prev = std::move(now);
    }
    const double iops = static_cast<double>(iv.count) / std::max(secs, 1e-3);
    auto pct = [&](double p) { return iv.count ? stats::format_duration(iv.percentile(p)) : std::string("-"); };
    std::snprintf(b, sizeof b, "%s%s %9.0f IOPS %9.1f MiB/s p50 %s p99 %s p99.9 %s", line.empty() ? "" : " | ",
                  read ? "read" : "write", iops, iops * sh.cfg.bs / 1048576.0, pct(50).c_str(), pct(99).c_str(),
                  pct(99.9).c_str());
    line += b;
  }
  std::fprintf(sh.cfg.progress, "[%4ds] %s\n", second, line.c_str());
  std::fflush(sh.cfg.progress);
}

// Runs the phases on the calling thread: ramp, measure (progress each second), stop, and the
// verify hand-over to the read-back. Returns the measured wall time.
double drive(Shared& sh, std::vector<std::unique_ptr<Worker>>& workers, double& usr, double& sys) {
  const LoadSpec& cfg = sh.cfg;
  using clock = std::chrono::steady_clock;
  auto stopped = [&] { return (cfg.stop && cfg.stop->load()) || sh.failed.load(); };
  auto seconds = [](double s) { return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s)); };
  sh.phase.store(cfg.ramp_s > 0 ? 0 : 1);
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back(run_worker, std::ref(*w));
  if (cfg.ramp_s > 0) {
    const auto t = clock::now() + seconds(cfg.ramp_s);
    while (clock::now() < t && !stopped())
      std::this_thread::sleep_for(std::min<clock::duration>(std::chrono::milliseconds(20), t - clock::now()));
    sh.phase.store(1);
  }
  const auto start = clock::now();
  const double cpu_u0 = cpu_seconds(RUSAGE_SELF, true), cpu_s0 = cpu_seconds(RUSAGE_SELF, false);
  const auto limit = cfg.time_s > 0 ? start + seconds(cfg.time_s) : clock::time_point::max();
  std::vector<stats::HistogramData> prev_rd(workers.size()), prev_wr(workers.size());
  auto next = start + std::chrono::seconds(1);
  int second = 0;
  auto all_budget_done = [&] {
    if (!cfg.size_bytes) return false;
    for (auto& w : workers)
      if (!w->budget_done.load(std::memory_order_relaxed)) return false;
    return true;
  };
  while (true) {
    const auto until = std::min(next, limit);
    while (clock::now() < until && !stopped() && !all_budget_done())
      std::this_thread::sleep_for(std::min<clock::duration>(std::chrono::milliseconds(10), until - clock::now()));
    if (clock::now() >= next) {
      if (cfg.progress) {
        const double secs = std::chrono::duration<double>(clock::now() - (next - std::chrono::seconds(1))).count();
        print_progress(sh, workers, prev_rd, prev_wr, ++second, secs);
      }
      next += std::chrono::seconds(1);
    }
    if (clock::now() >= limit || stopped() || all_budget_done()) break;
  }
  sh.phase.store(2);
  const auto end = clock::now();
  const double runtime = std::chrono::duration<double>(end - start).count();
  usr = runtime > 0 ? 100.0 * (cpu_seconds(RUSAGE_SELF, true) - cpu_u0) / runtime : 0;
  sys = runtime > 0 ? 100.0 * (cpu_seconds(RUSAGE_SELF, false) - cpu_s0) / runtime : 0;
  if (sh.verify) {
    while (sh.drained.load() < sh.nworkers) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!sh.failed.load() && cfg.before_readback) cfg.before_readback();
    sh.readback_go.store(true);
  }
  for (auto& t : threads) t.join();
  return runtime;
}

}  // namespace

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::read: return "read";
    case Pattern::write: return "write";
    case Pattern::randread: return "randread";
    case Pattern::randwrite: return "randwrite";
    case Pattern::randrw: return "randrw";
  }
  return "?";
}

bool has_reads(Pattern p) { return p == Pattern::read || p == Pattern::randread || p == Pattern::randrw; }
bool has_writes(Pattern p) { return p == Pattern::write || p == Pattern::randwrite || p == Pattern::randrw; }

LiveLatency::Reading LiveLatency::read() const {
  std::lock_guard lock(_mu);
  Reading r = _retired;
  for (const auto& [rd, wr] : _live) {
    r.read.merge(rd->read());
    r.write.merge(wr->read());
  }
  return r;
}

void LiveLatency::attach(const stats::Histogram* read, const stats::Histogram* write) {
  std::lock_guard lock(_mu);
  _live.emplace_back(read, write);
}

void LiveLatency::detach_all() {
  std::lock_guard lock(_mu);
  for (const auto& [rd, wr] : _live) {
    _retired.read.merge(rd->read());
    _retired.write.merge(wr->read());
  }
  _live.clear();
}

LoadResult run_load(const LoadSpec& cfg) {
  using S = LoadResult::Status;
  if (cfg.threads == 0 || cfg.queues == 0 || cfg.qd == 0 || cfg.bs == 0)
    return fail_with(S::usage, "threads, queues, qd and bs must be positive");
  if (cfg.threads > cfg.queues)
    return fail_with(S::usage, "--threads " + std::to_string(cfg.threads) + " > --queues " +
                                   std::to_string(cfg.queues) + " (each thread needs at least one queue)");
  auto ctrl_r = Controller::connect(cfg.target);
  if (!ctrl_r)
    return fail_with(S::failed, "cannot connect to " + std::string(transport_name(cfg.target.trtype)) + " " +
                                    cfg.target.traddr + ":" + std::to_string(cfg.target.port) +
                                    " " + cfg.target.subnqn + ": " + ctrl_r.error().to_string());
  auto& ctrl = *ctrl_r.value();
  auto ns_r = ctrl.identify(0, cfg.nsid);
  if (!ns_r)
    return fail_with(S::failed, "identify namespace " + std::to_string(cfg.nsid) + ": " + ns_r.error().to_string());
  const auto ns = parse_identify_namespace(*ns_r);
  if (ns.nsze == 0 || ns.block_size == 0)
    return fail_with(S::failed, "namespace " + std::to_string(cfg.nsid) + " is not active on " + cfg.target.subnqn);
  if (cfg.bs % ns.block_size != 0 || cfg.bs / ns.block_size > 65536)
    return fail_with(S::usage, "--bs " + std::to_string(cfg.bs) + " is not a multiple of the namespace's " +
                                   std::to_string(ns.block_size) + "-byte blocks (or exceeds 65536 blocks)");
  if (ctrl.mdts_bytes() && cfg.bs > ctrl.mdts_bytes())
    return fail_with(S::failed, "--bs " + std::to_string(cfg.bs) + " exceeds the controller's maximum transfer (MDTS) of " +
                                    std::to_string(ctrl.mdts_bytes()) + " bytes");
  const uint32_t mqes = static_cast<uint32_t>(ctrl.cap() & 0xffff) + 1;
  if (cfg.qd > mqes)
    return fail_with(S::failed, "--qd " + std::to_string(cfg.qd) + " exceeds the controller's maximum queue size " +
                                    std::to_string(mqes) + " (CAP.MQES+1)");

  auto sh = std::make_unique<Shared>();
  sh->cfg = cfg;
  sh->nsid = cfg.nsid;
  sh->block_size = ns.block_size;
  sh->lbas_per_unit = cfg.bs / ns.block_size;
  sh->units = ns.nsze / sh->lbas_per_unit;
  sh->verify = cfg.verify;
  sh->nworkers = cfg.threads;
  if (sh->units == 0)
    return fail_with(S::failed, "namespace " + std::to_string(cfg.nsid) + " (" + std::to_string(ns.nsze) +
                                    " blocks) is smaller than --bs");
  if (sh->verify) sh->table = std::make_unique<std::atomic<uint64_t>[]>(sh->units);

  // Queues, created here (the Controller is single-threaded), then handed to the workers.
  std::vector<std::unique_ptr<Queue>> queues;
  for (unsigned i = 0; i < cfg.queues; ++i) {
    auto q = ctrl.create_queue(static_cast<uint16_t>(cfg.qd));
    if (!q)
      return fail_with(S::failed, "cannot create I/O queue " + std::to_string(i + 1) + ": " + q.error().to_string());
    queues.push_back(std::move(q.value()));
  }
  std::string error;
  auto workers = make_workers(*sh, queues, error);
  if (workers.empty()) return fail_with(S::failed, error);

  if (cfg.progress) {
    std::fprintf(cfg.progress,
                 "nvmetune perf: %s bs=%u qd=%u queues=%u threads=%u%s -> %s %s:%u %s nsid %u (%llu x %u-byte blocks)\n",
                 pattern_name(cfg.pattern), cfg.bs, cfg.qd, cfg.queues, cfg.threads, sh->verify ? " verify" : "",
                 transport_name(cfg.target.trtype), cfg.target.traddr.c_str(), cfg.target.port, cfg.target.subnqn.c_str(), cfg.nsid,
                 static_cast<unsigned long long>(ns.nsze), ns.block_size);
    std::fflush(cfg.progress);
  }
  LoadResult r;
  r.block_size = ns.block_size;
  r.nsze = ns.nsze;
  if (cfg.live)
    for (auto& w : workers) cfg.live->attach(&w->rd.hist, &w->wr.hist);
  r.runtime_s = drive(*sh, workers, r.usr_cpu_pct, r.sys_cpu_pct);
  if (cfg.live) cfg.live->detach_all();

  // Clean disconnect (best effort: a failed queue just closes).
  for (auto& q : queues) {
    if (q->state() == Queue::State::live) (void)q->disconnect(2000);
  }
  (void)ctrl.disconnect();

  r.read = collect(workers, true);
  r.write = collect(workers, false);
  for (auto& w : workers) {
    if (r.failure.empty() && !w->failure.empty()) r.failure = w->failure;
    r.verify_checked += w->verify_checked;
    r.verify_mismatches += w->verify_mismatches;
    r.mismatches.insert(r.mismatches.end(), w->mismatches.begin(), w->mismatches.end());
  }
  std::sort(r.mismatches.begin(), r.mismatches.end(),
            [](const LoadMismatch& a, const LoadMismatch& b) { return a.lba < b.lba; });
  return r;
}

}  // namespace initiator
