// `profile export --format spdk|nvmetcli` (data/profile/profile_export.hpp): what maps comes
// back equal through our own importers, and what does not map is listed, not dropped.
#include <gtest/gtest.h>

#include <algorithm>

#include "data/profile/profile.hpp"
#include "data/profile/profile_export.hpp"
#include "data/profile/profile_import.hpp"
#include "engine/config/config_json.hpp"

namespace {

using json = nlohmann::json;

const char* topology_profile = R"({
  "schema": "nvmetune.profile/1",
  "name": "rt",
  "threading": {"mode": "poll", "threads": 1},
  "budgets": {"recv_pdus": 16},
  "tcp": {"queue_depth": 64, "max_io_queues": 8, "in_capsule_data_size": 4096, "mdts_bytes": 262144, "so_priority": 3,
          "maxh2cdata": 65536},
  "listeners": [{"traddr": "127.0.0.1", "trsvcid": 4420}, {"traddr": "127.0.0.2", "trsvcid": 4421}],
  "subsystems": [
    {"nqn": "nqn.2026-12.io.nvmetune:a", "serial": "SN-A-0001", "model": "round trip",
     "hosts": ["nqn.2014-08.org.nvmexpress:uuid:0c6f6d8e-6f1c-4b3a-9d0e-2f1f4b2c7a11"],
     "namespaces": [{"nsid": 1, "backend": "ram", "size": "16MiB", "uuid": "6b1f2c1e-3d4a-4e5f-8a9b-0c1d2e3f4a5b"},
                    {"nsid": 2, "backend": "null", "size": "1GiB", "block_size": 4096},
                    {"nsid": 5, "backend": "file", "path": "/var/tmp/rt.img", "uuid": "0f3e2d1c-4b5a-4697-8a8b-9c0d1e2f3a4b"}]},
    {"nqn": "nqn.2026-12.io.nvmetune:b", "allow_any_host": true,
     "namespaces": [{"nsid": 1, "backend": "file", "path": "/dev/loop7"}]}]
})";

data::Profile parsed(const std::string& text) {
  auto r = data::parse_profile(text);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front().path << ": " << r.errors.front().message;
  return r.profile;
}

bool mentions(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(), [&](const auto& l) { return l.find(needle) != std::string::npos; });
}

json topology_of(const data::Profile& p) {
  json j = {{"listeners", json::array()}, {"subsystems", json::array()}};
  for (const auto& l : p.listeners.value_or(std::vector<control::ListenerConfig>{})) j["listeners"].push_back(control::to_json(l));
  for (const auto& s : p.subsystems.value_or(std::vector<control::SubsystemConfig>{})) j["subsystems"].push_back(control::to_json(s));
  return j;
}

// Reads the exported text as `profile import` does: the format is recognized, nothing is an
// error, and the result is a valid profile.
data::Profile reimported(const json& doc, data::ProfileSource source, std::vector<std::string>& no_equivalent) {
  const auto imported = data::import_document(doc.dump(2));
  EXPECT_EQ(imported.source, source);
  EXPECT_TRUE(imported.errors.empty()) << imported.errors.front().path << ": " << imported.errors.front().message;
  no_equivalent = imported.no_equivalent;
  return parsed(imported.profile.dump());
}

TEST(ProfileExport, FormatNames) {
  EXPECT_EQ(data::export_format("profile"), data::ExportFormat::profile);
  EXPECT_EQ(data::export_format("spdk"), data::ExportFormat::spdk);
  EXPECT_EQ(data::export_format("nvmetcli"), data::ExportFormat::nvmetcli);
  EXPECT_FALSE(data::export_format("SPDK").has_value());
}

