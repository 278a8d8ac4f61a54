// Steering on the real kernel, in network namespaces of its own (root only): a multi-queue veth
// pair between namespace A (the engine) and B (the initiator). RPS/XPS/RFS are set and
// reverted through the engine while it serves I/O, checked in A's sysfs; SO_INCOMING_CPU and
// the socket options are read from the kernel. This machine's own interrupt lines are only
// ever written with the value they already have.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/control/engine.hpp"
#include "engine/initiator/load_generator.hpp"
#include "engine/system/cpu_bitmap.hpp"
#include "engine/system/steering_txn.hpp"
#include "engine/system/topology.hpp"
#include "support/engine_config.hpp"

namespace {

constexpr const char* test_nqn = "nqn.2026-12.io.nvmetune:steer";
constexpr unsigned queues_per_dir = 4;

std::string ns_a, ns_b;  // namespace names, unique per run
bool ready = false;
std::string skip_reason;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

int enter_netns(const std::string& name) {
  const int fd = open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int rc = setns(fd, CLONE_NEWNET);
  close(fd);
  return rc == 0 ? 0 : errno;
}

// The queue files of vA, read in A's sysfs (a sysfs mounted in A shows A's devices).
std::map<std::string, std::string> veth_queue_files() {
  std::map<std::string, std::string> out;
  for (unsigned q = 0; q < queues_per_dir; ++q) {
    const std::string rx = "/sys/class/net/vA/queues/rx-" + std::to_string(q);
    const std::string tx = "/sys/class/net/vA/queues/tx-" + std::to_string(q);
    out[rx + "/rps_cpus"] = slurp(rx + "/rps_cpus");
    out[rx + "/rps_flow_cnt"] = slurp(rx + "/rps_flow_cnt");
    out[tx + "/xps_cpus"] = slurp(tx + "/xps_cpus");
  }
  return out;
}

class SteeringNetns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return void(skip_reason = "needs root (network namespaces, sysfs)");
    // A private mount namespace: `ip netns` bind mounts and the sysfs remount stay in this process.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return void(skip_reason = std::string("cannot make a mount namespace: ") + strerror(errno));
    ns_a = "nvmt-steer-a-" + std::to_string(getpid());
    ns_b = "nvmt-steer-b-" + std::to_string(getpid());
    const std::string q = " numtxqueues " + std::to_string(queues_per_dir) + " numrxqueues " + std::to_string(queues_per_dir);
    const bool ok = sh("ip netns add " + ns_a) && sh("ip netns add " + ns_b) &&
                    sh("ip -n " + ns_a + " link add vA" + q + " type veth peer name vB netns " + ns_b + q) &&
                    sh("ip -n " + ns_a + " addr add 10.211.0.1/24 dev vA") && sh("ip -n " + ns_b + " addr add 10.211.0.2/24 dev vB") &&
                    sh("ip -n " + ns_a + " link set vA up") && sh("ip -n " + ns_b + " link set vB up") &&
                    sh("ip -n " + ns_a + " link set lo up") && sh("ip -n " + ns_b + " link set lo up");
    if (!ok) return void(skip_reason = "cannot create network namespaces with a multi-queue veth pair (ip netns/ip link)");
    // This thread (and every thread it starts: the engine's) lives in A, with A's sysfs.
    if (int err = enter_netns(ns_a)) return void(skip_reason = std::string("setns: ") + strerror(err));
    umount2("/sys", MNT_DETACH);
    if (mount("sysfs", "/sys", "sysfs", 0, nullptr) != 0) return void(skip_reason = std::string("mount sysfs: ") + strerror(errno));
    ready = true;
  }

  static void TearDownTestSuite() {
    if (!ns_a.empty()) sh("ip netns del " + ns_a);
    if (!ns_b.empty()) sh("ip netns del " + ns_b);
  }

  void SetUp() override {
    if (!ready) GTEST_SKIP() << skip_reason;
    char dir[] = "/tmp/nvmetune-steer-XXXXXX";
    _state_dir = mkdtemp(dir);
  }
  void TearDown() override {
    if (!_state_dir.empty()) std::filesystem::remove_all(_state_dir);
  }

  std::unique_ptr<engine::Engine> start_engine(control::Config cfg) {
    cfg.listeners = {control::ListenerConfig{"tcp", "10.211.0.1", "0"}};
    auto e = std::make_unique<engine::Engine>(std::move(cfg));
    e->set_steering_root("/", _state_dir + "/steering.json");
    e->set_sample_interval_ms(200);
    auto errs = e->start();
    EXPECT_TRUE(errs.empty()) << errs.front().path << ": " << errs.front().message;
    return e;
  }

  static control::Config config() {
    auto c = test_support::one_namespace_config(test_nqn, backend::BackendSpec{"ram", 64ull << 20});
    return c;
  }

  // Runs a load from namespace B on its own thread.
  static std::thread load_from_b(const engine::Engine& e, initiator::LoadSpec spec, initiator::LoadResult& out) {
    spec.target.traddr = "10.211.0.1";
    spec.target.port = e.listeners().front().port;
    spec.target.subnqn = test_nqn;
    return std::thread([spec, &out] {
      if (int err = enter_netns(ns_b)) {
        out.status = initiator::LoadResult::Status::failed;
        out.error = std::string("setns B: ") + strerror(err);
        return;
      }
      out = initiator::run_load(spec);
    });
  }

  // A 2-queue load from B; `during` runs on this thread once it is well under way.
  template <typename Fn>
  static void during_load(const engine::Engine& e, double seconds, Fn during) {
    initiator::LoadSpec spec;
    spec.queues = 2;
    spec.time_s = seconds;
    initiator::LoadResult load;
    auto t = load_from_b(e, spec, load);
    std::this_thread::sleep_for(std::chrono::milliseconds(900));
    during();
    t.join();
    EXPECT_TRUE(load.clean()) << load.error << load.failure;
  }

  std::string _state_dir;
};

