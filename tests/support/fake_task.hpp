#pragma once
// The queue stand-in every executor test uses (tests/unit/*_executor_test.cpp and the contract
// suite every executor passes, executor_contract_test.cpp): it owns one end of a socketpair and
// the test writes to the other. A 'c' byte makes io_work return closed. It checks that io_work
// never overlaps itself, that the executor marked the task ready before every pass, and that
// nothing runs it after a handover until it is attached again; it counts the notification
// context's limited passes (inline) apart from full ones, and the threads its passes ran on.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/exec/executor.hpp"
#include "engine/system/topology.hpp"
#include "support/eventually.hpp"

namespace test_support {

// Polls pred every 200 µs for up to timeout: the executor tests' one wait.
template <typename Pred>
bool wait_for(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  return eventually(pred, timeout, std::chrono::microseconds(200));
}

class FakeTask : public exec::Task {
 public:
  // ex: the executor watch_fd() goes to (the tests that ask for it).
  explicit FakeTask(exec::Executor* ex = nullptr) : _ex(ex) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    _sock = sv[0];
    _peer = sv[1];
  }
  ~FakeTask() override {
    close(_sock);
    close(_peer);
  }
  FakeTask(const FakeTask&) = delete;
  FakeTask& operator=(const FakeTask&) = delete;

  void send(char c = 'x') const { ASSERT_EQ(write(_peer, &c, 1), 1); }
  // The test's end sends its end of stream (a host closing the connection).
  void shut_peer() const { ASSERT_EQ(shutdown(_peer, SHUT_WR), 0); }
  // Non-asserting write for writer threads: false when the socket buffer is full.
  bool try_send(char c = 'x') const { return write(_peer, &c, 1) == 1; }
  // What the task sent so far and nobody read: read from the peer end now.
  long read_peer() const {
    char buf[65536];
    long total = 0;
    ssize_t n;
    while ((n = read(_peer, buf, sizeof buf)) > 0) total += n;
    return total;
  }

  exec::Progress io_work() override {
    if (in_progress.exchange(true)) overlaps.fetch_add(1);
    if (moved_out.load()) passes_while_moved.fetch_add(1);
    if (exec_ready_ns.exchange(0) == 0) unready_passes.fetch_add(1);
    if (!_limited) full_passes.fetch_add(1);
    record_thread();
    observed_kicks.store(kicks.load());
    if (hook) hook(*this);
    const long before = bytes.load();
    const bool close_now = drain_socket();
    if (bytes_are_work) exec_did_work = bytes.load() != before;
    handle_watch();
    pump_out();
    if (after_send) after_send(*this);
    exec::Progress p = exec::Progress::idle;
    if (more_budget.load() > 0) {
      more_budget.fetch_sub(1);
      p = exec::Progress::more;
    }
    if (close_now) p = exec::Progress::closed;
    in_progress.store(false);
    passes.fetch_add(1);
    return p;
  }

  // The notification context's batch (inline): counts it, then the same pass as io_work().
  exec::Progress io_work_limited(unsigned max_pdus) override {
    limited_passes.fetch_add(1);
    last_limit.store(max_pdus);
    _limited = true;
    exec::Progress p = io_work();
    _limited = false;
    if (limited_more.load() && p == exec::Progress::idle) p = exec::Progress::more;
    return p;
  }

  std::array<int, 2> fds() const override { return {_sock, watched.load()}; }
  int incoming_cpu() const override { return cpu.load(); }
  bool polls_in_memory() const override { return in_memory; }

  void retire() override {
    retired.fetch_add(1);
    if (retire_counter != nullptr) retire_counter->fetch_add(1);
    if (delete_on_retire) delete this;
  }

  // Of the latest pass; read when passes is stable.
  std::string name() {
    std::lock_guard lock(name_mu);
    return thread_name;
  }
  std::string full_name() {
    std::lock_guard lock(name_mu);
    return full_pass_name;
  }

