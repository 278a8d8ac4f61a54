// The store survives kill -9 in the middle of heavy writes: the database opens, passes
// PRAGMA integrity_check and holds every interval the writer reported committed.
//
// A forked child runs a data::Writer flat out (16-queue synthetic snapshots with histograms)
// and writes the highest committed seq to a pipe after each commit; the parent SIGKILLs it at
// a different moment in each round, then checks the file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "data/store/store.hpp"
#include "data/store/writer.hpp"
#include "support/synthetic_snapshot.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int rounds = 3;
constexpr unsigned queues = 16;

// The child: never returns.
[[noreturn]] void write_until_killed(const std::string& path, int fd) {
  std::string error;
  auto store = data::Store::open(path, error);
  if (!store) _exit(3);
  const int64_t run = store->begin_run({}, error);
  data::WriterOptions wo;
  wo.queue_capacity = 1'000'000;  // no drops: every seq up to the reported one must be there
  wo.max_batch = 8;
  wo.on_commit = [fd](uint64_t seq) {
    const std::string line = std::to_string(seq) + "\n";
    if (write(fd, line.data(), line.size()) < 0) _exit(4);
  };
  data::Writer writer(*store, run, wo);
  for (uint64_t seq = 1;; ++seq) {
    writer.submit(test_support::synthetic_snapshot(seq, int64_t(seq) * 1'000'000'000, queues, 100));
    while (writer.stats().queued > 32) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Reads the pipe until at least `commits` lines arrived; returns the last seq read.
uint64_t read_commits(int fd, int commits, std::string& buffer) {
  uint64_t last = 0;
  int seen = 0;
  char chunk[4096];
  while (seen < commits) {
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      last = std::stoull(buffer.substr(0, nl));
      buffer.erase(0, nl + 1);
      ++seen;
    }
  }
  return last;
}

}  // namespace

TEST(StoreCrash, KillDashNineKeepsEveryCommittedInterval) {
  const fs::path dir = fs::temp_directory_path() / ("store_crash." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "crash.db").string();
  std::vector<uint64_t> reported;
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      write_until_killed(path, fds[1]);
    }
    close(fds[1]);
    std::string buffer;
    uint64_t last = read_commits(fds[0], 20 + 15 * round, buffer);  // a different moment each round
    ASSERT_GT(last, 0u) << "round " << round << ": the child committed nothing";
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    // Commits reported between our last read and the kill count too.
    last = std::max(last, read_commits(fds[0], INT32_MAX, buffer));
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
    reported.push_back(last);
  }

  std::string error;
  auto store = data::Store::open(path, error);
  ASSERT_TRUE(store) << error;
  EXPECT_EQ(store->integrity_check(), "ok");
  const auto runs = store->list_runs();
  ASSERT_EQ(runs.size(), static_cast<size_t>(rounds));
  for (int round = 0; round < rounds; ++round) {
    const auto seqs = store->interval_seqs(runs[static_cast<size_t>(round)].id);
    ASSERT_GE(seqs.size(), reported[static_cast<size_t>(round)]) << "round " << round;
    for (uint64_t s = 1; s <= reported[static_cast<size_t>(round)]; ++s)
      ASSERT_EQ(seqs[s - 1], s) << "round " << round << ": committed interval " << s << " missing";
    // The data of a committed interval is whole: its histograms merge to what was written.
    const auto h = store->merge_histograms(runs[static_cast<size_t>(round)].id, {"read_latency", ""},
                                           {1'000'000'000, 1'000'000'000});
    EXPECT_EQ(h.count, queues * 100u);
    std::printf("round %d: %llu intervals reported committed, %zu stored\n", round,
                static_cast<unsigned long long>(reported[static_cast<size_t>(round)]), seqs.size());
  }
  store.reset();
  fs::remove_all(dir);
}
