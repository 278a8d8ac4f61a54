// Steering discovery, plans and transactions (engine/system/steering_*) against fake /proc +
// /sys trees (tests/support/fake_sysfs.hpp): virtio, mlx5-style and ice-style multi-queue NICs
// on machines with more CPUs than this one.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "engine/control/engine.hpp"
#include "engine/rpc/rpc_methods.hpp"
#include "engine/control/steering_json.hpp"
#include "engine/system/cpu_bitmap.hpp"
#include "engine/system/irq_table.hpp"
#include "engine/system/steering_files.hpp"
#include "engine/system/steering_discovery.hpp"
#include "engine/system/steering_plan.hpp"
#include "engine/system/steering_txn.hpp"
#include "support/fake_sysfs.hpp"

namespace {

using test_support::FakeIrq;
using test_support::FakeSysfs;

// virtio-net on 8 CPUs: 4 queue pairs, lines named after the virtio device, msi_irqs on the
// PCI parent (where a line of another virtio device would show too: "virtio9-req.0").
void virtio_nic(FakeSysfs& t) {
  const std::string chip = "PCI-MSIX-0000:00:03.0";
  t.irq({37, chip, "0-edge", "virtio2-config"});
  for (unsigned q = 0; q < 4; ++q) {
    t.irq({38 + 2 * q, chip, std::to_string(1 + 2 * q) + "-edge", "virtio2-input." + std::to_string(q), "0-7", std::to_string(q)},
          {100u * q, 7, 0, 0, 0, 0, 0, 1000u + q});
    t.irq({39 + 2 * q, chip, std::to_string(2 + 2 * q) + "-edge", "virtio2-output." + std::to_string(q), "0-7", std::to_string(q)});
  }
  t.irq({24, "IO-APIC", "5-edge", "ACPI:Ged"});
  t.irq({46, chip, "9-edge", "virtio9-req.0"});
  std::vector<unsigned> msi;
  for (unsigned i = 37; i <= 46; ++i) msi.push_back(i);
  t.nic("eth0", "/sys/devices/pci0000:00/0000:00:03.0/virtio2", "/sys/devices/pci0000:00/0000:00:03.0", msi, 4, 4);
}

// mlx5 on 64 CPUs: 8 completion lines "mlx5_compN@pci:ADDR" plus an async line.
void mlx5_nic(FakeSysfs& t) {
  const std::string chip = "IR-PCI-MSIX-0000:3b:00.0";
  const std::string dev = "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0";
  t.irq({120, chip, "0-edge", "mlx5_async0@pci:0000:3b:00.0"});
  std::vector<unsigned> msi{120};
  for (unsigned q = 0; q < 8; ++q) {
    std::vector<unsigned long> counts(64, 0);
    counts[63] = 5000 + q;
    t.irq({121 + q, chip, std::to_string(q + 1) + "-edge", "mlx5_comp" + std::to_string(q) + "@pci:0000:3b:00.0",
           std::to_string(q * 8) + "-" + std::to_string(q * 8 + 7), std::to_string(q * 8)},
          counts);
    msi.push_back(121 + q);
  }
  t.nic("ens1f0np0", dev, dev, msi, 8, 8);
}

// ice on 48 CPUs, without msi_irqs (lines found by name): "ice-ens2f0-TxRx-N" and a misc line.
void ice_nic(FakeSysfs& t) {
  const std::string chip = "IR-PCI-MSIX-0000:5e:00.0";
  t.irq({200, chip, "0-edge", "ice-0000:5e:00.0:misc"});
  for (unsigned q = 0; q < 6; ++q)
    t.irq({201 + q, chip, std::to_string(q + 1) + "-edge", "ice-ens2f0-TxRx-" + std::to_string(q), "0-47", std::to_string(q)});
  t.nic("ens2f0", "/sys/devices/pci0000:5d/0000:5e:00.0", "", {}, 6, 6);
}

const sys::IrqLine& line(const sys::SteeringView& v, unsigned irq) {
  auto it = std::find_if(v.irqs.begin(), v.irqs.end(), [&](const sys::IrqLine& l) { return l.irq == irq; });
  EXPECT_NE(it, v.irqs.end()) << "irq " << irq;
  return *it;
}

// The plan of req on the tree as it is now.
sys::SteeringPlan plan_on(const FakeSysfs& t, const sys::SteeringRequest& req) {
  sys::SysRoot root(t.root());
  return sys::plan_steering(root, sys::discover_steering(root), req);
}

std::vector<sys::FileChange> changes_of(const sys::SteeringPlan& plan) {
  std::vector<sys::FileChange> out;
  for (const auto& r : plan.rows)
    if (r.change) out.push_back({r.path, r.new_value});
  return out;
}

TEST(CpuMask, ParsesAndFormatsKernelBitmaps) {
  EXPECT_EQ(*sys::parse_cpu_mask("00000000,0000000f\n"), (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(*sys::parse_cpu_mask("80000000,00000001"), (std::vector<unsigned>{0, 63}));
  EXPECT_FALSE(sys::parse_cpu_mask("zz"));
  EXPECT_EQ(sys::format_cpu_mask_like({1, 2}, "00\n"), "06");
  EXPECT_EQ(sys::format_cpu_mask_like({40}, "0000,00000000\n"), "0100,00000000");
  EXPECT_EQ(sys::format_cpu_mask_like({}, "0\n"), "0");
  EXPECT_EQ(sys::format_cpu_mask_like({0, 1}, "0\n"), "3");
}

TEST(IrqTable, RolesFromDriverNames) {
  EXPECT_EQ(sys::irq_role("virtio2-input.3").role, "rx");
  EXPECT_EQ(sys::irq_role("virtio2-input.3").queue, 3);
  EXPECT_EQ(sys::irq_role("virtio2-output.0").role, "tx");
  EXPECT_EQ(sys::irq_role("mlx5_comp7@pci:0000:3b:00.0").queue, 7);
  EXPECT_EQ(sys::irq_role("mlx5_async0@pci:0000:3b:00.0").role, "other");
  EXPECT_EQ(sys::irq_role("ice-ens2f0-TxRx-5").role, "txrx");
  EXPECT_EQ(sys::irq_role("eth0-tx-1").role, "tx");
  EXPECT_EQ(sys::irq_role("virtio2-config").role, "other");
}

TEST(SteeringDiscovery, VirtioLinesQueuesAndPerCpuView) {
  FakeSysfs t(8);
  virtio_nic(t);
  const auto v = sys::discover_steering(sys::SysRoot(t.root()));
  EXPECT_TRUE(v.warnings.empty()) << v.warnings.front();
  ASSERT_EQ(v.cpus.size(), 8u);
  ASSERT_EQ(v.interfaces.size(), 1u);
  const auto& eth0 = v.interfaces[0];
  EXPECT_EQ(eth0.device, "/sys/devices/pci0000:00/0000:00:03.0/virtio2");
  // The virtio device's lines (config too), not the other devices' on the same PCI function.
  EXPECT_EQ(eth0.irqs, (std::vector<unsigned>{37, 38, 39, 40, 41, 42, 43, 44, 45}));
  EXPECT_EQ(line(v, 37).role, "other");
  EXPECT_EQ(eth0.rx.size(), 4u);
  EXPECT_EQ(*eth0.rx[3].flow_cnt, 0u);
  EXPECT_TRUE(eth0.tx[0].cpus && eth0.tx[0].cpus->empty());
  const auto& in2 = line(v, 42);
  EXPECT_EQ(in2.name, "virtio2-input.2");
  EXPECT_EQ(in2.role, "rx");
  EXPECT_EQ(in2.queue, 2);
  EXPECT_EQ(in2.device, "eth0");
  EXPECT_EQ(in2.per_cpu[0], 200u);
  EXPECT_EQ(in2.per_cpu[7], 1002u);
  EXPECT_EQ(*in2.affinity, (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(*in2.effective_affinity, (std::vector<unsigned>{2}));
  EXPECT_EQ(line(v, 24).device, "");
  EXPECT_EQ(*v.busy_poll, 0u);
  // CPU 2 is the effective target of input.2 and output.2.
  EXPECT_NE(std::find(v.per_cpu[2].irqs.begin(), v.per_cpu[2].irqs.end(), 42u), v.per_cpu[2].irqs.end());
  EXPECT_NE(std::find(v.per_cpu[2].irqs.begin(), v.per_cpu[2].irqs.end(), 43u), v.per_cpu[2].irqs.end());
  EXPECT_EQ(v.per_cpu[7].interrupts, 1000u + 1001 + 1002 + 1003);
}

TEST(SteeringDiscovery, Mlx5On64CpusAndIceByName) {
  FakeSysfs t(64);
  mlx5_nic(t);
  ice_nic(t);
  // ice wants 48 CPUs in reality; on this 64-CPU tree its masks are as wide as the machine's.
  const auto v = sys::discover_steering(sys::SysRoot(t.root()));
  ASSERT_EQ(v.cpus.size(), 64u);
  ASSERT_EQ(v.interfaces.size(), 2u);
  const auto& mlx = v.interfaces[0].name == "ens1f0np0" ? v.interfaces[0] : v.interfaces[1];
  const auto& ice = v.interfaces[0].name == "ens2f0" ? v.interfaces[0] : v.interfaces[1];
  EXPECT_EQ(mlx.irqs.size(), 9u);
  EXPECT_EQ(line(v, 120).role, "other");
  EXPECT_EQ(line(v, 127).role, "txrx");
  EXPECT_EQ(line(v, 127).queue, 6);
  EXPECT_EQ(line(v, 127).per_cpu[63], 5006u);
  EXPECT_EQ(*line(v, 127).affinity, (std::vector<unsigned>{48, 49, 50, 51, 52, 53, 54, 55}));
  EXPECT_EQ(mlx.rx.size(), 8u);
  EXPECT_TRUE(mlx.rx[0].cpus && mlx.rx[0].cpus->empty());
  EXPECT_EQ(ice.irqs, (std::vector<unsigned>{201, 202, 203, 204, 205, 206}));  // by name, not the misc line
  EXPECT_EQ(line(v, 204).queue, 3);
  EXPECT_EQ(v.per_cpu[63].interrupts, 8u * 5000 + 28);
}

TEST(SteeringDiscovery, RatesFromTwoViews) {
  FakeSysfs t(8);
  virtio_nic(t);
  sys::SysRoot root(t.root());
  sys::SteeringMonitor mon;
  auto a = sys::discover_steering(root);
  mon.rate(a);
  t.irq({38, "PCI-MSIX-0000:00:03.0", "1-edge", "virtio2-input.0", "0-7", "0"}, {100000, 7, 0, 0, 0, 0, 0, 1000});
  usleep(20000);
  auto b = sys::discover_steering(root);
  mon.rate(b);
  EXPECT_GT(line(b, 38).rate, 0.0);
  EXPECT_EQ(line(b, 40).rate, 0.0);
  EXPECT_GT(b.per_cpu[0].irq_rate, 0.0);
  EXPECT_EQ(b.per_cpu[7].irq_rate, 0.0);
}

TEST(SteeringPlan, RowsWithOldAndNewValues) {
  FakeSysfs t(64);
  mlx5_nic(t);
  sys::SteeringRequest req;
  req.irq.push_back({std::nullopt, "ens1f0np0", 2u, std::vector<unsigned>{4}});
  req.irq.push_back({121u, "", std::nullopt, std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}});  // unchanged
  req.rps.push_back({"ens1f0np0", std::nullopt, std::vector<unsigned>{40, 63}, 4096u});
  req.xps.push_back({"ens1f0np0", 0u, std::vector<unsigned>{1}});
  req.rps_sock_flow_entries = 32768;
  const auto plan = plan_on(t, req);
  ASSERT_TRUE(plan.ok()) << plan.errors.front().field << ": " << plan.errors.front().message;
  ASSERT_EQ(plan.rows.size(), 2u + 16 + 1 + 1);
  EXPECT_EQ(plan.rows[0].path, "/proc/irq/123/smp_affinity_list");
  EXPECT_EQ(plan.rows[0].old_value, "16-23\n");
  EXPECT_EQ(plan.rows[0].new_value, "4");
  EXPECT_FALSE(plan.rows[1].change);
  EXPECT_EQ(plan.rows[2].path, "/sys/class/net/ens1f0np0/queues/rx-0/rps_cpus");
  EXPECT_EQ(plan.rows[2].old_value, "00000000,00000000\n");
  EXPECT_EQ(plan.rows[2].new_value, "80000100,00000000");
  EXPECT_EQ(plan.rows[3].path, "/sys/class/net/ens1f0np0/queues/rx-0/rps_flow_cnt");
  EXPECT_EQ(plan.rows[3].new_value, "4096");
  EXPECT_EQ(plan.rows[18].new_value, "00000000,00000002");
  EXPECT_EQ(plan.changes(), plan.rows.size() - 1);
}

TEST(SteeringPlan, EveryBadRuleReported) {
  FakeSysfs t(8);
  virtio_nic(t);
  sys::SteeringRequest req;
  req.irq.push_back({999u, "", std::nullopt, std::vector<unsigned>{0}});
  req.irq.push_back({38u, "", std::nullopt, std::vector<unsigned>{}});
  req.rps.push_back({"eth9", 0u, std::vector<unsigned>{0}});
  req.rps.push_back({"eth0", 7u, std::vector<unsigned>{0}});
  req.xps.push_back({"eth0", 0u, std::vector<unsigned>{12}});
  const auto plan = plan_on(t, req);
  std::vector<std::string> fields;
  for (const auto& e : plan.errors) fields.push_back(e.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"irq[0].irq", "irq[1].cpus", "rps[0].device", "rps[1].queue", "xps[0].cpus"}));
  EXPECT_NE(plan.errors[4].message.find("not online"), std::string::npos);
}

TEST(SteeringTxn, ApplyThenRevertIsByteIdentical) {
  FakeSysfs t(48);
  ice_nic(t);
  sys::SysRoot root(t.root());
  const auto before = t.files();
  const std::string state = t.root() + "/state/steering.json";
  sys::SteeringTransaction txn(root, state);
  sys::SteeringRequest req;
  req.irq.push_back({std::nullopt, "ens2f0", std::nullopt, std::vector<unsigned>{47}});
  req.rps.push_back({"ens2f0", std::nullopt, std::vector<unsigned>{1, 2}, 2048u});
  req.busy_poll = 50;
  const auto plan = plan_on(t, req);
  ASSERT_TRUE(plan.ok());
  auto r = txn.apply(changes_of(plan));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(t.read("/proc/irq/203/smp_affinity_list"), "47");
  EXPECT_EQ(t.read(FakeSysfs::queue("ens2f0", "rx", 5) + "/rps_cpus"), "0000,00000006");
  EXPECT_TRUE(std::filesystem::exists(state));
  // A second plan over the first: revert still goes back to the machine's originals.
  sys::SteeringRequest again;
  again.irq.push_back({203u, "", std::nullopt, std::vector<unsigned>{3}});
  ASSERT_TRUE(txn.apply(changes_of(plan_on(t, again))).ok());
  EXPECT_EQ(t.read("/proc/irq/203/smp_affinity_list"), "3");
  r = txn.revert();
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.done.size(), plan.changes());
  auto after = t.files();
  EXPECT_EQ(after, before);
  EXPECT_FALSE(std::filesystem::exists(state));
}

// A read-only bind mount over one file of the plan (as /proc read-only in a container): the
// batch stops there and every earlier write is rolled back.
TEST(SteeringTxn, HalfWayFailureRollsBackEveryEarlierWrite) {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    GTEST_SKIP() << "needs root for a private mount namespace: " << strerror(errno);
  FakeSysfs t(8);
  virtio_nic(t);
  sys::SysRoot root(t.root());
  const std::string ro = t.host(FakeSysfs::queue("eth0", "rx", 2) + "/rps_cpus");
  ASSERT_EQ(mount(ro.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr), 0) << strerror(errno);
  ASSERT_EQ(mount(nullptr, ro.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0) << strerror(errno);
  const auto before = t.files();
  sys::SteeringRequest req;
  req.irq.push_back({std::nullopt, "eth0", std::nullopt, std::vector<unsigned>{5}});
  req.rps.push_back({"eth0", std::nullopt, std::vector<unsigned>{6}, 1024u});
  const auto plan = plan_on(t, req);
  ASSERT_TRUE(plan.ok());
  const std::string state = t.root() + "/steering.json";
  sys::SteeringTransaction txn(root, state);
  const auto r = txn.apply(changes_of(plan));
  umount(ro.c_str());
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->path, FakeSysfs::queue("eth0", "rx", 2) + "/rps_cpus");
  EXPECT_EQ(r.error->err, EROFS);
  EXPECT_NE(r.error->message.find("EROFS"), std::string::npos) << r.error->message;
  EXPECT_NE(r.error->message.find("read-only"), std::string::npos) << r.error->message;
  EXPECT_TRUE(r.rollback_errors.empty());
  EXPECT_TRUE(r.done.empty());
  EXPECT_EQ(t.files(), before);  // 8 IRQ lines and rx-0, rx-1 written, then restored
  EXPECT_TRUE(txn.saved().empty());
  EXPECT_FALSE(std::filesystem::exists(state));
}

TEST(SteeringTxn, StateFileRestoresAfterKill9) {
  FakeSysfs t(8);
  virtio_nic(t);
  const auto before = t.files();
  char dir[] = "/tmp/nvmetune-steer-state-XXXXXX";
  const std::string state = std::string(mkdtemp(dir)) + "/steering.json";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sys::SysRoot root(t.root());
    sys::SteeringRequest req;
    req.rps.push_back({"eth0", std::nullopt, std::vector<unsigned>{1, 3}, 512u});
    req.irq.push_back({38u, "", std::nullopt, std::vector<unsigned>{7}});
    sys::SteeringTransaction txn(root, state);
    txn.apply(changes_of(sys::plan_steering(root, sys::discover_steering(root), req)));
    raise(SIGKILL);  // no destructor, no revert
    _exit(1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(t.read("/proc/irq/38/smp_affinity_list"), "7");
  ASSERT_TRUE(std::filesystem::exists(state));
  // The state file records the root it was written for; the crashed process is gone.
  const auto r = sys::revert_state_file(state);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.done.size(), 4u + 4 + 1);
  EXPECT_EQ(t.files(), before);
  EXPECT_FALSE(std::filesystem::exists(state));
  std::filesystem::remove_all(dir);
}

TEST(SteeringTxn, StateOfALiveProcessBlocksOthers) {
  FakeSysfs t(8);
  virtio_nic(t);
  char dir[] = "/tmp/nvmetune-steer-state-XXXXXX";
  const std::string state = std::string(mkdtemp(dir)) + "/steering.json";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sys::SysRoot root(t.root());
    sys::SteeringTransaction txn(root, state);
    txn.apply({{"/proc/irq/38/smp_affinity_list", "6"}});
    [[maybe_unused]] auto n = write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  sys::SteeringTransaction other(sys::SysRoot(t.root()), state);
  EXPECT_NE(other.blocked().find(std::to_string(child)), std::string::npos) << other.blocked();
  const auto r = other.apply({{"/proc/irq/40/smp_affinity_list", "5"}});
  ASSERT_TRUE(r.error);
  EXPECT_EQ(t.read("/proc/irq/40/smp_affinity_list"), "0-7\n");
  EXPECT_FALSE(sys::revert_state_file(state).ok());  // its owner still runs
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(sys::revert_state_file(state).ok());
  EXPECT_EQ(t.read("/proc/irq/38/smp_affinity_list"), "0-7\n");
  std::filesystem::remove_all(dir);
}

// The allow-list is what the builders make, exactly: every file a plan writes, and nothing that
// merely starts like one.
TEST(SteeringFiles, OnlyTheFilesSteeringWrites) {
  for (const std::string& ok : {sys::irq_affinity_file(38), sys::queue_file("ens1f0np0", 7, sys::QueueFile::rps_cpus),
                               sys::queue_file("eth0", 0, sys::QueueFile::rps_flow_cnt), sys::queue_file("lo", 12, sys::QueueFile::xps_cpus),
                               sys::net_core_file(sys::NetCoreFile::rps_sock_flow_entries), sys::net_core_file(sys::NetCoreFile::busy_poll),
                               sys::net_core_file(sys::NetCoreFile::busy_read)})
    EXPECT_EQ(sys::steering_file_problem(ok), "") << ok;
  EXPECT_EQ(sys::queue_file("eth0", 3, sys::QueueFile::xps_cpus), "/sys/class/net/eth0/queues/tx-3/xps_cpus");
  for (const char* bad : {"/etc/passwd", "", "/proc/irq/38/smp_affinity", "/proc/irq/038/smp_affinity_list",
                          "/proc/irq/+38/smp_affinity_list", "/proc/irq/38/../../../etc/passwd", "/proc/irq/38/smp_affinity_list/",
                          "/sys/class/net/eth0/queues/tx-0/rps_cpus", "/sys/class/net/eth0/queues/rx-0/xps_cpus",
                          "/sys/class/net/../queues/rx-0/rps_cpus", "/sys/class/net/eth0/../eth0/queues/rx-0/rps_cpus",
                          "/sys/class/net/a:b/queues/rx-0/rps_cpus", "/sys/class/net/sixteen-chars-xx/queues/rx-0/rps_cpus",
                          "/proc/sys/net/core/somaxconn", "//proc/sys/net/core/busy_poll", "/proc/sys/net/core/busy_poll\n"})
    EXPECT_NE(sys::steering_file_problem(bad), "") << bad;
}

// A state file as a crashed engine of this boot leaves it (pid 0: no process holds it), saving
// `saved` ({path, old} pairs) for the fake tree t; written into dir with the file's mode.
std::string write_state(const FakeSysfs& t, const std::string& dir, const std::vector<std::pair<std::string, std::string>>& saved,
                        mode_t mode = 0600) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [path, old] : saved) entries.push_back({{"path", path}, {"old", old}, {"new", "1"}});
  std::string boot = t.read("/proc/sys/kernel/random/boot_id");
  boot.pop_back();
  const nlohmann::json doc{{"version", 1}, {"pid", 0}, {"boot_id", boot}, {"root", t.root()}, {"saved", entries}};
  const std::string state = dir + "/steering.json";
  std::ofstream(state) << doc.dump(1);
  chmod(state.c_str(), mode);
  return state;
}

