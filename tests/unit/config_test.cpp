// control::parse_config / validate / default_config / parse_size.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/control/config.hpp"

namespace {

using control::ConfigError;
using control::parse_config;
using json = nlohmann::json;

// The full example documented in README.md ("Configuration").
constexpr const char* full_example = R"({
  "listeners": [
    {"trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": "4420"},
    {"traddr": "0.0.0.0", "trsvcid": 4421}
  ],
  "subsystems": [
    {
      "nqn": "nqn.2026-12.io.nvmetune:a",
      "serial": "NVMETUNE0001",
      "model": "nvmetune ram+file",
      "allow_any_host": false,
      "hosts": ["nqn.2014-08.org.nvmexpress:uuid:0c6f6d8e-6f1c-4b3a-9d0e-2f1f4b2c7a11"],
      "namespaces": [
        {"nsid": 1, "backend": "ram", "size": "1GiB", "block_size": 512,
         "uuid": "6b1f2c1e-3d4a-4e5f-8a9b-0c1d2e3f4a5b"},
        {"nsid": 2, "backend": "file", "path": "/var/tmp/x.img", "size": "256MiB",
         "create": true, "direct": true},
        {"nsid": 3, "backend": "null", "size": "1TiB", "block_size": 4096}
      ]
    },
    {"nqn": "nqn.2026-12.io.nvmetune:b", "allow_any_host": true,
     "namespaces": [{"nsid": 7, "backend": "null", "size": 1048576}]}
  ],
  "tcp": {"in_capsule_data_size": 8192, "maxh2cdata": 131072, "queue_depth": 128,
          "max_io_queues": 64, "mdts_bytes": 1048576},
  "exec": {"mode": "event", "threads": 0}
})";

std::map<std::string, std::string> by_path(const std::vector<ConfigError>& errors) {
  std::map<std::string, std::string> m;
  for (const auto& e : errors) {
    EXPECT_FALSE(m.count(e.path)) << "two errors for " << e.path << ": " << m[e.path] << " / " << e.message;
    m[e.path] = e.message;
  }
  return m;
}

std::string dump(const std::vector<ConfigError>& errors) {
  std::string s;
  for (const auto& e : errors) s += e.path + ": " + e.message + "\n";
  return s;
}

// Serialises a Config back to the documented JSON shape (the test's own writer, so the round
// trip checks the parser against an independent description of the format).
json to_json(const control::Config& c) {
  json doc = {{"listeners", json::array()}, {"subsystems", json::array()}};
  for (const auto& l : c.listeners)
    doc["listeners"].push_back({{"trtype", l.trtype}, {"traddr", l.traddr}, {"trsvcid", l.trsvcid}});
  for (const auto& s : c.subsystems) {
    json sj = {{"nqn", s.nqn}, {"serial", s.serial}, {"model", s.model},
               {"allow_any_host", s.allow_any_host}, {"hosts", s.hosts}, {"namespaces", json::array()}};
    for (const auto& ns : s.namespaces) {
      json nj = {{"nsid", ns.nsid}, {"backend", ns.backend.kind}, {"block_size", ns.block_size}};
      if (ns.backend.size_bytes) nj["size"] = ns.backend.size_bytes;
      if (!ns.uuid.empty()) nj["uuid"] = ns.uuid;
      if (ns.backend.kind == "file")
        nj.update({{"path", ns.backend.path}, {"create", ns.backend.create}, {"direct", ns.backend.direct}});
      sj["namespaces"].push_back(nj);
    }
    doc["subsystems"].push_back(sj);
  }
  doc["tcp"] = {{"in_capsule_data_size", c.tcp.in_capsule_data_size}, {"maxh2cdata", c.tcp.maxh2cdata},
                {"queue_depth", c.tcp.queue_depth}, {"max_io_queues", c.tcp.max_io_queues},
                {"mdts_bytes", c.tcp.mdts_bytes}};
  doc["exec"] = {{"mode", c.exec.mode}, {"threads", c.exec.threads}};
  return doc;
}

