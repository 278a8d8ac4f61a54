// Tuning profiles (data/profile/): validation in one pass with paths, round trips, diff, the
// nvmetcli and SPDK importers, and apply on a live in-process engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "data/profile/profile.hpp"
#include "engine/system/topology.hpp"
#include "data/profile/profile_apply.hpp"
#include "data/profile/profile_diff.hpp"
#include "data/profile/profile_import.hpp"
#include "engine/config/config_json.hpp"
#include "engine/control/engine.hpp"
#include "support/fake_sysfs.hpp"

namespace {

using json = nlohmann::json;
using control::ConfigError;

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(NVMETUNE_TEST_DATA) + "/profile/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The message at path, or "" (and a failure) when no error names it.
std::string message_at(const std::vector<ConfigError>& errors, const std::string& path) {
  for (const auto& e : errors)
    if (e.path == path) return e.message;
  std::string all;
  for (const auto& e : errors) all += "\n  " + e.path + ": " + e.message;
  ADD_FAILURE() << "no error at " << path << "; errors:" << all;
  return {};
}

bool mentions(const std::vector<std::string>& lines, const std::string& needle, const std::string& also = "") {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(needle) != std::string::npos && l.find(also) != std::string::npos;
  });
}

std::string highest_cpu_plus(unsigned n) { return std::to_string(sys::online_cpus().back() + n); }

const char* full_profile = R"({
  "schema": "nvmetune.profile/1",
  "name": "full",
  "description": "every section",
  "threading": {"mode": "poll", "threads": 1, "first_core": 0, "idle_poll_us": 500, "io_mechanism": "epoll"},
  "budgets": {"recv_pdus": 16, "send_pdus": 4, "bytes_per_pass": "1MiB"},
  "tcp": {"queue_depth": 64, "in_capsule_data_size": 4096},
  "steering": {"irq": [{"irq": 42, "cpus": "0"}, {"device": "eth0", "queue": 1, "cpus": "all"}],
               "rps": [{"device": "eth0", "queue": 0, "cpus": "0"}],
               "xps": [{"device": "eth0", "queue": 0, "cpus": "0"}]},
  "listeners": [{"traddr": "127.0.0.1", "trsvcid": 4420}],
  "subsystems": [{"nqn": "nqn.2026-12.io.nvmetune:p", "allow_any_host": true,
                  "hosts": ["nqn.2014-08.org.nvmexpress:uuid:0c6f6d8e-6f1c-4b3a-9d0e-2f1f4b2c7a11"],
                  "namespaces": [{"nsid": 1, "backend": "ram", "size": "16MiB"},
                                 {"nsid": 2, "backend": "null", "size": "1GiB", "block_size": 4096}]}]
})";

TEST(ProfileParse, FullProfileReadsEverySection) {
  auto r = data::parse_profile(full_profile);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().path << ": " << r.errors.front().message;
  const auto& p = r.profile;
  EXPECT_EQ(p.name, "full");
  ASSERT_TRUE(p.threading && p.budgets && p.tcp && p.steering && p.listeners && p.subsystems);
  EXPECT_EQ(p.threading->mode, "poll");
  EXPECT_EQ(p.threading->idle_poll_us, 500u);
  EXPECT_EQ(p.budgets->recv_pdus, 16u);
  EXPECT_EQ(p.budgets->send_pdus, 4u);
  EXPECT_EQ(p.budgets->ops_per_pass, 64u);  // left out: the default
  EXPECT_EQ(p.budgets->bytes_per_pass, 1u << 20);
  EXPECT_EQ(p.tcp->queue_depth, 64u);
  ASSERT_EQ(p.steering->irq.size(), 2u);
  EXPECT_EQ(*p.steering->irq[0].irq, 42u);
  EXPECT_EQ(p.steering->irq[1].device, "eth0");
  EXPECT_TRUE(p.steering->irq[1].cpus.empty());  // "all"
  EXPECT_EQ(p.listeners->at(0).trsvcid, "4420");
  EXPECT_EQ(p.subsystems->at(0).namespaces.size(), 2u);
}

TEST(ProfileParse, PartialProfileHasOnlyItsSections) {
  auto r = data::parse_profile(R"({"schema": "nvmetune.profile/1", "threading": {"mode": "unbound"}})");
  ASSERT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.profile.threading);
  EXPECT_FALSE(r.profile.budgets || r.profile.tcp || r.profile.steering || r.profile.listeners || r.profile.subsystems);
  EXPECT_EQ(r.profile.name, "");
}