// A temporary directory for state files, removed at the end of the test.
struct StateDir {
  StateDir() {
    char tmpl[] = "/tmp/nvmetune-steer-state-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~StateDir() { std::filesystem::remove_all(path); }
  std::string path;
};

constexpr const char* fake_passwd = "root:x:0:0:root:/root:/bin/bash\n";

// The state file is read back as root: one naming files steering never writes (a system file,
// a path climbing out of /proc/irq or /sys/class/net) is refused whole, the allowed entry beside
// them included.
TEST(SteeringTxn, StateFileNamingOtherFilesIsRefusedAndWritesNothing) {
  FakeSysfs t(8);
  virtio_nic(t);
  t.write("/etc/passwd", fake_passwd);
  t.write("/etc/shadow", "root:*:19000::::::\n");
  const auto before = t.files();
  StateDir dir;
  const std::string state = write_state(t, dir.path,
                                        {{"/proc/irq/38/smp_affinity_list", "3\n"},
                                         {"/etc/passwd", "root::0:0::/root:/bin/sh\n"},
                                         {"/proc/irq/38/../../../etc/shadow", "root::19000::::::\n"},
                                         {"/sys/class/net/../../../etc/passwd", "x\n"},
                                         {"/proc/sys/net/core/somaxconn", "1\n"}});
  const auto r = sys::revert_state_file(state);
  ASSERT_FALSE(r.ok());
  ASSERT_TRUE(r.error);
  const std::string& m = r.error->message;
  for (const char* named : {"\"/etc/passwd\"", "/proc/irq/38/../../../etc/shadow", "/sys/class/net/../../../etc/passwd",
                            "/proc/sys/net/core/somaxconn", "not a file steering writes", state.c_str()})
    EXPECT_NE(m.find(named), std::string::npos) << named << " not in: " << m;
  EXPECT_EQ(m.find("\"/proc/irq/38/smp_affinity_list\""), std::string::npos) << m;  // that one is allowed
  EXPECT_TRUE(r.done.empty());
  EXPECT_EQ(t.files(), before);  // not even irq 38, the one allowed entry
  EXPECT_TRUE(std::filesystem::exists(state));  // left for the operator to look at
  // An engine finding it does not adopt it either.
  sys::SteeringTransaction txn(sys::SysRoot(t.root()), state);
  EXPECT_NE(txn.blocked().find("/etc/passwd"), std::string::npos) << txn.blocked();
  EXPECT_FALSE(txn.revert().ok());
  EXPECT_EQ(t.files(), before);
}

// A kernel file that is a symbolic link now (to a system file, here the tree's /etc/passwd):
// neither a revert from the state file nor an apply writes through it.
TEST(SteeringTxn, SymlinkedFileIsRefusedAndWritesNothing) {
  FakeSysfs t(8);
  virtio_nic(t);
  t.write("/etc/passwd", fake_passwd);
  const std::string linked = "/proc/irq/38/smp_affinity_list";
  std::filesystem::remove(t.host(linked));
  std::filesystem::create_symlink(t.host("/etc/passwd"), t.host(linked));
  const auto before = t.files();
  StateDir dir;
  const std::string state = write_state(t, dir.path, {{"/proc/irq/40/smp_affinity_list", "5\n"}, {linked, "root::0:0::/root:/bin/sh\n"}});
  const auto r = sys::revert_state_file(state);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->message.find(linked + " is a symbolic link"), std::string::npos) << r.error->message;
  EXPECT_TRUE(r.done.empty());
  EXPECT_EQ(t.files(), before);  // irq 40 untouched too
  EXPECT_EQ(t.read("/etc/passwd"), fake_passwd);