TEST(Config, DefaultIsValidAndMatchesTheDocumentedDefault) {
  auto c = control::default_config();
  EXPECT_TRUE(control::validate(c).empty()) << dump(control::validate(c));
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].trtype, "tcp");
  EXPECT_EQ(c.listeners[0].traddr, "127.0.0.1");
  EXPECT_EQ(c.listeners[0].trsvcid, "4420");
  ASSERT_EQ(c.subsystems.size(), 1u);
  EXPECT_EQ(c.subsystems[0].nqn, control::default_nqn);
  EXPECT_TRUE(c.subsystems[0].allow_any_host);
  ASSERT_EQ(c.subsystems[0].namespaces.size(), 1u);
  const auto& ns = c.subsystems[0].namespaces[0];
  EXPECT_EQ(ns.nsid, 1u);
  EXPECT_EQ(ns.backend.kind, "ram");
  EXPECT_EQ(ns.backend.size_bytes, uint64_t{1} << 30);
  EXPECT_EQ(ns.block_size, 512u);
  EXPECT_EQ(c.exec.mode, "event");
}

TEST(Config, DefaultSurvivesRoundTrip) {
  auto r = parse_config(to_json(control::default_config()).dump());
  EXPECT_TRUE(r.errors.empty()) << dump(r.errors);
  EXPECT_EQ(to_json(r.config), to_json(control::default_config()));
}

TEST(Config, EmptyDocumentIsValidWithDefaults) {
  auto r = parse_config("{}");
  EXPECT_TRUE(r.errors.empty()) << dump(r.errors);
  EXPECT_TRUE(r.config.listeners.empty());
  EXPECT_EQ(r.config.tcp.queue_depth, 128u);
}

TEST(Config, FullExampleParsesEveryField) {
  auto r = parse_config(full_example);
  ASSERT_TRUE(r.errors.empty()) << dump(r.errors);
  const auto& c = r.config;
  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_EQ(c.listeners[1].trtype, "tcp");  // default
  EXPECT_EQ(c.listeners[1].traddr, "0.0.0.0");
  EXPECT_EQ(c.listeners[1].trsvcid, "4421");  // integer accepted, kept as text
  ASSERT_EQ(c.subsystems.size(), 2u);
  const auto& a = c.subsystems[0];
  EXPECT_EQ(a.nqn, "nqn.2026-12.io.nvmetune:a");
  EXPECT_EQ(a.serial, "NVMETUNE0001");
  EXPECT_EQ(a.model, "nvmetune ram+file");
  EXPECT_FALSE(a.allow_any_host);
  ASSERT_EQ(a.hosts.size(), 1u);
  ASSERT_EQ(a.namespaces.size(), 3u);
  EXPECT_EQ(a.namespaces[0].backend.size_bytes, uint64_t{1} << 30);
  EXPECT_EQ(a.namespaces[0].uuid, "6b1f2c1e-3d4a-4e5f-8a9b-0c1d2e3f4a5b");
  EXPECT_EQ(a.namespaces[1].backend.kind, "file");
  EXPECT_EQ(a.namespaces[1].backend.path, "/var/tmp/x.img");
  EXPECT_EQ(a.namespaces[1].backend.size_bytes, uint64_t{256} << 20);
  EXPECT_TRUE(a.namespaces[1].backend.create);
  EXPECT_TRUE(a.namespaces[1].backend.direct);
  EXPECT_EQ(a.namespaces[2].backend.size_bytes, uint64_t{1} << 40);
  EXPECT_EQ(a.namespaces[2].block_size, 4096u);
  EXPECT_EQ(c.subsystems[1].model, "nvmetune");  // default
  EXPECT_EQ(c.subsystems[1].namespaces[0].nsid, 7u);
  EXPECT_EQ(c.tcp.mdts_bytes, 1048576u);
  EXPECT_EQ(c.exec.threads, 0u);
}

TEST(Config, FullExampleRoundTrips) {
  auto first = parse_config(full_example);
  ASSERT_TRUE(first.errors.empty()) << dump(first.errors);
  auto text = to_json(first.config).dump(2);
  auto second = parse_config(text);
  ASSERT_TRUE(second.errors.empty()) << dump(second.errors) << text;
  EXPECT_EQ(to_json(second.config), to_json(first.config));
}

