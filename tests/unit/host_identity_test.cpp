// The host NQN `nvmetune perf` connects as (engine/initiator/host_identity.hpp): the hostnqn
// file first, else derived from the machine ID as nvme-cli (libnvme with systemd) derives it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/initiator/host_identity.hpp"

namespace {

using initiator::default_host_identity;
using initiator::hostnqn_from_machine_id;

// The reference: `systemd-id128 machine-id --app-specific=c7f4618112be49328c83106f9dddd86b -u`
// (libnvme's NVME_HOSTNQN_ID) on a machine whose /etc/machine-id is the input.
TEST(HostIdentity, MachineIdDerivationMatchesSystemd) {
  EXPECT_EQ(hostnqn_from_machine_id("3d1219c7c4c5404aaa1f6d2a48adfda4\n"),
            "nqn.2014-08.org.nvmexpress:uuid:d425fb17-c499-48fb-a273-5c5b0eb739c4");
  // Another machine, another NQN; the same machine, the same one.
  const auto other = hostnqn_from_machine_id("00112233445566778899aabbccddeeff");
  ASSERT_TRUE(other);
  EXPECT_NE(*other, "nqn.2014-08.org.nvmexpress:uuid:d425fb17-c499-48fb-a273-5c5b0eb739c4");
  EXPECT_EQ(other, hostnqn_from_machine_id("00112233445566778899AABBCCDDEEFF"));
  EXPECT_EQ(other->at(std::string("nqn.2014-08.org.nvmexpress:uuid:").size() + 14), '4');  // a version 4 UUID
  for (const char* bad : {"", "3d1219c7", "3d1219c7c4c5404aaa1f6d2a48adfdzz", "3d1219c7-c4c5-404a-aa1f-6d2a48adfda4"})
    EXPECT_FALSE(hostnqn_from_machine_id(bad)) << bad;
}

class HostIdentityFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nvmetune-hostid-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    _dir = tmpl;
    _paths = {_dir + "/hostnqn", _dir + "/hostid", _dir + "/machine-id"};
  }
  void TearDown() override { std::filesystem::remove_all(_dir); }
  void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

  std::string _dir;
  initiator::HostIdentityPaths _paths;
};

TEST_F(HostIdentityFiles, HostnqnFileFirstThenMachineIdThenZero) {
  write(_paths.machine_id, "3d1219c7c4c5404aaa1f6d2a48adfda4\n");
  write(_paths.hostnqn, "  nqn.2014-08.org.nvmexpress:uuid:5e1b7a44-93b2-4c3e-8f9f-1b2c3d4e5f60\n");
  auto id = default_host_identity(_paths);
  EXPECT_EQ(id.hostnqn, "nqn.2014-08.org.nvmexpress:uuid:5e1b7a44-93b2-4c3e-8f9f-1b2c3d4e5f60");
  EXPECT_EQ(id.source, _paths.hostnqn);
  EXPECT_EQ(id.hostid[0], 0x5e);  // no hostid file: the NQN's UUID
  EXPECT_EQ(id.hostid[15], 0x60);

  write(_paths.hostid, "0c6f6d8e-6f1c-4b3a-9d0e-2f1f4b2c7a11\n");
  EXPECT_EQ(default_host_identity(_paths).hostid[0], 0x0c);

  write(_paths.hostnqn, "\n");  // an empty file is no host NQN
  id = default_host_identity(_paths);
  EXPECT_EQ(id.hostnqn, "nqn.2014-08.org.nvmexpress:uuid:d425fb17-c499-48fb-a273-5c5b0eb739c4");
  EXPECT_EQ(id.source, _paths.machine_id);

  std::filesystem::remove(_paths.machine_id);
  id = default_host_identity(_paths);
  EXPECT_EQ(id.hostnqn, "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000000");
  EXPECT_NE(id.source.find("none"), std::string::npos) << id.source;
}

}  // namespace