  sys::SteeringTransaction txn(sys::SysRoot(t.root()), "");
  const auto applied = txn.apply({{linked, "1"}});
  ASSERT_TRUE(applied.error);
  EXPECT_EQ(applied.error->err, ELOOP);
  EXPECT_NE(applied.error->message.find("symbolic link"), std::string::npos) << applied.error->message;
  EXPECT_EQ(t.read("/etc/passwd"), fake_passwd);
}

// The state file's directory is where another user could plant a state file: it must be ours and
// writable by no one else (what the control socket's directory gets), else nothing is restored
// from it and no state is written into it.
TEST(SteeringTxn, StateDirectoryOthersCanWriteIsRefused) {
  FakeSysfs t(8);
  virtio_nic(t);
  t.irq({38, "PCI-MSIX-0000:00:03.0", "1-edge", "virtio2-input.0", "7", "7"});  // as a crash left it
  const auto before = t.files();
  StateDir dir;
  const std::string state = write_state(t, dir.path, {{"/proc/irq/38/smp_affinity_list", "0-7\n"}});

  ASSERT_EQ(chmod(dir.path.c_str(), 0777), 0);
  auto r = sys::revert_state_file(state);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->message.find(dir.path + ": writable by its group or by everyone (mode 0777)"), std::string::npos)
      << r.error->message;
  EXPECT_EQ(t.files(), before);
  sys::SteeringTransaction in_shared(sys::SysRoot(t.root()), dir.path + "/other.json");
  const auto applied = in_shared.apply({{"/proc/irq/40/smp_affinity_list", "1"}});
  ASSERT_TRUE(applied.error);
  EXPECT_NE(applied.error->message.find("writable by its group or by everyone"), std::string::npos) << applied.error->message;
  EXPECT_EQ(t.files(), before);

  ASSERT_EQ(chmod(dir.path.c_str(), 0700), 0);
  ASSERT_EQ(chmod(state.c_str(), 0666), 0);
  r = sys::revert_state_file(state);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->message.find(state + ": writable by its group or by everyone (mode 0666)"), std::string::npos)
      << r.error->message;
  EXPECT_EQ(t.files(), before);
  ASSERT_EQ(chmod(state.c_str(), 0600), 0);

  if (geteuid() == 0) {  // only root can give a directory away
    ASSERT_EQ(chown(dir.path.c_str(), 65534, 65534), 0);
    r = sys::revert_state_file(state);
    ASSERT_TRUE(r.error);
    EXPECT_NE(r.error->message.find("owned by uid 65534, not by uid 0"), std::string::npos) << r.error->message;
    EXPECT_EQ(t.files(), before);
    ASSERT_EQ(chown(dir.path.c_str(), 0, 0), 0);
  }

  r = sys::revert_state_file(state);  // ours and private again: restored
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(t.read("/proc/irq/38/smp_affinity_list"), "0-7\n");
}