TEST(Config, ReportsEveryMistakeInOnePassWithExactPaths) {
  auto r = parse_config(R"({
    "listeners": [{"traddr": "127.0.0.256", "trsvcid": "70000"}, {"trtype": "rdma", "traddr": "10.0.0.1"}],
    "subsystems": [
      {"nqn": "nvme.bad", "namespaces": [
        {"nsid": 0, "backend": "ram"},
        {"nsid": 2, "backend": "ram", "size": "1000"},
        {"nsid": 2, "backend": "file"},
        {"nsid": 3, "backend": "null", "size": "1G", "blocksize": 4096}
      ]},
      {"nqn": "nqn.2014-08.org.nvmexpress.discovery"},
      {"nqn": "nqn.2026-12.io.nvmetune:x", "namespaces": [{"backend": "ram", "size": -1}]},
      {"nqn": "nqn.2026-12.io.nvmetune:x"}
    ],
    "tcp": {"in_capsule_data_size": 100, "queue_depth": 1, "maxh2cdata": 4097, "mdts_bytes": 3000},
    "exec": {"mode": "poll", "threads": 2000}
  })");
  auto m = by_path(r.errors);
  const std::map<std::string, std::string> expected = {
      {"$.listeners[0].traddr", "invalid IPv4 address"},
      {"$.listeners[0].trsvcid", "invalid port"},
      {"$.listeners[1].trtype", "unsupported transport \"rdma\""},
      {"$.subsystems[0].nqn", "must start with \"nqn.\""},
      {"$.subsystems[0].namespaces[0].nsid", "out of range: 0 (expected 1..1024)"},
      {"$.subsystems[0].namespaces[0].size", "required for backend \"ram\""},
      {"$.subsystems[0].namespaces[1].size", "multiple of block_size 512"},
      {"$.subsystems[0].namespaces[2].nsid", "duplicate nsid 2"},
      {"$.subsystems[0].namespaces[2].path", "required for backend \"file\""},
      {"$.subsystems[0].namespaces[3].blocksize", "did you mean \"block_size\"?"},
      {"$.subsystems[1].nqn", "discovery subsystem NQN is reserved"},
      {"$.subsystems[2].namespaces[0].nsid", "missing required key"},
      {"$.subsystems[2].namespaces[0].size", "-1 is negative"},
      {"$.subsystems[3].nqn", "duplicate subsystem NQN"},
      {"$.tcp.in_capsule_data_size", "multiple of 16"},
      {"$.tcp.queue_depth", "out of range: 1 (expected 2..1024)"},
      {"$.tcp.maxh2cdata", "multiple of 4"},
      {"$.tcp.mdts_bytes", "power of two"},
      {"$.exec.mode", "unknown execution mode \"poll\""},
      {"$.exec.threads", "out of range: 2000"},
  };
  for (const auto& [path, fragment] : expected) {
    ASSERT_TRUE(m.count(path)) << "no error for " << path << "\nall errors:\n" << dump(r.errors);
    EXPECT_NE(m[path].find(fragment), std::string::npos) << path << ": " << m[path];
  }
  EXPECT_EQ(m.size(), expected.size()) << dump(r.errors);
}

TEST(Config, SyntaxErrorGivesBytePosition) {
  auto r = parse_config(R"({"listeners": [})");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "$");
  EXPECT_NE(r.errors[0].message.find("JSON syntax error at byte 16 (line 1, column 16)"), std::string::npos)
      << r.errors[0].message;
}

TEST(Config, SyntaxErrorGivesLineAndColumn) {
  auto r = parse_config("{\n  \"tcp\": {\n    \"queue_depth\": 12x\n  }\n}");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("byte 35 (line 3, column 22)"), std::string::npos) << r.errors[0].message;
}

TEST(Config, EmptyTextIsASyntaxError) {
  auto r = parse_config("");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "$");
  EXPECT_NE(r.errors[0].message.find("JSON syntax error"), std::string::npos);
}