TEST(ProfileParse, EveryErrorWithItsPathInOnePass) {
  const std::string text = R"({
    "schema": "nvmetune.profile/1",
    "name": "bad name!",
    "threadin": {},
    "threading": {"mode": "poll", "cpumask": ")" + highest_cpu_plus(1) + R"(", "mod": "x", "threads": "two"},
    "budgets": {"recv_pdus": 0, "send_pdus": "8", "reap_batch": -1},
    "steering": {"irq": [{"irq": 5, "cpus": ""}, {"cpus": "0"}],
                 "rps": [{"device": "eth0", "queue": 0, "cpus": ")" + highest_cpu_plus(3) + R"("}],
                 "xps": [{"device": "eth/0", "queue": 0, "cpus": "zero"}], "nic": []},
    "subsystems": [{"nqn": "kernel-style-name", "namespaces": [{"nsid": 1, "backend": "tape"}]}]
  })";
  auto r = data::parse_profile(text);
  EXPECT_NE(message_at(r.errors, "$.name").find("invalid profile name"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.threadin").find("did you mean \"threading\""), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.threading.cpumask").find("not online"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.threading.mod").find("unknown key"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.threading.threads").find("wrong type"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.budgets.recv_pdus").find("out of range"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.budgets.send_pdus").find("wrong type"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.budgets.reap_batch").find("negative"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.steering.irq[0].cpus").find("CPU"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.steering.irq[1]").find("neither"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.steering.rps[0].cpus").find("not online"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.steering.xps[0].device").find("invalid network device"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.steering.xps[0].cpus").find("malformed CPU list"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.steering.nic").find("unknown key"), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.subsystems[0].nqn").find("nqn."), std::string::npos);
  EXPECT_NE(message_at(r.errors, "$.subsystems[0].namespaces[0].backend").find("unknown backend"), std::string::npos);
  auto sorted = r.errors;  // reported in document order
  control::sort_by_path(sorted);
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i].path, r.errors[i].path);
}

TEST(ProfileParse, EmptyMaskIsAnError) {
  auto r = data::parse_profile(R"({"schema": "nvmetune.profile/1", "steering": {"rps": [{"device": "eth0", "queue": 0, "cpus": ","}]},
                                    "threading": {"cpumask": ""}})");
  EXPECT_FALSE(message_at(r.errors, "$.steering.rps[0].cpus").empty());
  EXPECT_FALSE(message_at(r.errors, "$.threading.cpumask").empty());
}

TEST(ProfileParse, SchemaVersions) {
  auto missing = data::parse_profile(R"({"threading": {"mode": "poll"}})");
  EXPECT_NE(message_at(missing.errors, "$.schema").find("missing required key"), std::string::npos);
  auto future = data::parse_profile(R"({"schema": "nvmetune.profile/2", "threading": {"mode": "poll"}})");
  EXPECT_NE(message_at(future.errors, "$.schema").find("unsupported schema version \"2\""), std::string::npos);
  auto foreign = data::parse_profile(R"({"schema": "something/else"})");
  EXPECT_NE(message_at(foreign.errors, "$.schema").find("not an nvmetune profile"), std::string::npos);
  auto wrong_type = data::parse_profile(R"({"schema": 1})");
  EXPECT_NE(message_at(wrong_type.errors, "$.schema").find("wrong type"), std::string::npos);
}

TEST(ProfileParse, TruncatedCorruptAndDuplicated) {
  const std::string text = full_profile;
  auto truncated = data::parse_profile(text.substr(0, text.size() / 2));
  ASSERT_EQ(truncated.errors.size(), 1u);
  EXPECT_EQ(truncated.errors[0].path, "$");
  EXPECT_NE(truncated.errors[0].message.find("JSON syntax error"), std::string::npos);

  auto corrupt = data::parse_profile(std::string("\x89PNG\r\n\x1a\n\0\0garbage", 16));
  ASSERT_EQ(corrupt.errors.size(), 1u);
  EXPECT_NE(corrupt.errors[0].message.find("JSON syntax error"), std::string::npos);

  auto array = data::parse_profile("[1, 2]");
  EXPECT_NE(message_at(array.errors, "$").find("expected a profile object"), std::string::npos);

  auto empty = data::parse_profile("");
  EXPECT_EQ(empty.errors.size(), 1u);

  auto dup = data::parse_profile(R"({"schema": "nvmetune.profile/1", "budgets": {"recv_pdus": 8, "recv_pdus": 9}})");
  EXPECT_NE(message_at(dup.errors, "$.budgets.recv_pdus").find("duplicate key"), std::string::npos);
}