sys::SteeringRequest rps_xps(unsigned rps_cpu, unsigned xps_cpu, uint64_t flow_cnt) {
  sys::SteeringRequest r;
  r.rps.push_back({"vA", std::nullopt, std::vector<unsigned>{rps_cpu}, flow_cnt});
  r.xps.push_back({"vA", std::nullopt, std::vector<unsigned>{xps_cpu}});
  return r;
}

TEST_F(SteeringNetns, RpsXpsSetAndRevertedLiveWhileServingIo) {
  auto e = start_engine(config());
  const auto view = e->steering(false).view;  // the listener's interface only
  ASSERT_EQ(view.interfaces.size(), 1u);
  EXPECT_EQ(view.interfaces[0].name, "vA");
  EXPECT_EQ(view.interfaces[0].rx.size(), queues_per_dir);
  EXPECT_EQ(view.interfaces[0].tx.size(), queues_per_dir);
  const auto original = veth_queue_files();
  const auto cpus = sys::online_cpus();

  initiator::LoadSpec spec;
  spec.pattern = initiator::Pattern::randrw;
  spec.queues = 2;
  spec.qd = 16;
  spec.time_s = 3;
  spec.verify = true;
  initiator::LoadResult load;
  auto t = load_from_b(*e, spec, load);
  unsigned cycles = 0;
  for (auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500); std::chrono::steady_clock::now() < end; ++cycles) {
    const unsigned cpu = cpus[cycles % cpus.size()];
    const auto out = e->apply_steering(rps_xps(cpu, cpus.back(), 256));
    ASSERT_TRUE(out.ok()) << out.result.message();
    for (unsigned q = 0; q < queues_per_dir; ++q) {
      const std::string dir = "/sys/class/net/vA/queues/";
      EXPECT_EQ(*sys::parse_cpu_mask(slurp(dir + "rx-" + std::to_string(q) + "/rps_cpus")), std::vector<unsigned>{cpu});
      EXPECT_EQ(slurp(dir + "rx-" + std::to_string(q) + "/rps_flow_cnt"), "256\n");
      EXPECT_EQ(*sys::parse_cpu_mask(slurp(dir + "tx-" + std::to_string(q) + "/xps_cpus")), std::vector<unsigned>{cpus.back()});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const auto r = e->revert_steering();
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(veth_queue_files(), original);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  t.join();
  EXPECT_GE(cycles, 2u);
  ASSERT_EQ(load.status, initiator::LoadResult::Status::ok) << load.error;
  EXPECT_TRUE(load.clean()) << load.failure;
  EXPECT_EQ(load.read.errors + load.write.errors, 0u);
  EXPECT_GT(load.read.h.count + load.write.h.count, 0u);
  unsigned applies = 0, reverts = 0;
  for (const auto& ev : e->events())
    if (ev.kind == "steering") (ev.detail_json.find("\"apply\"") != std::string::npos ? applies : reverts)++;
  EXPECT_EQ(applies, cycles);
  EXPECT_EQ(reverts, cycles);
}

TEST_F(SteeringNetns, CleanStopRevertsAndKillLeavesAStateFileThatRestores) {
  const auto original = veth_queue_files();
  {
    auto e = start_engine(config());
    ASSERT_TRUE(e->apply_steering(rps_xps(0, 0, 1024)).ok());
    EXPECT_NE(veth_queue_files(), original);
  }  // ~Engine: stop() reverts
  EXPECT_EQ(veth_queue_files(), original);
  // A child engine killed with SIGKILL leaves its state file; the crash path restores from it.
  const std::string state = _state_dir + "/steering.json";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    engine::Engine e(config());
    e.set_steering_root("/", state);
    _exit(e.apply_steering(rps_xps(0, 0, 512)).ok() ? (raise(SIGKILL), 0) : 3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  EXPECT_EQ(slurp("/sys/class/net/vA/queues/rx-0/rps_flow_cnt"), "512\n");
  const auto r = sys::revert_state_file(state);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(veth_queue_files(), original);
}

// Never moves an interrupt line: each is written with the list it already has.
TEST_F(SteeringNetns, RealIrqAffinityRewrittenWithItsOwnValue) {
  std::istringstream lines(slurp("/proc/interrupts"));
  std::string line;
  unsigned tried = 0, rewritten = 0;
  while (std::getline(lines, line) && rewritten == 0 && tried < 8) {
    const auto colon = line.find(':');
    const std::string num = line.substr(0, colon);
    if (colon == std::string::npos || num.find_first_not_of(" 0123456789") != std::string::npos) continue;
    const std::string path = "/proc/irq/" + std::to_string(std::stoul(num)) + "/smp_affinity_list";
    const std::string before = slurp(path);
    if (before.empty()) continue;
    ++tried;
    sys::SteeringTransaction txn(sys::SysRoot("/"), "");
    const auto r = txn.apply({{path, before.substr(0, before.find('\n'))}});
    if (!r.ok()) {
      // Lines the kernel will not touch say so (managed: EIO); try the next.
      EXPECT_NE(r.message().find(path), std::string::npos) << r.message();
      continue;
    }
    EXPECT_EQ(slurp(path), before);
    EXPECT_TRUE(txn.revert().ok());
    EXPECT_EQ(slurp(path), before);
    ++rewritten;
  }
  EXPECT_EQ(rewritten, 1u) << "no interrupt line took its own affinity back (" << tried << " tried)";
}

// Every TCP socket of this process on port: {SO_PRIORITY, SO_BUSY_POLL,
// SO_PREFER_BUSY_POLL, SO_SNDBUF, SO_RCVBUF}.
std::vector<std::array<int, 5>> socket_options_on_port(uint16_t port) {
  std::vector<std::array<int, 5>> out;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* ent = d ? readdir(d) : nullptr) {
    const int fd = atoi(ent->d_name);
    sockaddr_in a{};
    socklen_t len = sizeof a;
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM) continue;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET || ntohs(a.sin_port) != port) continue;
    std::array<int, 5> v{};
    const int names[5] = {SO_PRIORITY, SO_BUSY_POLL, SO_PREFER_BUSY_POLL, SO_SNDBUF, SO_RCVBUF};
    for (int i = 0; i < 5; ++i) {
      socklen_t l = sizeof(int);
      getsockopt(fd, SOL_SOCKET, names[i], &v[i], &l);
    }
    out.push_back(v);
  }
  if (d) closedir(d);
  return out;
}