TEST(Config, UnknownKeysAreReportedAtEveryLevel) {
  auto r = parse_config(R"({"listener": [], "tcp": {"queue_depth": 64, "qdepth": 1},
                            "exec": {"mode": "event", "zzz": 1}, "odd key": 1})");
  auto m = by_path(r.errors);
  ASSERT_EQ(m.size(), 4u) << dump(r.errors);
  EXPECT_NE(m["$.listener"].find("did you mean \"listeners\"?"), std::string::npos);
  EXPECT_NE(m["$.tcp.qdepth"].find("unknown key \"qdepth\""), std::string::npos);
  EXPECT_NE(m["$.exec.zzz"].find("expected one of: mode, threads"), std::string::npos);
  EXPECT_TRUE(m.count("$[\"odd key\"]")) << dump(r.errors);
  EXPECT_EQ(r.config.tcp.queue_depth, 64u);  // valid siblings still read
}

TEST(Config, DuplicateKeysAreReported) {
  auto r = parse_config(R"({"subsystems": [{"nqn": "nqn.a:b", "namespaces": [
                             {"nsid": 1, "backend": "null", "size": 4096, "size": 8192}]}]})");
  auto m = by_path(r.errors);
  ASSERT_EQ(m.size(), 1u) << dump(r.errors);
  EXPECT_NE(m["$.subsystems[0].namespaces[0].size"].find("duplicate key \"size\""), std::string::npos);
}

TEST(Config, WrongTypesAreReportedWithWhatWasExpected) {
  auto r = parse_config(R"({"listeners": {}, "subsystems": [42, {"nqn": 5, "allow_any_host": "yes",
                            "hosts": ["nqn.h:1", 7], "namespaces": [{"nsid": 1.5, "backend": "ram",
                            "size": true}]}], "tcp": {"queue_depth": "128"}, "exec": []})");
  auto m = by_path(r.errors);
  const std::map<std::string, std::string> expected = {
      {"$.listeners", "expected an array, got object"},
      {"$.subsystems[0]", "expected an object, got number"},
      {"$.subsystems[1].nqn", "expected a string, got number 5"},
      {"$.subsystems[1].allow_any_host", "expected true or false"},
      {"$.subsystems[1].hosts[1]", "expected a string"},
      {"$.subsystems[1].namespaces[0].nsid", "expected an integer, got 1.5"},
      {"$.subsystems[1].namespaces[0].size", "expected a size"},
      {"$.tcp.queue_depth", "expected a non-negative integer, got string \"128\""},
      {"$.exec", "expected an object, got array"},
  };
  for (const auto& [path, fragment] : expected) {
    ASSERT_TRUE(m.count(path)) << "no error for " << path << "\n" << dump(r.errors);
    EXPECT_NE(m[path].find(fragment), std::string::npos) << path << ": " << m[path];
  }
  EXPECT_EQ(m.size(), expected.size()) << dump(r.errors);
}

TEST(Config, RootMustBeAnObject) {
  auto r = parse_config("[1, 2]");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "$");
  EXPECT_NE(r.errors[0].message.find("expected an object, got array"), std::string::npos);
}

// One rule at a time: start from the valid full example, change one value, expect exactly one
// error at `path` containing `fragment` (or none when path is empty).
struct Case {
  const char* pointer;
  json value;
  const char* path;
  const char* fragment;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.pointer << " = " << c.value.dump(); }

class ConfigRule : public testing::TestWithParam<Case> {};

TEST_P(ConfigRule, OneChangeOneMessage) {
  const Case& c = GetParam();
  json doc = json::parse(full_example);
  doc[json::json_pointer(c.pointer)] = c.value;
  auto r = parse_config(doc.dump());
  if (std::string(c.path).empty()) {
    EXPECT_TRUE(r.errors.empty()) << c.pointer << "=" << c.value.dump() << "\n" << dump(r.errors);
    return;
  }
  ASSERT_EQ(r.errors.size(), 1u) << c.pointer << "=" << c.value.dump() << "\n" << dump(r.errors);
  EXPECT_EQ(r.errors[0].path, c.path);
  EXPECT_NE(r.errors[0].message.find(c.fragment), std::string::npos) << r.errors[0].message;
}