  std::atomic<int> passes{0};
  std::atomic<int> full_passes{0};  // io_work() not through io_work_limited()
  std::atomic<int> limited_passes{0};
  std::atomic<unsigned> last_limit{0};
  std::atomic<bool> limited_more{false};  // the limited pass returns more
  std::atomic<int> retired{0};
  std::atomic<bool> in_progress{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> unready_passes{0};
  std::atomic<int> thread_changes{0};  // passes on another thread than the first one's
  std::atomic<bool> moved_out{false};  // set by a handover, cleared before the next attach
  std::atomic<int> passes_while_moved{0};
  std::atomic<int> more_budget{0};
  std::atomic<long> to_send{0};  // bytes io_work still has to write to its socket
  std::atomic<long> bytes{0};
  std::atomic<long> kicks{0};           // bumped by the test before each schedule()
  std::atomic<long> observed_kicks{0};  // kicks seen at the start of the latest pass
  std::atomic<int> watch_request{-1};   // fd to watch_fd() from the next pass
  std::atomic<int> watched{-1};
  std::atomic<uint64_t> eventfd_sum{0};
  std::atomic<int> cpu{-1};  // incoming_cpu()
  std::atomic<int> last_tid{0};
  std::atomic<int> last_cpu{-1};  // sched_getcpu() of the latest pass
  std::function<void(FakeTask&)> hook;        // runs first inside the pass
  std::function<void(FakeTask&)> after_send;  // runs after pump_out, inside the pass
  // Runs inside every pass with the thread's name and whether the pass is a limited one.
  std::function<void(const std::string& thread, bool limited)> observe_pass;
  std::atomic<int>* retire_counter = nullptr;
  bool delete_on_retire = false;
  bool in_memory = false;       // polls_in_memory(): set before attach
  bool bytes_are_work = false;  // a pass that read a byte did work (exec_did_work): set before attach

  std::mutex name_mu;
  std::string thread_name;     // of the latest pass, guarded by name_mu
  std::string full_pass_name;  // of the latest full pass, guarded by name_mu
  int full_pass_cpu = -1;      // guarded by name_mu

 private:
  void record_thread() {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    {
      std::lock_guard lock(name_mu);
      thread_name = name;
      if (!_limited) {
        full_pass_name = name;
        full_pass_cpu = sched_getcpu();
      }
    }
    const int tid = sys::current_tid();
    const int first = _first_tid.load();
    if (first == 0) _first_tid.store(tid);
    else if (first != tid) thread_changes.fetch_add(1);
    last_tid.store(tid);
    last_cpu.store(sched_getcpu());
    if (observe_pass) observe_pass(name, _limited);
  }

  // Sends what to_send asks for, like a queue with responses: stops at EAGAIN and returns idle,
  // relying on the executor to run it again when the socket turns writable.
  void pump_out() {
    static const std::vector<char> chunk(16384, 'o');
    while (to_send.load() > 0) {
      const ssize_t n = write(_sock, chunk.data(), std::min<size_t>(chunk.size(), size_t(to_send.load())));
      if (n <= 0) break;
      to_send.fetch_sub(n);
    }
    exec_tx_blocked = to_send.load() > 0;
  }

  bool drain_socket() {
    bool close_now = false;
    char buf[256];
    ssize_t n;
    while ((n = read(_sock, buf, sizeof buf)) > 0) {
      bytes.fetch_add(n);
      for (ssize_t i = 0; i < n; ++i) close_now |= buf[i] == 'c';
    }
    return close_now;
  }

  void handle_watch() {
    const int want = watch_request.load();
    if (want >= 0 && watched.load() < 0) {
      watched.store(want);
      _ex->watch_fd(*this, want);
    }
    const int fd = watched.load();
    uint64_t value;
    if (fd >= 0 && read(fd, &value, sizeof value) == sizeof value) eventfd_sum.fetch_add(value);
  }

  exec::Executor* _ex;
  int _sock = -1;
  int _peer = -1;
  std::atomic<int> _first_tid{0};
  bool _limited = false;  // inside io_work_limited (never concurrent: io_work is not)
};

// Waits until the task's pass count stops moving for a while: it went idle. False when it
// keeps running (a spinning executor).
inline bool settle(const FakeTask& task) {
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  int last = -1;
  while (task.passes.load() != last || task.in_progress.load()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    last = task.passes.load();
    std::this_thread::sleep_for(30ms);
  }
  return true;
}

// Every io_work pass the executor's workers made (stats(), one entry per thread).
template <typename Executor>
uint64_t total_passes(const Executor& ex) {
  uint64_t sum = 0;
  for (const auto& s : ex.stats()) sum += s.io_work_passes;
  return sum;
}

inline std::set<int> tids_of(const exec::Executor& ex) {
  std::set<int> out;
  for (const auto& t : ex.threads()) out.insert(t.tid);
  return out;
}

}  // namespace test_support