TEST(ProfileJson, RoundTripIsExact) {
  auto first = data::parse_profile(full_profile);
  ASSERT_TRUE(first.errors.empty());
  const json doc = data::to_json(first.profile);
  EXPECT_EQ(doc["schema"], "nvmetune.profile/1");
  auto second = data::parse_profile(data::to_text(first.profile));  // the exported text
  ASSERT_TRUE(second.errors.empty()) << second.errors.front().path << ": " << second.errors.front().message;
  EXPECT_EQ(data::to_json(second.profile), doc);
  EXPECT_TRUE(data::diff_profiles(doc, data::to_json(second.profile)).empty());
  // The text starts with what the profile is.
  const std::string text = data::to_text(first.profile);
  EXPECT_LT(text.find("\"schema\""), text.find("\"budgets\""));
  EXPECT_LT(text.find("\"name\""), text.find("\"budgets\""));
}

TEST(ProfileDiff, FieldByFieldAndReadable) {
  auto a = data::parse_profile(full_profile).profile;
  auto b = a;
  b.name = "other";  // names are not compared
  b.threading->mode = "bound";
  b.budgets->recv_pdus = 32;
  control::NamespaceConfig ns;
  ns.nsid = 3;
  ns.backend.kind = "null";
  ns.backend.size_bytes = 1 << 20;
  b.subsystems->at(0).namespaces.push_back(ns);
  b.subsystems->at(0).hosts.clear();
  b.steering.reset();
  const auto entries = data::diff_profiles(data::to_json(a), data::to_json(b));
  const std::string text = data::format_diff(entries);
  EXPECT_NE(text.find("threading.mode: poll → bound\n"), std::string::npos) << text;
  EXPECT_NE(text.find("budgets.recv_pdus: 16 → 32\n"), std::string::npos) << text;
  EXPECT_NE(text.find("subsystems[nqn.2026-12.io.nvmetune:p].namespaces[nsid=3]: (absent) → {"), std::string::npos) << text;
  EXPECT_NE(text.find("subsystems[nqn.2026-12.io.nvmetune:p].hosts[nqn.2014-08.org.nvmexpress:uuid:0c6f6d8e-6f1c-4b3a-9d0e-2f1f4b2c7a11]: "
                      "nqn.2014-08.org.nvmexpress:uuid:0c6f6d8e-6f1c-4b3a-9d0e-2f1f4b2c7a11 → (absent)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("steering: {"), std::string::npos) << text;
  EXPECT_EQ(text.find("name:"), std::string::npos) << text;
  EXPECT_EQ(entries.size(), 5u) << text;

  // Order of subsystems and namespaces is no difference.
  auto c = a;
  std::reverse(c.subsystems->at(0).namespaces.begin(), c.subsystems->at(0).namespaces.end());
  EXPECT_TRUE(data::diff_profiles(data::to_json(a), data::to_json(c)).empty());
}

TEST(ProfileImport, Nvmetcli) {
  const json doc = json::parse(read_data("nvmetcli_config.json"));
  ASSERT_EQ(data::detect_source(doc), data::ProfileSource::nvmetcli);
  auto r = data::import_nvmetcli(doc);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().path << ": " << r.errors.front().message;
  const auto& p = r.profile;
  ASSERT_TRUE(p.listeners && p.subsystems && p.tcp);
  EXPECT_FALSE(p.threading || p.budgets || p.steering);
  ASSERT_EQ(p.listeners->size(), 1u);  // the RDMA port has no equivalent
  EXPECT_EQ(p.listeners->at(0).traddr, "127.0.0.1");
  EXPECT_EQ(p.listeners->at(0).trsvcid, "4420");
  EXPECT_EQ(p.tcp->in_capsule_data_size, 16384u);
  ASSERT_EQ(p.subsystems->size(), 2u);
  const auto& a = p.subsystems->at(0);
  EXPECT_EQ(a.nqn, "nqn.2026-01.io.example:kernel-a");
  EXPECT_FALSE(a.allow_any_host);
  EXPECT_EQ(a.serial, "a1b2c3d4e5f60718");
  EXPECT_EQ(a.model, "Linux");
  ASSERT_EQ(a.hosts.size(), 1u);
  EXPECT_EQ(a.hosts[0], "nqn.2014-08.org.nvmexpress:uuid:0c6f6d8e-6f1c-4b3a-9d0e-2f1f4b2c7a11");
  ASSERT_EQ(a.namespaces.size(), 2u);  // nsid 3 is disabled
  EXPECT_EQ(a.namespaces[0].nsid, 1u);
  EXPECT_EQ(a.namespaces[0].backend.kind, "file");
  EXPECT_EQ(a.namespaces[0].backend.path, "/dev/nvme0n1");
  EXPECT_TRUE(a.namespaces[0].backend.direct);
  EXPECT_EQ(a.namespaces[0].uuid, "d592cdf3-5d1c-44e0-8412-3fcf7d99df27");
  EXPECT_EQ(a.namespaces[1].uuid, "");  // all zeros: none
  EXPECT_TRUE(p.subsystems->at(1).allow_any_host);

  const auto& n = r.no_equivalent;
  EXPECT_TRUE(mentions(n, "ports[1] (rdma 10.0.0.1:4420): transport rdma has no equivalent")) << ::testing::PrintToString(n);
  EXPECT_TRUE(mentions(n, "ports[0] (tcp 127.0.0.1:4420): ana_groups have no equivalent"));
  EXPECT_TRUE(mentions(n, "hosts[1] nqn.2014-08.org.nvmexpress:uuid:5e1b7a44-93b2-4c3e-8f9f-1b2c3d4e5f60: dhchap_key"));
  EXPECT_TRUE(mentions(n, "subsystem nqn.2026-01.io.example:kernel-a: attr.version 1.3: no equivalent"));
  EXPECT_TRUE(mentions(n, "kernel-a nsid 2: device.nguid 5d1c44e0-8412-3fcf-7d99-df27d592cdf3"));
  EXPECT_TRUE(mentions(n, "kernel-a nsid 3: disabled"));
  EXPECT_FALSE(mentions(n, "cntlid"));   // the kernel's defaults are not worth a line
  EXPECT_FALSE(mentions(n, "pi_enable"));  // "0"
  EXPECT_FALSE(mentions(n, "not linked to every port"));  // both are on the one TCP port

  // It is a valid profile on this machine.
  auto checked = data::parse_profile(data::to_json(p).dump());
  EXPECT_TRUE(checked.errors.empty()) << checked.errors.front().path << ": " << checked.errors.front().message;
}

TEST(ProfileImport, NvmetcliKernelNamesAreReportedWithPaths) {
  auto r = data::import_nvmetcli(json::parse(R"({"hosts": [], "ports": [], "subsystems": [
      {"nqn": "testnqn", "attr": {"allow_any_host": "maybe"}, "namespaces": [{"nsid": "x", "device": {"path": "/dev/sda"}}]}]})"));
  EXPECT_FALSE(message_at(r.errors, "$.subsystems[0].attr.allow_any_host").empty());
  EXPECT_FALSE(message_at(r.errors, "$.subsystems[0].namespaces[0].nsid").empty());
  auto checked = data::parse_profile(data::to_json(data::import_nvmetcli(json::parse(
      R"({"subsystems": [{"nqn": "testnqn", "attr": {}, "namespaces": []}]})")).profile).dump());
  EXPECT_NE(message_at(checked.errors, "$.subsystems[0].nqn").find("must start with \"nqn.\""), std::string::npos);
}

TEST(ProfileImport, Spdk) {
  const json doc = json::parse(read_data("spdk_save_config.json"));
  ASSERT_EQ(data::detect_source(doc), data::ProfileSource::spdk);
  auto r = data::import_spdk(doc);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().path << ": " << r.errors.front().message;
  const auto& p = r.profile;
  ASSERT_TRUE(p.tcp && p.listeners && p.subsystems);
  EXPECT_EQ(p.tcp->queue_depth, 128u);
  EXPECT_EQ(p.tcp->max_io_queues, 127u);
  EXPECT_EQ(p.tcp->in_capsule_data_size, 4096u);
  EXPECT_EQ(p.tcp->mdts_bytes, 131072u);
  ASSERT_EQ(p.listeners->size(), 1u);
  EXPECT_EQ(p.listeners->at(0).traddr, "127.0.0.1");
  ASSERT_EQ(p.subsystems->size(), 2u);
  const auto& c1 = p.subsystems->at(0);
  EXPECT_EQ(c1.nqn, "nqn.2016-06.io.spdk:cnode1");
  EXPECT_EQ(c1.serial, "SPDK00000000000001");
  EXPECT_EQ(c1.model, "SPDK bdev Controller");
  EXPECT_FALSE(c1.allow_any_host);
  ASSERT_EQ(c1.hosts.size(), 1u);
  ASSERT_EQ(c1.namespaces.size(), 2u);  // Nvme0n1 has no equivalent
  EXPECT_EQ(c1.namespaces[0].backend.kind, "ram");
  EXPECT_EQ(c1.namespaces[0].backend.size_bytes, 131072u * 512u);
  EXPECT_EQ(c1.namespaces[0].uuid, "6b1f2c1e-3d4a-4e5f-8a9b-0c1d2e3f4a5b");
  EXPECT_EQ(c1.namespaces[1].nsid, 2u);
  EXPECT_EQ(c1.namespaces[1].backend.kind, "file");
  EXPECT_EQ(c1.namespaces[1].backend.path, "/var/tmp/spdk_aio.img");
  const auto& c2 = p.subsystems->at(1);
  EXPECT_TRUE(c2.allow_any_host);
  ASSERT_EQ(c2.namespaces.size(), 1u);
  EXPECT_EQ(c2.namespaces[0].nsid, 1u);  // added without nsid: the lowest free
  EXPECT_EQ(c2.namespaces[0].backend.kind, "null");
  EXPECT_EQ(c2.namespaces[0].block_size, 4096u);
  EXPECT_EQ(c2.namespaces[0].backend.size_bytes, 262144ull * 4096ull);

  const auto& n = r.no_equivalent;
  EXPECT_TRUE(mentions(n, "bdev bdev_nvme_attach_controller Nvme0: no equivalent")) << ::testing::PrintToString(n);
  EXPECT_TRUE(mentions(n, "namespace of bdev \"Nvme0n1\": not imported"));
  EXPECT_TRUE(mentions(n, "nvmf_create_transport TCP: ", "io_unit_size"));
  EXPECT_TRUE(mentions(n, "nvmf_create_subsystem nqn.2016-06.io.spdk:cnode1: ", "max_namespaces"));
  EXPECT_TRUE(mentions(n, "listener rdma 192.168.1.10:4420 of nqn.2016-06.io.spdk:cnode2: transport rdma"));
  EXPECT_TRUE(mentions(n, "nvmf nvmf_set_config (poll_groups_mask"));
  EXPECT_TRUE(mentions(n, "nvmf nvmf_set_max_subsystems: no equivalent"));
  EXPECT_TRUE(mentions(n, "SPDK subsystems iobuf, sock: SPDK library settings"));
  // bdev_raid_set_options is an options call (issue 15, defect 10): a library setting, not a bdev.
  EXPECT_TRUE(mentions(n, "bdev bdev_raid_set_options, bdev_set_options, bdev_wait_for_examine: SPDK bdev library settings"))
      << ::testing::PrintToString(n);
  EXPECT_FALSE(mentions(n, "bdev_raid_set_options", "no equivalent (nvmetune backends"));
  EXPECT_FALSE(mentions(n, "keyring"));  // empty config

  auto checked = data::parse_profile(data::to_json(p).dump());
  EXPECT_TRUE(checked.errors.empty()) << checked.errors.front().path << ": " << checked.errors.front().message;
}

// Applying an imported profile serves its namespaces to hosts: one on a device or a system file
// is imported (a target exporting /dev/nvme0n1 is what nvmetcli saves are for) but warned about,
// from either tool's configuration, by the path after "." and ".." are taken out.
TEST(ProfileImport, ServedDevicesAndSystemFilesAreWarned) {
  const auto kernel = data::import_nvmetcli(json::parse(read_data("nvmetcli_system_paths.json")));
  ASSERT_TRUE(kernel.errors.empty()) << kernel.errors.front().path << ": " << kernel.errors.front().message;
  const auto& w = kernel.warnings;
  const std::string sub = "subsystem nqn.2026-01.io.example:exports ";
  EXPECT_TRUE(mentions(w, sub + "nsid 1: /dev/sda is a device", "serves it raw")) << ::testing::PrintToString(w);
  EXPECT_TRUE(mentions(w, sub + "nsid 2: /dev/nvme0n1 is a device"));
  EXPECT_TRUE(mentions(w, sub + "nsid 3: /etc/shadow is a system file (under /etc)", "read and overwrite"));
  EXPECT_TRUE(mentions(w, sub + "nsid 4: /boot/vmlinuz-6.1.0-18-amd64 is a system file (under /boot)"));
  EXPECT_TRUE(mentions(w, sub + "nsid 5: /etc/passwd is a system file"));  // /srv/nvmet/../../etc/passwd
  EXPECT_TRUE(mentions(w, sub + "nsid 6: /proc/kcore is a system file (under /proc)"));
  EXPECT_EQ(w.size(), 6u);  // not /srv/nvmet/disk.img, /dev/shm/scratch.img, /var/lib/nvmet/disk2.img
  ASSERT_EQ(kernel.profile.subsystems->at(0).namespaces.size(), 9u);  // warned about, still imported

  const auto spdk = data::import_spdk(json::parse(read_data("spdk_system_paths.json")));
  ASSERT_TRUE(spdk.errors.empty()) << spdk.errors.front().path << ": " << spdk.errors.front().message;
  EXPECT_EQ(spdk.warnings, (std::vector<std::string>{
                               "subsystem nqn.2016-06.io.spdk:exports nsid 1: " + data::served_path_warning("/dev/nvme1n1"),
                               "subsystem nqn.2016-06.io.spdk:exports nsid 2: " +
                                   data::served_path_warning("/etc/ssh/ssh_host_ed25519_key")}));

  // import_document carries them to `profile import`'s report; the samples of the other tests warn
  // only about their devices.
  EXPECT_EQ(data::import_document(read_data("nvmetcli_system_paths.json")).warnings, w);
  const auto sample = data::import_nvmetcli(json::parse(read_data("nvmetcli_config.json")));
  EXPECT_EQ(sample.warnings.size(), 1u) << ::testing::PrintToString(sample.warnings);  // /dev/nvme0n1 (/dev/sdb is disabled)
  EXPECT_TRUE(data::import_spdk(json::parse(read_data("spdk_save_config.json"))).warnings.empty());

  EXPECT_EQ(data::served_path_warning("/etcetera/disk.img"), "");
  EXPECT_EQ(data::served_path_warning("relative/etc/passwd"), "");
  EXPECT_NE(data::served_path_warning("//etc//shadow"), "");
  EXPECT_NE(data::served_path_warning("/dev"), "");
}

TEST(ProfileImport, SpdkWrongShapesHavePaths) {
  auto r = data::import_spdk(json::parse(R"({"subsystems": [{"subsystem": "nvmf", "config": [
      {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "nqn.x:none", "namespace": {"bdev_name": [5]}}}, {"params": {}}]}]})"));
  EXPECT_FALSE(message_at(r.errors, "$.subsystems[0].config[0].params.namespace.bdev_name").empty());
  EXPECT_FALSE(message_at(r.errors, "$.subsystems[0].config[0].params.nqn").empty());
  EXPECT_FALSE(message_at(r.errors, "$.subsystems[0].config[1].method").empty());
}