TEST(SteeringTxn, ErrorsSayWhatTheyMean) {
  EXPECT_NE(sys::explain_write_error("/proc/irq/9/smp_affinity_list", EIO).find("managed IRQ"), std::string::npos);
  EXPECT_NE(sys::explain_write_error("/proc/irq/9/smp_affinity_list", EACCES).find("needs root"), std::string::npos);
  EXPECT_NE(sys::explain_write_error("/sys/class/net/x/queues/rx-0/rps_cpus", EROFS).find("read-only"), std::string::npos);
}

// Flow tables and busy-poll times within what the kernel can take: every value out of bounds is
// reported with its path, in one pass, and nothing of the request is kept.
TEST(SteeringRequest, KernelBoundsForFlowTablesAndBusyPolling) {
  using nlohmann::json;
  sys::SteeringRequest req;
  const auto errors = control::parse_steering_request(json::parse(R"({
      "rps": [{"device": "eth0", "queue": 0, "flow_cnt": 1073741824}, {"device": "eth0", "queue": 1, "flow_cnt": 3000},
              {"device": "eth0", "queue": 2, "flow_cnt": 536870912}],
      "rps_sock_flow_entries": 1073741824, "busy_poll": 1000001, "busy_read": 1073741824})"),
                                                      "params", req);
  std::vector<std::string> paths;
  for (const auto& e : errors) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"params.busy_poll", "params.busy_read", "params.rps[0].flow_cnt",
                                             "params.rps[1].flow_cnt", "params.rps_sock_flow_entries"}));
  for (const auto& e : errors) {
    const bool flow = e.path.find("flow") != std::string::npos;
    EXPECT_NE(e.message.find(flow ? "a power of two up to 536870912" : "0..1000000"), std::string::npos) << e.path << ": " << e.message;
  }
  EXPECT_TRUE(req.rps.empty());

  const auto ok = control::parse_steering_request(json::parse(R"({
      "rps": [{"device": "eth0", "flow_cnt": 536870912}, {"device": "eth1", "flow_cnt": 0}],
      "rps_sock_flow_entries": 32768, "busy_poll": 1000000, "busy_read": 0})"),
                                                  "params", req);
  EXPECT_TRUE(ok.empty()) << ok.front().path << ": " << ok.front().message;
  EXPECT_EQ(req.rps_sock_flow_entries, 32768u);
  EXPECT_EQ(req.busy_poll, 1000000u);
}