INSTANTIATE_TEST_SUITE_P(Rules, ConfigRule, testing::Values(
    // accepted edge values
    Case{"/listeners/0/trsvcid", 0, "", ""},
    Case{"/listeners/0/trsvcid", "65535", "", ""},
    Case{"/listeners/0/trsvcid", 65535, "", ""},
    Case{"/subsystems/0/allow_any_host", false, "", ""},
    Case{"/subsystems/0/hosts", json::array(), "", ""},  // closed subsystem: allowed, no error
    Case{"/subsystems/0/namespaces/0/nsid", 1024, "", ""},
    Case{"/subsystems/0/namespaces/0/size", 512, "", ""},
    Case{"/tcp/in_capsule_data_size", 0, "", ""},
    Case{"/tcp/in_capsule_data_size", 131072, "", ""},
    Case{"/tcp/queue_depth", 2, "", ""},
    Case{"/tcp/queue_depth", 1024, "", ""},
    Case{"/tcp/maxh2cdata", 4096, "", ""},
    Case{"/tcp/mdts_bytes", 4096, "", ""},
    Case{"/tcp/mdts_bytes", 16777216, "", ""},
    Case{"/exec/threads", 1024, "", ""},
    // refused values
    Case{"/listeners/0/trsvcid", 65536, "$.listeners[0].trsvcid", "invalid port \"65536\""},
    Case{"/listeners/0/trsvcid", "44x", "$.listeners[0].trsvcid", "invalid port"},
    Case{"/listeners/0/trsvcid", "", "$.listeners[0].trsvcid", "invalid port"},
    Case{"/listeners/0/traddr", "localhost", "$.listeners[0].traddr", "invalid IPv4 address"},
    Case{"/subsystems/0/nqn", std::string("nqn.") + std::string(220, 'x'), "$.subsystems[0].nqn", "224 bytes"},
    Case{"/subsystems/0/hosts/0", "host1", "$.subsystems[0].hosts[0]", "must start with \"nqn.\""},
    Case{"/subsystems/0/serial", "012345678901234567890", "$.subsystems[0].serial", "at most 20"},
    Case{"/subsystems/0/namespaces/0/nsid", 1025, "$.subsystems[0].namespaces[0].nsid", "expected 1..1024"},
    Case{"/subsystems/0/namespaces/0/block_size", 1024, "$.subsystems[0].namespaces[0].block_size", "512 or 4096"},
    Case{"/subsystems/0/namespaces/0/size", 0, "$.subsystems[0].namespaces[0].size", "positive"},
    Case{"/subsystems/0/namespaces/0/size", "0", "$.subsystems[0].namespaces[0].size", "positive"},
    Case{"/subsystems/0/namespaces/0/size", "1GB", "$.subsystems[0].namespaces[0].size", "malformed size"},
    Case{"/subsystems/0/namespaces/0/uuid", "not-a-uuid", "$.subsystems[0].namespaces[0].uuid", "invalid UUID"},
    Case{"/subsystems/0/namespaces/0/backend", "nvme", "$.subsystems[0].namespaces[0].backend", "unknown backend"},
    Case{"/subsystems/0/namespaces/0/path", "/tmp/x", "$.subsystems[0].namespaces[0].path", "only backend \"file\""},
    Case{"/subsystems/0/namespaces/2/size", 6144, "$.subsystems[0].namespaces[2].size", "multiple of block_size 4096"},
    Case{"/subsystems/1/nqn", "nqn.2026-12.io.nvmetune:a", "$.subsystems[1].nqn", "duplicate subsystem NQN"},
    Case{"/tcp/in_capsule_data_size", 131088, "$.tcp.in_capsule_data_size", "expected 0..131072"},
    Case{"/tcp/in_capsule_data_size", 8200, "$.tcp.in_capsule_data_size", "multiple of 16"},
    Case{"/tcp/queue_depth", 1025, "$.tcp.queue_depth", "expected 2..1024"},
    Case{"/tcp/maxh2cdata", 2048, "$.tcp.maxh2cdata", "at least 4096"},
    Case{"/tcp/mdts_bytes", 2048, "$.tcp.mdts_bytes", "power of two"},
    Case{"/tcp/mdts_bytes", 33554432, "$.tcp.mdts_bytes", "power of two"},
    Case{"/tcp/mdts_bytes", 4294967296, "$.tcp.mdts_bytes", "does not fit in 32 bits"},
    Case{"/tcp/max_io_queues", 0, "$.tcp.max_io_queues", "expected 1..65535"},
    Case{"/exec/mode", "bound", "$.exec.mode", "supports: \"event\""}));

