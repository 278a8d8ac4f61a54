// The store on a full disk: commits fail cleanly, submit() keeps accepting without waiting,
// the failure is visible (write_errors, failing, last_error), drops are counted, and writing
// resumes by itself when space returns. The disk is a 2 MiB tmpfs (needs root to mount).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "data/store/store.hpp"
#include "data/store/writer.hpp"
#include "support/synthetic_snapshot.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr unsigned queues = 64;  // ~40 KiB a snapshot: 2 MiB fills within ~50 intervals

class TmpfsDir {
 public:
  TmpfsDir() : _dir(fs::temp_directory_path() / ("store_full." + std::to_string(getpid()))) {
    fs::create_directories(_dir);
    if (mount("tmpfs", _dir.c_str(), "tmpfs", 0, "size=2M") != 0) _error = std::strerror(errno);
  }
  ~TmpfsDir() {
    if (_error.empty()) umount2(_dir.c_str(), MNT_DETACH);
    fs::remove_all(_dir);
  }
  const std::string& error() const { return _error; }
  const fs::path& dir() const { return _dir; }
  bool grow() { return mount("tmpfs", _dir.c_str(), "tmpfs", MS_REMOUNT, "size=64M") == 0; }

 private:
  fs::path _dir;
  std::string _error;
};

}  // namespace

TEST(StoreDiskFull, FailsCleanlyKeepsAcceptingAndResumes) {
  TmpfsDir tmp;
  if (!tmp.error().empty()) GTEST_SKIP() << "cannot mount a tmpfs (needs root/CAP_SYS_ADMIN): " << tmp.error();
  std::string error;
  auto store = data::Store::open((tmp.dir() / "full.db").string(), error);
  ASSERT_TRUE(store) << error;
  const int64_t run = store->begin_run({}, error);
  ASSERT_GT(run, 0) << error;
  data::WriterOptions wo;
  wo.queue_capacity = 20;
  wo.max_batch = 4;
  wo.retry_pause = 20ms;
  data::Writer writer(*store, run, wo);

  // Fill the disk, one interval every 2 ms. submit() must never wait for the disk.
  uint64_t seq = 0;
  auto next = [&seq] {
    ++seq;
    return test_support::synthetic_snapshot(seq, int64_t(seq) * 1'000'000'000, queues, 100);
  };
  auto slowest = 0ns;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (writer.stats().write_errors == 0 && std::chrono::steady_clock::now() < deadline) {
    auto snap = next();
    const auto t0 = std::chrono::steady_clock::now();
    writer.submit(std::move(snap));
    slowest = std::max(slowest, std::chrono::steady_clock::now() - t0);
    std::this_thread::sleep_for(2ms);
  }
  auto st = writer.stats();
  ASSERT_GT(st.write_errors, 0u) << "2 MiB never filled up after " << seq << " intervals";
  EXPECT_TRUE(st.failing);
  EXPECT_NE(st.last_error.find("full"), std::string::npos) << st.last_error;
  const uint64_t written_when_full = st.written;
  EXPECT_GT(written_when_full, 0u);

  // Still full: the writer keeps accepting, the queue overflows, drops are counted.
  for (int i = 0; i < 40; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    writer.submit(next());
    slowest = std::max(slowest, std::chrono::steady_clock::now() - t0);
    std::this_thread::sleep_for(2ms);
  }
  st = writer.stats();
  EXPECT_GT(st.dropped, 0u);
  EXPECT_TRUE(st.failing);
  // A commit retry takes tens of ms on this disk; a submit that waited for one would show.
  // (Generous: a loaded 2-CPU CI machine may deschedule us for a few ms.)
  EXPECT_LT(slowest, 200ms) << "submit() waited for the disk";

  // Space returns: writing resumes without any call.
  ASSERT_TRUE(tmp.grow()) << std::strerror(errno);
  const uint64_t last_seq = seq;
  ASSERT_TRUE(writer.flush(20s)) << "writer did not resume: " << writer.stats().last_error;
  st = writer.stats();
  EXPECT_FALSE(st.failing);
  EXPECT_GT(st.written, written_when_full);
  EXPECT_EQ(st.last_committed_seq, last_seq);
  EXPECT_EQ(st.written + st.dropped, st.submitted);  // every interval is stored or counted
  writer.submit(next());
  ASSERT_TRUE(writer.flush(10s));
  writer.stop();
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_EQ(store->interval_seqs(run).size(), writer.stats().written);
  EXPECT_EQ(store->get_run(run)->dropped_intervals, writer.stats().dropped);
  store.reset();
}
