#include "app/perf.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app/exit_code.hpp"
#include "engine/control/config.hpp"
#include "engine/initiator/initiator.hpp"
#include "engine/stats/histogram.hpp"
#include "engine/stats/histogram_data.hpp"
#include "engine/stats/print.hpp"
#include "engine/tcp/digest.hpp"

namespace app {

namespace {

// fio's default percentile list (clat_percentiles).
constexpr double fio_percentiles[] = {1,  5,  10, 20, 30, 40, 50,   60,   70,    80,
                                      90, 95, 99, 99.5, 99.9, 99.95, 99.99};

enum class Pattern { read, write, randread, randwrite, randrw };

struct Resolved {
  initiator::Target target;
  Pattern pattern = Pattern::randread;
  unsigned mixread = 50;  // percentage of reads
  uint32_t bs = 4096;
  uint64_t size_bytes = 0;  // 0: by time
  double time_s = 10;
  double ramp_s = 0;
  std::vector<unsigned> cpus;
};

bool has_reads(Pattern p) { return p == Pattern::read || p == Pattern::randread || p == Pattern::randrw; }
bool has_writes(Pattern p) { return p == Pattern::write || p == Pattern::randwrite || p == Pattern::randrw; }
bool is_random(Pattern p) { return p == Pattern::randread || p == Pattern::randwrite || p == Pattern::randrw; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// fio/spdk sizes: 4096, 4k, 4K, 128KiB, 1m, 1G (all 1024-based).
bool parse_perf_size(std::string_view text, uint64_t& out) {
  std::string s(text);
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  std::string suffix = lower(s.substr(i));
  if (suffix == "b") suffix.clear();
  if (suffix.size() == 2 && suffix[1] == 'b') suffix.resize(1);  // "kb" as fio reads it: 1024
  if (!suffix.empty()) {
    suffix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    if (suffix.size() == 3 && suffix.substr(1) == "ib") suffix = suffix.substr(0, 1) + "iB";
  }
  return control::parse_size(s.substr(0, i) + suffix, out);
}

// -r 'trtype:tcp adrfam:ipv4 traddr:127.0.0.1 trsvcid:4420 subnqn:NQN hostnqn:NQN'.
std::optional<std::string> parse_remote(const std::string& text, initiator::Target& t) {
  bool have_addr = false, have_nqn = false;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == text.size()) break;
    size_t end = pos;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    const std::string tok = text.substr(pos, end - pos);
    pos = end;
    const auto colon = tok.find_first_of(":=");
    if (colon == std::string::npos || colon == 0 || colon + 1 == tok.size())
      return "expected KEY:VALUE, got \"" + tok + "\"";
    const std::string key = lower(tok.substr(0, colon));
    const std::string value = tok.substr(colon + 1);
    if (key == "trtype") {
      if (lower(value) != "tcp") return "trtype \"" + value + "\" is not supported (only tcp)";
    } else if (key == "adrfam") {
      const std::string v = lower(value);
      if (v != "ipv4" && v != "ipv6") return "adrfam \"" + value + "\" (expected ipv4 or ipv6)";
    } else if (key == "traddr") {
      t.traddr = value;
      have_addr = true;
    } else if (key == "trsvcid") {
      char* e = nullptr;
      errno = 0;
      const unsigned long port = std::strtoul(value.c_str(), &e, 10);
      if (errno || *e || port == 0 || port > 65535) return "trsvcid \"" + value + "\" is not a port (1..65535)";
      t.port = static_cast<uint16_t>(port);
    } else if (key == "subnqn") {
      if (value.rfind("nqn.", 0) != 0) return "subnqn \"" + value + "\" does not start with \"nqn.\"";
      t.subnqn = value;
      have_nqn = true;
    } else if (key == "hostnqn") {
      if (value.rfind("nqn.", 0) != 0) return "hostnqn \"" + value + "\" does not start with \"nqn.\"";
      t.hostnqn = value;
    } else {
      return "unknown key \"" + key + "\" (keys: trtype, adrfam, traddr, trsvcid, subnqn, hostnqn)";
    }
  }
  if (!have_addr) return "traddr missing";
  if (!have_nqn) return "subnqn missing";
  return std::nullopt;
}

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

struct Mismatch {
  uint64_t lba;
  uint32_t offset;  // first differing byte within that block
};

struct Shared;
struct Worker;

struct Slot {
  Worker* w = nullptr;
  initiator::IoQueue* q = nullptr;
  uint8_t* buf = nullptr;
  uint64_t unit = 0;      // I/O-sized block index
  uint64_t old = 0;       // verify: table entry before this I/O
  bool read = true;
};

struct Worker {
  Shared* sh = nullptr;
  unsigned index = 0;
  int cpu = -1;
  std::vector<initiator::IoQueue*> queues;
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
  std::vector<Mismatch> mismatches;  // the first few