TEST(Config, FileBackendRules) {
  json doc = json::parse(full_example);
  auto& file_ns = doc["subsystems"][0]["namespaces"][1];
  file_ns.erase("size");
  auto r = parse_config(doc.dump());
  auto m = by_path(r.errors);
  ASSERT_EQ(m.size(), 1u) << dump(r.errors);
  EXPECT_NE(m["$.subsystems[0].namespaces[1].size"].find("required when \"create\" is true"), std::string::npos);

  file_ns["create"] = false;  // an existing file or device: its own size is used
  r = parse_config(doc.dump());
  EXPECT_TRUE(r.errors.empty()) << dump(r.errors);
}

TEST(Config, DuplicateListenerIsRefusedButPortZeroIsNot) {
  json doc = json::parse(full_example);
  doc["listeners"][1] = {{"traddr", "127.0.0.1"}, {"trsvcid", 4420}};
  auto r = parse_config(doc.dump());
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].path, "$.listeners[1]");
  EXPECT_NE(r.errors[0].message.find("duplicate listener 127.0.0.1:4420"), std::string::npos);

  doc["listeners"][0]["trsvcid"] = 0;
  doc["listeners"][1]["trsvcid"] = "0";
  EXPECT_TRUE(parse_config(doc.dump()).errors.empty());
}

TEST(Config, ValidateChecksConfigsBuiltInCode) {
  auto c = control::default_config();
  c.subsystems.push_back(c.subsystems[0]);
  c.subsystems[0].namespaces.push_back(c.subsystems[0].namespaces[0]);
  c.tcp.queue_depth = 0;
  auto m = by_path(control::validate(c));
  EXPECT_EQ(m.size(), 3u);
  EXPECT_TRUE(m.count("$.subsystems[1].nqn"));
  EXPECT_TRUE(m.count("$.subsystems[0].namespaces[1].nsid"));
  EXPECT_TRUE(m.count("$.tcp.queue_depth"));
}

TEST(ParseSize, AcceptsBytesAndBinarySuffixes) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"0", 0},
      {"4096", 4096},
      {"1K", 1024},
      {"1KiB", 1024},
      {"512M", 512ull << 20},
      {"512MiB", 512ull << 20},
      {"1G", 1ull << 30},
      {"1GiB", 1ull << 30},
      {"3T", 3ull << 40},
      {"1TiB", 1ull << 40},
      {"16777215TiB", 16777215ull << 40},
      {"18446744073709551615", 18446744073709551615ull},
  };
  for (const auto& [text, bytes] : cases) {
    uint64_t out = 12345;
    EXPECT_TRUE(control::parse_size(text, out)) << text;
    EXPECT_EQ(out, bytes) << text;
  }
}

TEST(ParseSize, RefusesMalformedSizes) {
  for (const char* text : {"", "K", "GiB", "-1", "+1", "1.5G", "1 G", " 1G", "1G ", "1g", "1gib", "1GB",
                           "1Gi", "1KB", "1P", "1PiB", "0x10", "16777216TiB", "18446744073709551616"}) {
    uint64_t out = 12345;
    EXPECT_FALSE(control::parse_size(text, out)) << text;
    EXPECT_EQ(out, 12345u) << "out must be untouched on failure: " << text;
  }
}

}  // namespace