// ---------------------------------------------------------------- apply on a live engine

class ProfileApply : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cfg = control::default_config();
    cfg.listeners[0].trsvcid = "0";
    cfg.subsystems[0].namespaces[0].backend.size_bytes = 1 << 20;
    cfg.threading.threads = 1;
    _engine = std::make_unique<engine::Engine>(cfg);
    auto errors = _engine->start();
    ASSERT_TRUE(errors.empty()) << errors.front().message;
  }
  void TearDown() override { _engine->stop(); }

  bool has_profile_event() const {
    for (const auto& e : _engine->events())
      if (e.kind == "profile") return true;
    return false;
  }

  std::unique_ptr<engine::Engine> _engine;
};

TEST_F(ProfileApply, LiveApplyTakesEffectAndIsAnEvent) {
  auto parsed = data::parse_profile(R"({"schema": "nvmetune.profile/1", "name": "poll1",
      "threading": {"mode": "poll", "threads": 1},
      "budgets": {"recv_pdus": 16},
      "tcp": {"queue_depth": 64},
      "steering": {"irq": [{"irq": 1, "cpus": "0"}]},
      "subsystems": [{"nqn": "nqn.2026-12.io.nvmetune:default", "allow_any_host": true,
                      "namespaces": [{"nsid": 1, "backend": "ram", "size": "1MiB"}, {"nsid": 2, "backend": "null", "size": "1MiB"}]},
                     {"nqn": "nqn.2026-12.io.nvmetune:second", "namespaces": [{"nsid": 1, "backend": "ram", "size": "1MiB"}]}]})");
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors.front().path << ": " << parsed.errors.front().message;
  // Steering goes to a fake /proc tree: this machine's interrupt lines are not the test's.
  test_support::FakeSysfs tree(2);
  tree.irq({1, "IO-APIC", "1-edge", "i8042", "0-1", "0"});
  _engine->set_steering_root(tree.root(), tree.root() + "/steering-state.json");
  auto report = data::apply_profile(parsed.profile, data::engine_caller(*_engine));
  ASSERT_TRUE(report.ok()) << report.errors.front().path << ": " << report.errors.front().message;
  EXPECT_EQ(tree.read("/proc/irq/1/smp_affinity_list"), "0");
  EXPECT_TRUE(mentions(report.applied, "steering: "));
  EXPECT_EQ(_engine->threading().mode, "poll");
  EXPECT_EQ(_engine->budgets().recv_pdus, 16u);
  const auto cfg = _engine->config();
  ASSERT_EQ(cfg.subsystems.size(), 2u);
  EXPECT_EQ(cfg.subsystems[0].namespaces.size(), 2u);
  EXPECT_TRUE(mentions(report.not_applied, "tcp: transport settings take effect when the engine starts"));
  // Each line is printed after "not applied: ": it must not say so again (issue 15, defect 10).
  for (const auto& line : report.not_applied) EXPECT_EQ(line.find("not applied"), std::string::npos) << line;
  EXPECT_TRUE(has_profile_event());
  _engine->stop();  // a clean stop reverts the steering
  EXPECT_EQ(tree.read("/proc/irq/1/smp_affinity_list"), "0-1\n");
}