TEST(ProfileExport, SpdkRoundTripKeepsWhatMaps) {
  const auto p = parsed(topology_profile);
  const auto out = data::export_spdk(p);
  // load_config's shape: bdevs before the nvmf calls that name them.
  ASSERT_EQ(out.doc["subsystems"].size(), 2u);
  EXPECT_EQ(out.doc["subsystems"][0]["subsystem"], "bdev");
  EXPECT_EQ(out.doc["subsystems"][1]["config"][0]["method"], "nvmf_create_transport");

  std::vector<std::string> notes;
  const auto back = reimported(out.doc, data::ProfileSource::spdk, notes);
  EXPECT_TRUE(notes.empty()) << ::testing::PrintToString(notes);  // everything written is read
  EXPECT_EQ(topology_of(back), topology_of(p));
  ASSERT_TRUE(back.tcp);
  EXPECT_EQ(back.tcp->queue_depth, 64u);
  EXPECT_EQ(back.tcp->max_io_queues, 8u);
  EXPECT_EQ(back.tcp->in_capsule_data_size, 4096u);
  EXPECT_EQ(back.tcp->mdts_bytes, 262144u);
  EXPECT_EQ(back.tcp->so_priority, 3);
  EXPECT_FALSE(back.threading || back.budgets);

  const auto& n = out.not_mapped;
  EXPECT_TRUE(mentions(n, "threading: no equivalent in SPDK")) << ::testing::PrintToString(n);
  EXPECT_TRUE(mentions(n, "budgets: no equivalent in SPDK"));
  EXPECT_TRUE(mentions(n, "tcp.maxh2cdata 65536: no equivalent in SPDK"));
  EXPECT_FALSE(mentions(n, "queue_depth"));  // mapped
  EXPECT_EQ(n.size(), 3u) << ::testing::PrintToString(n);
}

TEST(ProfileExport, NvmetcliRoundTripKeepsWhatMaps) {
  auto p = parsed(topology_profile);
  const auto out = data::export_nvmetcli(p);
  ASSERT_EQ(out.doc["ports"].size(), 2u);
  EXPECT_EQ(out.doc["ports"][1]["subsystems"].size(), 2u);  // every subsystem on every port
  EXPECT_EQ(out.doc["hosts"].size(), 1u);                    // allowed_hosts link to hosts/

  std::vector<std::string> notes;
  const auto back = reimported(out.doc, data::ProfileSource::nvmetcli, notes);
  EXPECT_TRUE(notes.empty()) << ::testing::PrintToString(notes);
  // The kernel serves files and block devices: the ram and null namespaces are listed instead.
  auto& a = p.subsystems->at(0).namespaces;
  a.erase(a.begin(), a.begin() + 2);
  EXPECT_EQ(topology_of(back), topology_of(p));
  ASSERT_TRUE(back.tcp);
  EXPECT_EQ(back.tcp->in_capsule_data_size, 4096u);

  const auto& n = out.not_mapped;
  EXPECT_TRUE(mentions(n, "subsystem nqn.2026-12.io.nvmetune:a nsid 1: backend ram: no equivalent")) << ::testing::PrintToString(n);
  EXPECT_TRUE(mentions(n, "subsystem nqn.2026-12.io.nvmetune:a nsid 2: backend null: no equivalent"));
  EXPECT_TRUE(mentions(n, "tcp.queue_depth 64: no equivalent"));
  EXPECT_TRUE(mentions(n, "tcp.so_priority 3: no equivalent"));
  EXPECT_TRUE(mentions(n, "threading: no equivalent"));
  EXPECT_FALSE(mentions(n, "in_capsule_data_size"));  // a port's inline_data_size
}

TEST(ProfileExport, WhatCannotBeOpenedElsewhereIsListed) {
  const auto p = parsed(R"({"schema": "nvmetune.profile/1",
      "listeners": [{"traddr": "127.0.0.1", "trsvcid": 0}],
      "subsystems": [{"nqn": "nqn.2026-12.io.nvmetune:c",
                      "namespaces": [{"nsid": 1, "backend": "file", "path": "/var/tmp/c.img", "size": "1MiB", "create": true,
                                      "direct": false}]}]})");
  for (const auto& out : {data::export_spdk(p), data::export_nvmetcli(p)}) {
    const auto& n = out.not_mapped;
    EXPECT_TRUE(mentions(n, "listener 127.0.0.1:0: no equivalent")) << ::testing::PrintToString(n);
    EXPECT_TRUE(mentions(n, "nsid 1: buffered I/O"));
    EXPECT_TRUE(mentions(n, "nsid 1: create"));
    EXPECT_TRUE(mentions(n, "nsid 1: size 1048576"));
  }
  EXPECT_TRUE(data::export_nvmetcli(p).doc["ports"].empty());
}

}  // namespace