TEST_F(SteeringNetns, BusyPollAndPriorityOnTheEnginesSockets) {
  auto cfg = config();
  cfg.tcp.so_priority = 5;
  cfg.tcp.busy_poll_us = 50;
  cfg.tcp.prefer_busy_poll = true;
  cfg.tcp.socket_buffer_bytes = 1536 << 10;  // neither the default nor a kernel default
  auto e = start_engine(cfg);
  // The initiator's sockets live in B with other ports; on the engine's port: the listener,
  // the admin queue and two I/O queues. The kernel reports buffer sizes doubled.
  std::vector<std::array<int, 5>> opts;
  during_load(*e, 1.5, [&] { opts = socket_options_on_port(e->listeners().front().port); });
  ASSERT_GE(opts.size(), 4u);
  for (const auto& o : opts) EXPECT_EQ(o, (std::array<int, 5>{5, 50, 1, 3 << 20, 3 << 20}));
}

// Bound mode places each queue on the worker of the CPU its packets arrive on; RPS decides
// that CPU on a veth, so steering moves where new queues run.
TEST_F(SteeringNetns, BoundIncomingCpuFollowsRps) {
  const auto cpus = sys::online_cpus();
  auto cfg = config();
  cfg.threading.mode = "bound";
  cfg.threading.queue_cpu = "incoming";
  auto e = start_engine(cfg);
  for (unsigned target : {cpus.back(), cpus.front()}) {
    ASSERT_TRUE(e->apply_steering(rps_xps(target, target, 0)).ok());
    stats::Snapshot snap;
    during_load(*e, 1.2, [&] { snap = e->last_snapshot(); });
    unsigned io_queues = 0;
    for (const auto& q : snap.queues) {
      if (q.qid == 0 || q.worker < 0) continue;
      ++io_queues;
      auto w = std::find_if(snap.workers.begin(), snap.workers.end(), [&](const stats::WorkerRow& r) { return int(r.index) == q.worker; });
      ASSERT_NE(w, snap.workers.end());
      EXPECT_EQ(w->cpus_allowed, std::vector<unsigned>{unsigned(q.incoming_cpu)}) << "queue " << q.queue_id;
      EXPECT_EQ(q.incoming_cpu, int(target)) << "RPS sends the queue's packets to CPU " << target;
    }
    EXPECT_EQ(io_queues, 2u);
    ASSERT_TRUE(e->revert_steering().ok());
  }
}

}  // namespace