TEST_F(ProfileApply, RefusedSteeringNamesTheProfilesPath) {
  test_support::FakeSysfs tree(2);
  _engine->set_steering_root(tree.root(), tree.root() + "/steering-state.json");
  auto parsed = data::parse_profile(R"({"schema": "nvmetune.profile/1", "budgets": {"recv_pdus": 4},
      "steering": {"rps": [{"device": "eth9", "queue": 0, "cpus": "0"}]}})");
  ASSERT_TRUE(parsed.errors.empty());
  auto report = data::apply_profile(parsed.profile, data::engine_caller(*_engine));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.errors[0].path, "$.steering.rps[0].device");
  EXPECT_EQ(_engine->budgets().recv_pdus, 4u);  // the steps before it stay applied
}

TEST_F(ProfileApply, RefusalIsReportedWithTheProfilesPath) {
  auto parsed = data::parse_profile(R"({"schema": "nvmetune.profile/1",
      "subsystems": [{"nqn": "nqn.2026-12.io.nvmetune:f", "namespaces": [{"nsid": 1, "backend": "file", "path": "/nonexistent/dir/x.img"}]}]})");
  ASSERT_TRUE(parsed.errors.empty());
  auto report = data::apply_profile(parsed.profile, data::engine_caller(*_engine));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.errors[0].path.rfind("$.subsystems[0]", 0), 0u) << report.errors[0].path;
  EXPECT_EQ(_engine->config().subsystems.size(), 1u);
  EXPECT_TRUE(has_profile_event());  // a refused apply is marked too
}

TEST(EventsAdd, KindsTheEngineOwnsAreRefused) {
  engine::Engine e(control::Config{});
  auto call = data::engine_caller(e);
  EXPECT_TRUE(call("events.add", {{"kind", "note"}, {"detail", {{"text", "hello"}}}}).ok);
  auto forged = call("events.add", {{"kind", "threading"}});
  EXPECT_FALSE(forged.ok);
  EXPECT_FALSE(message_at(forged.errors, "params.kind").empty());
  auto bad = call("events.add", {{"kind", "Bad Kind"}, {"detail", 3}});
  EXPECT_FALSE(message_at(bad.errors, "params.kind").empty());
  EXPECT_FALSE(message_at(bad.errors, "params.detail").empty());
  ASSERT_EQ(e.events().size(), 1u);
  EXPECT_EQ(e.events()[0].kind, "note");
}

}  // namespace