// What a GUI panel calls: steering.get, steering.plan, steering.apply, steering.revert on an
// engine whose steering root is a fake tree.
TEST(SteeringRpc, GetPlanApplyRevert) {
  using nlohmann::json;
  FakeSysfs t(8);
  virtio_nic(t);
  const auto before = t.files();
  char dir[] = "/tmp/nvmetune-steer-state-XXXXXX";
  const std::string state_dir = mkdtemp(dir);
  engine::Engine e(control::Config{});
  e.set_steering_root(t.root(), state_dir + "/steering.json");
  auto methods = control::make_engine_methods(e, {});
  const auto call = [&](const char* m, const char* params) { return methods.at(m)(json::parse(params)); };

  auto r = call("steering.get", R"({"all": true})");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.result["interfaces"][0]["name"], "eth0");
  EXPECT_EQ(r.result["per_cpu"].size(), 8u);
  EXPECT_EQ(r.result["irqs"].size(), 11u);
  EXPECT_EQ(r.result["interfaces"][0]["rx"][2]["rps_cpus"], "");

  r = call("steering.plan", R"({"rps": [{"device": "eth0", "cpus": "1-2", "flow_cnt": 64}]})");
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.result["rows"].size(), 8u);
  EXPECT_EQ(r.result["rows"][0]["old"], "00\n");
  EXPECT_EQ(r.result["rows"][0]["new"], "06");
  EXPECT_EQ(t.files(), before);  // a dry run

  r = call("steering.plan", R"({"rps": [{"device": "eth9", "cpus": "1"}], "rsp": []})");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, control::rpc_code::invalid_params);
  EXPECT_EQ(r.error->data[0]["path"], "params.rsp");
  r = call("steering.apply", R"({"rps": [{"device": "eth9", "cpus": "1"}]})");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->data[0]["path"], "params.rps[0].device");

  r = call("steering.apply", R"({"rps": [{"device": "eth0", "cpus": "1-2", "flow_cnt": 64}], "busy_read": 50})");
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.result["changes"], 9u);
  EXPECT_EQ(t.read(FakeSysfs::queue("eth0", "rx", 3) + "/rps_cpus"), "06");
  r = call("steering.get", "{}");
  EXPECT_EQ(r.result["saved"].size(), 9u);
  EXPECT_EQ(r.result["active"]["rps"][0]["device"], "eth0");

  r = call("steering.revert", "{}");
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.result["restored"].size(), 9u);
  EXPECT_EQ(t.files(), before);
  std::vector<std::string> actions;
  for (const auto& ev : e.events())
    if (ev.kind == "steering") actions.push_back(json::parse(ev.detail_json)["action"]);
  EXPECT_EQ(actions, (std::vector<std::string>{"apply", "revert"}));
  EXPECT_TRUE(call("events.add", R"({"kind": "steering"})").error);  // the engine's own kind
  std::filesystem::remove_all(state_dir);
}

}  // namespace
