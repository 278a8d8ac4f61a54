// Throughput and size of the SQLite store (data::Store), printed, never gating:
//   1. samples/s: counter-only snapshots (64 queues, no histograms), 50 per transaction;
//   2. histogram-intervals/s: full snapshots, one histogram row per non-empty histogram;
//   3. a 1-hour run at 1 s intervals with 64 queues: 3600 synthetic snapshots, 60 per
//      transaction (the size does not depend on the batching; one commit per interval, as
//      the writer does when it keeps up, only makes the benchmark slower), then the file size.
// Usage: store_bench [DIR]   (default: a fresh directory under /tmp; removed afterwards)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "data/store/store.hpp"
#include "support/synthetic_snapshot.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int64_t sec = 1'000'000'000;
constexpr unsigned queues = 64;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<data::Store> fresh(const fs::path& path, int64_t& run) {
  fs::remove(path);
  fs::remove(path.string() + "-wal");
  fs::remove(path.string() + "-shm");
  std::string error;
  auto s = data::Store::open(path.string(), error);
  if (!s) {
    std::fprintf(stderr, "store_bench: %s\n", error.c_str());
    std::exit(1);
  }
  run = s->begin_run({}, error);
  return s;
}

// Rows a snapshot turns into (write_batch.cpp): 3 derived + 5 counters for the total, 5 per
// queue, 7 per worker; a histogram row per non-empty histogram.
size_t sample_rows(const stats::Snapshot& s) { return 8 + 5 * s.queues.size() + 7 * s.workers.size(); }
size_t histogram_rows(const stats::Snapshot& s) {
  auto n = [](const stats::QueueRow& q) {
    return size_t{q.queue_wait.count > 0} + (q.read_latency.count > 0) + (q.write_latency.count > 0) +
           (q.other_latency.count > 0) + (q.backend_latency.count > 0);
  };
  size_t total = n(s.total);
  for (const auto& q : s.queues) total += n(q);
  return total;
}

void bench_samples(const fs::path& dir) {
  int64_t run = 0;
  auto s = fresh(dir / "samples.db", run);
  std::vector<stats::Snapshot> batch;
  size_t rows = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 1; i <= 2000; ++i) {
    batch.push_back(test_support::synthetic_snapshot(i, 1000 * sec + int64_t(i) * sec, queues, 0));
    rows += sample_rows(batch.back());
    if (batch.size() == 50) {
      std::string error;
      if (!s->write_batch(run, batch, {}, {}, error)) std::fprintf(stderr, "store_bench: %s\n", error.c_str());
      batch.clear();
    }
  }
  const double t = seconds_since(t0);
  std::printf("samples:     %zu rows in %.2f s = %.0f samples/s (target >= 100000)\n", rows, t, double(rows) / t);
}

void bench_histograms(const fs::path& dir) {
  int64_t run = 0;
  auto s = fresh(dir / "hist.db", run);
  std::vector<stats::Snapshot> snaps;
  for (uint64_t i = 1; i <= 200; ++i) snaps.push_back(test_support::synthetic_snapshot(i, 1000 * sec + int64_t(i) * sec, queues));
  size_t rows = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < snaps.size(); i += 10) {
    std::vector<stats::Snapshot> batch(snaps.begin() + long(i), snaps.begin() + long(i + 10));
    for (const auto& b : batch) rows += histogram_rows(b);
    std::string error;
    if (!s->write_batch(run, batch, {}, {}, error)) std::fprintf(stderr, "store_bench: %s\n", error.c_str());
  }
  const double t = seconds_since(t0);
  std::printf("histograms:  %zu histogram-intervals in %.2f s = %.0f histogram-intervals/s (target >= 1000)"
              " (plus their %zu samples)\n", rows, t, double(rows) / t, snaps.size() * sample_rows(snaps[0]));
}

void bench_hour(const fs::path& dir) {
  int64_t run = 0;
  const fs::path path = dir / "hour.db";
  auto s = fresh(path, run);
  size_t samples = 0, hists = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<stats::Snapshot> batch;
  for (uint64_t i = 1; i <= 3600; ++i) {
    batch.push_back(test_support::synthetic_snapshot(i, 1000 * sec + int64_t(i) * sec, queues));
    samples += sample_rows(batch.back());
    hists += histogram_rows(batch.back());
    if (batch.size() < 60) continue;
    std::string error;
    if (!s->write_batch(run, batch, {}, {}, error)) std::fprintf(stderr, "store_bench: %s\n", error.c_str());
    batch.clear();
  }
  const double t = seconds_since(t0);
  std::string error;
  s->vacuum(error);  // folds the WAL into the file
  const auto bytes = fs::file_size(path);
  std::printf("1 hour:      3600 intervals x %u queues (%zu samples, %zu histogram-intervals) written in %.1f s\n",
              queues, samples, hists, t);
  std::printf("             file size %.1f MiB (%.0f bytes/interval, %.1f bytes/sample-or-histogram row)\n",
              double(bytes) / 1048576.0, double(bytes) / 3600.0, double(bytes) / double(samples + hists));
}

}  // namespace

int main(int argc, char** argv) {
  const bool own = argc < 2;
  const fs::path dir = own ? fs::temp_directory_path() / ("store_bench." + std::to_string(getpid())) : fs::path(argv[1]);
  fs::create_directories(dir);
  bench_samples(dir);
  bench_histograms(dir);
  bench_hour(dir);
  if (own) fs::remove_all(dir);
  return 0;
}
