#include "app/perf.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/exit_code.hpp"
#include "engine/config/config.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/initiator/target.hpp"
#include "engine/stats/histogram_data.hpp"

namespace app {

namespace {

// fio's default percentile list (clat_percentiles).
constexpr double fio_percentiles[] = {1,  5,  10, 20, 30, 40, 50,   60,   70,    80,
                                      90, 95, 99, 99.5, 99.9, 99.95, 99.99};

using initiator::Pattern;

// ---------------------------------------------------------------------------- reporting

std::string pct_key(double p) {
  char b[32];
  std::snprintf(b, sizeof b, "%f", p);
  return b;
}

nlohmann::ordered_json dir_json(const initiator::LoadDirResult& r, uint32_t bs, double runtime_s) {
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

void print_dir(const char* name, const initiator::LoadDirResult& r, uint32_t bs, double runtime_s) {
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


int usage_error(const std::string& what) {
  std::fprintf(stderr, "nvmetune perf: %s\n", what.c_str());
  return exit_usage;
}

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

void add_perf_options(CLI::App& cmd, PerfOptions& o) {
  cmd.add_option("-r,--transport", o.remote,
                 "The target, spdk_nvme_perf style: 'trtype:tcp traddr:127.0.0.1 trsvcid:4420 "
                 "subnqn:NQN [hostnqn:NQN] [adrfam:ipv4]'. trsvcid defaults to 4420. trtype:rdma "
                 "connects over NVMe/RDMA (rdma_cm; needs an RDMA device, e.g. soft-RoCE).")
      ->required()
      ->type_name("'KEY:VALUE ...'");
  cmd.add_option("--rw", o.rw, "Pattern: read, write (sequential), randread, randwrite, randrw (randread).")
      ->check(CLI::IsMember({"read", "write", "randread", "randwrite", "randrw"}))
      ->type_name("PATTERN");
  cmd.add_option("--rwmixread", o.rwmixread, "randrw: percentage of reads (50).")->check(CLI::Range(0u, 100u));
  cmd.add_option("--bs", o.bs, "I/O size, a multiple of the namespace block size: 512, 4k, 128k, 1m (4k).")
      ->type_name("SIZE");
  cmd.add_option("--qd", o.qd, "Outstanding I/Os per queue (32).")->check(CLI::Range(1u, 4096u));
  cmd.add_option("--queues", o.queues, "I/O queues, one TCP connection or RDMA queue pair each (1).")->check(CLI::Range(1u, 1024u));
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
  cmd.add_option("--digest", o.digest, "NVMe/TCP digests to request: hdr, data, hdr,data (none; not with trtype:rdma).")
      ->type_name("hdr,data");
  cmd.add_option("--nsid", o.nsid, "Namespace ID (1).")->check(CLI::Range(1u, 0xfffffffeu));
  cmd.add_option("--hostnqn", o.hostnqn,
                 "Connect as host NQN (default: -r's hostnqn:, else /etc/nvme/hostnqn, else one derived from "
                 "/etc/machine-id as nvme-cli derives it).")
      ->type_name("NQN");
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
  initiator::LoadSpec spec;
  std::string host_source;
  if (auto err = resolve_perf_options(o, spec, &host_source)) return usage_error(*err);
  spec.progress = o.json ? stderr : stdout;
  std::fprintf(spec.progress, "host NQN %s (%s)\n", spec.target.hostnqn.c_str(), host_source.c_str());
  spec.stop = &g_interrupted;

  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  const initiator::LoadResult r = initiator::run_load(spec);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (r.status == initiator::LoadResult::Status::usage) return usage_error(r.error);
  if (r.status == initiator::LoadResult::Status::failed) {
    std::fprintf(stderr, "nvmetune perf: %s\n", r.error.c_str());
    return exit_failure;
  }
  const bool clean = r.clean();
  if (o.json) {
    nlohmann::ordered_json job;
    job["jobname"] = "nvmetune-perf";
    job["groupid"] = 0;
    job["error"] = clean ? 0 : 1;
    nlohmann::ordered_json opts;
    opts["rw"] = initiator::pattern_name(spec.pattern);
    opts["bs"] = std::to_string(spec.bs);
    opts["iodepth"] = std::to_string(o.qd);
    opts["queues"] = std::to_string(o.queues);
    opts["numjobs"] = std::to_string(o.threads);
    if (spec.pattern == Pattern::randrw) opts["rwmixread"] = std::to_string(spec.mixread);
    job["job options"] = opts;
    job["read"] = dir_json(r.read, spec.bs, r.runtime_s);
    job["write"] = dir_json(r.write, spec.bs, r.runtime_s);
    job["job_runtime"] = static_cast<uint64_t>(std::llround(r.runtime_s * 1000));
    job["usr_cpu"] = r.usr_cpu_pct;
    job["sys_cpu"] = r.sys_cpu_pct;
    nlohmann::ordered_json out;
    out["fio version"] = "nvmetune-perf-" NVMETUNE_VERSION;
    out["jobs"] = nlohmann::ordered_json::array({job});
    if (spec.verify) {
      nlohmann::ordered_json v;
      v["checked"] = r.verify_checked;
      v["mismatches"] = r.verify_mismatches;
      nlohmann::ordered_json lbas = nlohmann::ordered_json::array();
      for (const auto& m : r.mismatches) lbas.push_back({{"lba", m.lba}, {"offset", m.offset}});
      v["bad"] = lbas;
      out["verify"] = v;
    }
    if (!r.failure.empty()) out["failure"] = r.failure;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    if (initiator::has_reads(spec.pattern) || r.read.h.count) print_dir("read", r.read, spec.bs, r.runtime_s);
    if (initiator::has_writes(spec.pattern) || r.write.h.count) print_dir("write", r.write, spec.bs, r.runtime_s);
    std::printf("cpu: usr=%.1f%%, sys=%.1f%% (of one CPU, whole process)\n", r.usr_cpu_pct, r.sys_cpu_pct);
    if (spec.verify)
      std::printf("verify: %llu block reads checked, %llu mismatches\n",
                  static_cast<unsigned long long>(r.verify_checked), static_cast<unsigned long long>(r.verify_mismatches));
  }
  for (const auto& m : r.mismatches)
    std::fprintf(stderr, "nvmetune perf: verify mismatch at LBA %llu (byte %u of that block)\n",
                 static_cast<unsigned long long>(m.lba), m.offset);
  if (r.verify_mismatches > r.mismatches.size())
    std::fprintf(stderr, "nvmetune perf: ... %llu mismatches in all\n",
                 static_cast<unsigned long long>(r.verify_mismatches));
  if (!r.failure.empty()) std::fprintf(stderr, "nvmetune perf: %s\n", r.failure.c_str());
  std::fflush(stdout);
  return clean ? exit_ok : exit_failure;
}

}  // namespace app