  ~Worker() { std::free(bufs); }

  uint64_t next_rand() {  // xorshift64*
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
  }
};

struct Shared {
  Resolved cfg;
  uint32_t nsid = 1;
  uint32_t block_size = 512;
  uint32_t lbas_per_unit = 8;
  uint64_t units = 0;
  bool verify = false;
  std::unique_ptr<std::atomic<uint64_t>[]> table;  // verify: per unit, written|busy|tag|crc
  std::atomic<int> phase{0};                       // 0 ramp, 1 measure, 2 stop
  std::atomic<unsigned> drained{0};
  std::atomic<bool> failed{false};
  unsigned nworkers = 1;
};

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

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

void on_complete(void* ctx, const initiator::Completion& c);

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
  initiator::Io io;
  io.op = s.read ? initiator::Op::read : initiator::Op::write;
  io.nsid = sh.nsid;
  io.slba = slba;
  io.nlb0 = static_cast<uint16_t>(sh.lbas_per_unit - 1);
  io.buf = std::span<uint8_t>(s.buf, sh.cfg.bs);
  io.done = {on_complete, &s};
  if (!s.q->submit(io)) {
    if (w.failure.empty())
      w.failure = "submit failed on queue " + std::to_string(s.q->qid()) +
                  (s.q->state() == initiator::IoQueue::State::failed ? ": " + s.q->error().to_string() : "");
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

void on_complete(void* ctx, const initiator::Completion& c) {
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
    std::fprintf(stderr, "nvmetune perf: warning: cannot pin thread to CPU %d\n", cpu);
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
  const uint64_t deadline = initiator::monotonic_ns() + timeout_ns;
  while (w.inflight > 0) {
    if (!poll_all(w)) return false;
    if (initiator::monotonic_ns() > deadline) {
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
  // Read back every written block (this worker's share) once all writes are done.
  while (sh.drained.load() < sh.nworkers) std::this_thread::yield();
  if (sh.failed.load()) return;
  w.readback = true;
  w.measuring = false;
  for (size_t i = 0; i < w.nslots; ++i) submit(w.slots[i]);
  while (w.inflight > 0 && w.failure.empty()) {
    if (!poll_all(w)) break;
  }
  if (!w.failure.empty()) sh.failed.store(true);
}

// ---------------------------------------------------------------------------- reporting

struct DirResult {
  stats::HistogramData h;
  uint64_t errors = 0;
  double stddev = 0;
};

DirResult collect(const std::vector<std::unique_ptr<Worker>>& ws, bool read) {
  DirResult r;
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

std::string pct_key(double p) {
  char b[32];
  std::snprintf(b, sizeof b, "%f", p);
  return b;
}

nlohmann::ordered_json dir_json(const DirResult& r, uint32_t bs, double runtime_s) {
  const uint64_t n = r.h.count;
  const double iops = runtime_s > 0 ? static_cast<double>(n) / runtime_s : 0;
  const uint64_t bytes = n * bs;
  nlohmann::ordered_json lat;
  lat["min"] = n ? r.h.min_ns : 0;
  lat["max"] = n ? r.h.max_ns : 0;
  lat["mean"] = r.h.mean();
  lat["stddev"] = r.stddev;
  lat["N"] = n;
  nlohmann::ordered_json pct = nlohmann::ordered_json::object();
  for (double p : fio_percentiles) pct[pct_key(p)] = static_cast<uint64_t>(std::llround(r.h.percentile(p)));
  lat["percentile"] = pct;
  nlohmann::ordered_json j;
  j["io_bytes"] = bytes;
  j["io_kbytes"] = bytes / 1024;
  j["bw_bytes"] = static_cast<uint64_t>(iops * bs);
  j["bw"] = static_cast<uint64_t>(iops * bs / 1024);  // KiB/s, as fio
  j["iops"] = iops;
  j["runtime"] = static_cast<uint64_t>(std::llround(runtime_s * 1000));  // ms
  j["total_ios"] = n;
  j["short_ios"] = 0;
  j["drop_ios"] = 0;
  j["errors"] = r.errors;
  j["clat_ns"] = lat;
  j["lat_ns"] = lat;  // submit to completion: the same clock for both
  return j;
}

void print_dir(const char* name, const DirResult& r, uint32_t bs, double runtime_s) {
  const uint64_t n = r.h.count;
  const double iops = runtime_s > 0 ? static_cast<double>(n) / runtime_s : 0;
  const double mib = iops * bs / (1024.0 * 1024.0);
  std::printf("%s: IOPS=%.0f, BW=%.1fMiB/s (%.1fMB/s) (%llu ios in %.3fs, %llu errors)\n", name, iops, mib,
              iops * bs / 1e6, static_cast<unsigned long long>(n), runtime_s,
              static_cast<unsigned long long>(r.errors));
  if (!n) return;
  std::printf("    lat (usec): min=%.2f, max=%.2f, avg=%.2f, stdev=%.2f\n", static_cast<double>(r.h.min_ns) / 1e3,
              static_cast<double>(r.h.max_ns) / 1e3, r.h.mean() / 1e3, r.stddev / 1e3);
  std::printf("    lat percentiles (usec):\n");
  int col = 0;
  constexpr size_t np = std::size(fio_percentiles);
  for (size_t i = 0; i < np; ++i) {
    const double p = fio_percentiles[i];
    if (col == 0) std::printf("     |");
    std::printf(" %6.2fth=[%9.2f]%s", p, r.h.percentile(p) / 1e3, i + 1 == np ? "" : ",");
    if (++col == 4) {
      std::printf("\n");
      col = 0;
    }
  }
  if (col) std::printf("\n");
}

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

double cpu_seconds(int who, bool user) {
  rusage ru{};
  getrusage(who, &ru);
  const timeval& t = user ? ru.ru_utime : ru.ru_stime;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

int usage_error(const std::string& what) {
  std::fprintf(stderr, "nvmetune perf: %s\n", what.c_str());
  return exit_usage;
}

}  // namespace

void add_perf_options(CLI::App& cmd, PerfOptions& o) {
  cmd.add_option("-r,--transport", o.remote,
                 "The target, spdk_nvme_perf style: 'trtype:tcp traddr:127.0.0.1 trsvcid:4420 "
                 "subnqn:NQN [hostnqn:NQN] [adrfam:ipv4]'. trsvcid defaults to 4420.")
      ->required()
      ->type_name("'KEY:VALUE ...'");
  cmd.add_option("--rw", o.rw, "Pattern: read, write (sequential), randread, randwrite, randrw (randread).")
      ->check(CLI::IsMember({"read", "write", "randread", "randwrite", "randrw"}))
      ->type_name("PATTERN");
  cmd.add_option("--rwmixread", o.rwmixread, "randrw: percentage of reads (50).")->check(CLI::Range(0u, 100u));
  cmd.add_option("--bs", o.bs, "I/O size, a multiple of the namespace block size: 512, 4k, 128k, 1m (4k).")
      ->type_name("SIZE");
  cmd.add_option("--qd", o.qd, "Outstanding I/Os per queue (32).")->check(CLI::Range(1u, 4096u));
  cmd.add_option("--queues", o.queues, "I/O queues, one TCP connection each (1).")->check(CLI::Range(1u, 1024u));
  cmd.add_option("--threads", o.threads,
                 "Poll threads (1). Each drives queues/threads of the queues (the rest round robin) in "
                 "its own busy-poll loop.")
      ->check(CLI::Range(1u, 1024u));
  cmd.add_option("--cpus", o.cpus, "Pin thread i to the i-th CPU of LIST (round robin), e.g. 1 or 2-3,6.")
      ->type_name("LIST");
  cmd.add_option("--time", o.time_s, "Measure for SEC seconds after the ramp (10 unless --size).")
      ->check(CLI::Range(0.0, 1e7))
      ->type_name("SEC");
  cmd.add_option("--size", o.size, "Or stop after SIZE bytes of measured I/O (all threads), e.g. 1G.")
      ->type_name("SIZE");
  cmd.add_option("--ramp", o.ramp_s, "Run SEC seconds before measuring (0).")->check(CLI::Range(0.0, 1e6))->type_name("SEC");
  cmd.add_flag("--verify", o.verify,
               "Write a per-block pattern and keep a crc32c of every written block in memory; reads "
               "of written blocks are checked during the run, and after it every written block is read "
               "back and checked. A mismatch prints the first bad LBA and exits 1. Concurrent I/Os never "
               "touch the same block.");
  cmd.add_option("--digest", o.digest, "NVMe/TCP digests to request: hdr, data, hdr,data (none).")
      ->type_name("hdr,data");
  cmd.add_option("--nsid", o.nsid, "Namespace ID (1).")->check(CLI::Range(1u, 0xfffffffeu));
  cmd.add_flag("--json", o.json,
               "Print the result as fio-shaped JSON on stdout (jobs[0].read.iops, .bw in KiB/s, "
               ".clat_ns.{min,max,mean,stddev,percentile[\"99.000000\"]}); progress goes to stderr.");
  cmd.footer(
      "Connects one controller (admin queue), identifies the namespace, opens --queues I/O queues\n"
      "of --qd slots and keeps every slot busy: each completion records its latency (submit to\n"
      "completion, CLOCK_MONOTONIC) in the engine's histogram and submits the next I/O. Buffers\n"
      "are preallocated per slot; nothing allocates per I/O. Random offsets are uniform over the\n"
      "namespace, aligned to --bs; sequential patterns split the namespace among the threads.\n"
      "Output: one progress line per second (IOPS, MiB/s, p99), then per direction IOPS, MiB/s,\n"
      "latency min/avg/max/stddev and fio's percentiles (1 ... 99.99), and the process CPU use.\n"
      "Ctrl-C stops early and still reports.\n"
      "Exit codes: 0 ok; 1 connection failure, I/O error or verify mismatch; 2 bad command line\n"
      "(a malformed -r string included).\n"
      "Example: nvmetune perf -r 'trtype:tcp traddr:127.0.0.1 trsvcid:4420 "
      "subnqn:nqn.2026-12.io.nvmetune:default' --rw randread --bs 4k --qd 32 --time 10 --ramp 2");
}

int run_perf(const PerfOptions& o) {
  Resolved cfg;
  if (auto err = parse_remote(o.remote, cfg.target)) return usage_error("-r: " + *err);
  if (o.rw == "read") cfg.pattern = Pattern::read;
  else if (o.rw == "write") cfg.pattern = Pattern::write;
  else if (o.rw == "randread") cfg.pattern = Pattern::randread;
  else if (o.rw == "randwrite") cfg.pattern = Pattern::randwrite;
  else cfg.pattern = Pattern::randrw;
  cfg.mixread = o.rwmixread;
  uint64_t bs = 0;
  if (!parse_perf_size(o.bs, bs) || bs == 0 || bs > (1u << 30))
    return usage_error("--bs: malformed size \"" + o.bs + "\" (e.g. 512, 4k, 128k)");
  cfg.bs = static_cast<uint32_t>(bs);
  if (!o.size.empty() && (!parse_perf_size(o.size, cfg.size_bytes) || cfg.size_bytes == 0))
    return usage_error("--size: malformed size \"" + o.size + "\" (e.g. 1G, 256m)");
  cfg.time_s = o.time_s > 0 ? o.time_s : (cfg.size_bytes ? 0 : 10);
  cfg.ramp_s = o.ramp_s;
  if (!o.cpus.empty() && (!control::parse_cpu_list(o.cpus, cfg.cpus) || cfg.cpus.empty()))
    return usage_error("--cpus: malformed CPU list \"" + o.cpus + "\" (e.g. 1 or 2-3,6)");
  if (!o.digest.empty() && o.digest != "none") {
    size_t pos = 0;
    while (pos <= o.digest.size()) {
      const size_t end = std::min(o.digest.find(',', pos), o.digest.size());
      const std::string d = o.digest.substr(pos, end - pos);
      if (d == "hdr") cfg.target.hdgst = true;
      else if (d == "data") cfg.target.ddgst = true;
      else return usage_error("--digest: \"" + d + "\" (expected hdr, data or hdr,data)");
      pos = end + 1;
    }
  }
  if (o.threads > o.queues)
    return usage_error("--threads " + std::to_string(o.threads) + " > --queues " + std::to_string(o.queues) +
                       " (each thread needs at least one queue)");
  std::FILE* progress = o.json ? stderr : stdout;

  // Connect and identify.
  auto ctrl_r = initiator::Controller::connect(cfg.target);
  if (!ctrl_r) {
    std::fprintf(stderr, "nvmetune perf: cannot connect to %s:%u %s: %s\n", cfg.target.traddr.c_str(),
                 cfg.target.port, cfg.target.subnqn.c_str(), ctrl_r.error().to_string().c_str());
    return exit_failure;
  }
  auto& ctrl = *ctrl_r.value();
  auto ns_r = ctrl.identify(0, o.nsid);
  if (!ns_r) {
    std::fprintf(stderr, "nvmetune perf: identify namespace %u: %s\n", o.nsid, ns_r.error().to_string().c_str());
    return exit_failure;
  }
  const auto ns = initiator::parse_identify_namespace(*ns_r);
  if (ns.nsze == 0 || ns.block_size == 0) {
    std::fprintf(stderr, "nvmetune perf: namespace %u is not active on %s\n", o.nsid, cfg.target.subnqn.c_str());
    return exit_failure;
  }
  if (cfg.bs % ns.block_size != 0 || cfg.bs / ns.block_size > 65536)
    return usage_error("--bs " + std::to_string(cfg.bs) + " is not a multiple of the namespace's " +
                       std::to_string(ns.block_size) + "-byte blocks (or exceeds 65536 blocks)");
  if (ctrl.mdts_bytes() && cfg.bs > ctrl.mdts_bytes()) {
    std::fprintf(stderr, "nvmetune perf: --bs %u exceeds the controller's maximum transfer (MDTS) of %llu bytes\n",
                 cfg.bs, static_cast<unsigned long long>(ctrl.mdts_bytes()));
    return exit_failure;
  }
  const uint32_t mqes = static_cast<uint32_t>(ctrl.cap() & 0xffff) + 1;
  if (o.qd > mqes) {
    std::fprintf(stderr, "nvmetune perf: --qd %u exceeds the controller's maximum queue size %u (CAP.MQES+1)\n",
                 o.qd, mqes);
    return exit_failure;
  }

  auto sh = std::make_unique<Shared>();
  sh->cfg = cfg;
  sh->nsid = o.nsid;
  sh->block_size = ns.block_size;
  sh->lbas_per_unit = cfg.bs / ns.block_size;
  sh->units = ns.nsze / sh->lbas_per_unit;
  sh->verify = o.verify;
  sh->nworkers = o.threads;
  if (sh->units == 0) {
    std::fprintf(stderr, "nvmetune perf: namespace %u (%llu blocks) is smaller than --bs\n", o.nsid,
                 static_cast<unsigned long long>(ns.nsze));
    return exit_failure;
  }
  if (sh->verify) sh->table = std::make_unique<std::atomic<uint64_t>[]>(sh->units);

  // Queues, created here (the Controller is single-threaded), then handed to the workers.
  std::vector<std::unique_ptr<initiator::IoQueue>> queues;
  for (unsigned i = 0; i < o.queues; ++i) {
    auto q = ctrl.create_io_queue(static_cast<uint16_t>(o.qd));
    if (!q) {
      std::fprintf(stderr, "nvmetune perf: cannot create I/O queue %u: %s\n", i + 1, q.error().to_string().c_str());
      return exit_failure;
    }
    queues.push_back(std::move(q.value()));
  }
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < o.threads; ++t) {
    auto w = std::make_unique<Worker>();
    w->sh = sh.get();
    w->index = t;
    w->cpu = cfg.cpus.empty() ? -1 : static_cast<int>(cfg.cpus[t % cfg.cpus.size()]);
    w->rng = 0x9E3779B97F4A7C15ull * (t + 1) ^ initiator::monotonic_ns();
    if (w->rng == 0) w->rng = 1;
    for (unsigned i = t; i < o.queues; i += o.threads) w->queues.push_back(queues[i].get());
    w->nslots = w->queues.size() * o.qd;
    w->slots = std::make_unique<Slot[]>(w->nslots);
    const size_t bytes = (w->nslots * size_t{cfg.bs} + 4095) / 4096 * 4096;
    w->bufs = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
    if (!w->bufs) {
      std::fprintf(stderr, "nvmetune perf: cannot allocate %zu bytes of buffers\n", bytes);
      return exit_failure;
    }
    uint64_t x = w->rng;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {  // incompressible write data
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      const uint64_t v = x * 0x2545F4914F6CDD1Dull;
      std::memcpy(w->bufs + i, &v, 8);
    }
    for (size_t i = 0; i < w->nslots; ++i) {
      Slot& s = w->slots[i];
      s.w = w.get();
      s.q = w->queues[i / o.qd];
      s.buf = w->bufs + i * size_t{cfg.bs};
    }
    w->idle.reserve(w->nslots);
    const uint64_t per = sh->units / o.threads;
    w->seq_begin = per * t;
    w->seq_end = t + 1 == o.threads ? sh->units : per * (t + 1);
    if (w->seq_end <= w->seq_begin) w->seq_end = w->seq_begin + 1;
    w->seq_next = w->seq_begin;
    if (cfg.size_bytes) {
      const uint64_t total = std::max<uint64_t>(1, cfg.size_bytes / cfg.bs);
      w->budget = total / o.threads + (t < total % o.threads ? 1 : 0);
    }
    workers.push_back(std::move(w));
  }

  std::fprintf(progress,
               "nvmetune perf: %s bs=%u qd=%u queues=%u threads=%u%s -> %s:%u %s nsid %u (%llu x %u-byte blocks)\n",
               pattern_name(cfg.pattern), cfg.bs, o.qd, o.queues, o.threads, sh->verify ? " verify" : "",
               cfg.target.traddr.c_str(), cfg.target.port, cfg.target.subnqn.c_str(), o.nsid,
               static_cast<unsigned long long>(ns.nsze), ns.block_size);
  std::fflush(progress);

  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  sh->phase.store(cfg.ramp_s > 0 ? 0 : 1);
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back(run_worker, std::ref(*w));

  using clock = std::chrono::steady_clock;
  auto sleep_until_or_stop = [&](clock::time_point t) {
    while (clock::now() < t && !g_interrupted.load() && !sh->failed.load())
      std::this_thread::sleep_for(std::min<clock::duration>(std::chrono::milliseconds(20), t - clock::now()));
  };
  if (cfg.ramp_s > 0) {
    sleep_until_or_stop(clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(cfg.ramp_s)));
    sh->phase.store(1);
  }
  const auto start = clock::now();
  const double cpu_u0 = cpu_seconds(RUSAGE_SELF, true), cpu_s0 = cpu_seconds(RUSAGE_SELF, false);
  const auto limit = cfg.time_s > 0
                         ? start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(cfg.time_s))
                         : clock::time_point::max();
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
    while (clock::now() < until && !g_interrupted.load() && !sh->failed.load() && !all_budget_done())
      std::this_thread::sleep_for(std::min<clock::duration>(std::chrono::milliseconds(10), until - clock::now()));
    if (clock::now() >= next) {
      ++second;
      std::string line;
      char b[160];
      for (int dir = 0; dir < 2; ++dir) {
        const bool read = dir == 0;
        if (read ? !has_reads(cfg.pattern) : !has_writes(cfg.pattern)) continue;
        stats::HistogramData iv;
        for (size_t i = 0; i < workers.size(); ++i) {
          auto now = (read ? workers[i]->rd : workers[i]->wr).hist.read();
          auto& prev = read ? prev_rd[i] : prev_wr[i];
          iv.merge(now.since(prev));
          prev = std::move(now);
        }
        const double secs = std::chrono::duration<double>(clock::now() - (next - std::chrono::seconds(1))).count();
        const double iops = static_cast<double>(iv.count) / std::max(secs, 1e-3);
        std::snprintf(b, sizeof b, "%s%s %9.0f IOPS %9.1f MiB/s p99 %s", line.empty() ? "" : " | ",
                      read ? "read" : "write", iops, iops * cfg.bs / 1048576.0,
                      iv.count ? stats::format_duration(iv.percentile(99)).c_str() : "-");
        line += b;
      }
      std::fprintf(progress, "[%4ds] %s\n", second, line.c_str());
      std::fflush(progress);
      next += std::chrono::seconds(1);
    }
    if (clock::now() >= limit || g_interrupted.load() || sh->failed.load() || all_budget_done()) break;
  }
  sh->phase.store(2);
  const auto end = clock::now();
  const double cpu_u1 = cpu_seconds(RUSAGE_SELF, true), cpu_s1 = cpu_seconds(RUSAGE_SELF, false);
  for (auto& t : threads) t.join();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  const double runtime = std::chrono::duration<double>(end - start).count();

  // Clean disconnect (best effort: a failed queue just closes).
  for (auto& q : queues) {
    if (q->state() == initiator::IoQueue::State::live) (void)q->disconnect(2000);
  }
  (void)ctrl.disconnect();

  const DirResult rd = collect(workers, true), wr = collect(workers, false);
  std::string failure;
  uint64_t checked = 0, mismatched = 0;
  std::vector<Mismatch> mism;
  for (auto& w : workers) {
    if (failure.empty() && !w->failure.empty()) failure = w->failure;
    checked += w->verify_checked;
    mismatched += w->verify_mismatches;
    mism.insert(mism.end(), w->mismatches.begin(), w->mismatches.end());
  }
  std::sort(mism.begin(), mism.end(), [](const Mismatch& a, const Mismatch& b) { return a.lba < b.lba; });
  const double usr = runtime > 0 ? 100.0 * (cpu_u1 - cpu_u0) / runtime : 0;
  const double sys = runtime > 0 ? 100.0 * (cpu_s1 - cpu_s0) / runtime : 0;

  if (o.json) {
    nlohmann::ordered_json job;
    job["jobname"] = "nvmetune-perf";
    job["groupid"] = 0;
    job["error"] = failure.empty() && mismatched == 0 ? 0 : 1;
    nlohmann::ordered_json opts;
    opts["rw"] = pattern_name(cfg.pattern);
    opts["bs"] = std::to_string(cfg.bs);
    opts["iodepth"] = std::to_string(o.qd);
    opts["queues"] = std::to_string(o.queues);
    opts["numjobs"] = std::to_string(o.threads);
    if (cfg.pattern == Pattern::randrw) opts["rwmixread"] = std::to_string(cfg.mixread);
    job["job options"] = opts;
    job["read"] = dir_json(rd, cfg.bs, runtime);
    job["write"] = dir_json(wr, cfg.bs, runtime);
    job["job_runtime"] = static_cast<uint64_t>(std::llround(runtime * 1000));
    job["usr_cpu"] = usr;
    job["sys_cpu"] = sys;
    nlohmann::ordered_json out;
    out["fio version"] = "nvmetune-perf-" NVMETUNE_VERSION;
    out["jobs"] = nlohmann::ordered_json::array({job});
    if (sh->verify) {
      nlohmann::ordered_json v;
      v["checked"] = checked;
      v["mismatches"] = mismatched;
      nlohmann::ordered_json lbas = nlohmann::ordered_json::array();
      for (const auto& m : mism) lbas.push_back({{"lba", m.lba}, {"offset", m.offset}});
      v["bad"] = lbas;
      out["verify"] = v;
    }
    if (!failure.empty()) out["failure"] = failure;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    if (has_reads(cfg.pattern) || rd.h.count) print_dir("read", rd, cfg.bs, runtime);
    if (has_writes(cfg.pattern) || wr.h.count) print_dir("write", wr, cfg.bs, runtime);
    std::printf("cpu: usr=%.1f%%, sys=%.1f%% (of one CPU, whole process)\n", usr, sys);
    if (sh->verify) std::printf("verify: %llu block reads checked, %llu mismatches\n",
                                static_cast<unsigned long long>(checked), static_cast<unsigned long long>(mismatched));
  }
  for (const auto& m : mism)
    std::fprintf(stderr, "nvmetune perf: verify mismatch at LBA %llu (byte %u of that block)\n",
                 static_cast<unsigned long long>(m.lba), m.offset);
  if (mismatched > mism.size())
    std::fprintf(stderr, "nvmetune perf: ... %llu mismatches in all\n", static_cast<unsigned long long>(mismatched));
  if (!failure.empty()) std::fprintf(stderr, "nvmetune perf: %s\n", failure.c_str());
  std::fflush(stdout);
  return failure.empty() && mismatched == 0 ? exit_ok : exit_failure;
}

}  // namespace app
