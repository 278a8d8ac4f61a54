// control::parse_config / validate / default_config / parse_size / parse_cpu_list, and the
// fragment parsers and encoders of config_json.hpp the control socket shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config/config.hpp"
#include "engine/system/topology.hpp"
#include "engine/config/config_json.hpp"
#include "support/source_dir.hpp"

namespace {

using control::ConfigError;
using control::parse_config;
using json = nlohmann::json;

// The full example documented in docs/reference/config-file.md.
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
          "max_io_queues": 64, "mdts_bytes": 1048576, "so_priority": 3, "busy_poll_us": 25,
          "prefer_busy_poll": true, "socket_buffer_bytes": "1MiB"},
  "threading": {"mode": "unbound", "cpumask": "0", "threads": 2, "queue_cpu": "round_robin",
                "affinity_scope": "smt", "strict": true, "first_core": -1, "idle_poll_us": 500,
                "idle_poll_period_us": 40, "idle_poll_adaptive": false, "priority": "nice", "inline_budget": 16, "io_mechanism": "io_uring"},
  "budgets": {"recv_pdus": 16, "send_pdus": 4, "ops_per_pass": 128, "bytes_per_pass": "1MiB",
              "deadline_us": 200, "reap_batch": 64}
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
json independent_json(const control::Config& c) {
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
                {"mdts_bytes", c.tcp.mdts_bytes}, {"so_priority", c.tcp.so_priority},
                {"busy_poll_us", c.tcp.busy_poll_us}, {"prefer_busy_poll", c.tcp.prefer_busy_poll},
                {"socket_buffer_bytes", c.tcp.socket_buffer_bytes}};
  const auto& t = c.threading;
  doc["threading"] = {{"mode", t.mode}, {"threads", t.threads}, {"queue_cpu", t.queue_cpu},
                      {"affinity_scope", t.affinity_scope}, {"strict", t.strict}, {"first_core", t.first_core},
                      {"idle_poll_us", t.idle_poll_us}, {"idle_poll_period_us", t.idle_poll_period_us},
                      {"idle_poll_adaptive", t.idle_poll_adaptive},
                      {"priority", t.priority},
                      {"inline_budget", t.inline_budget}, {"io_mechanism", t.io_mechanism}};
  if (!t.cpus.empty()) {
    std::string list;
    for (unsigned cpu : t.cpus) list += (list.empty() ? "" : ",") + std::to_string(cpu);
    doc["threading"]["cpumask"] = list;
  }
  const auto& b = c.budgets;
  doc["budgets"] = {{"recv_pdus", b.recv_pdus}, {"send_pdus", b.send_pdus}, {"ops_per_pass", b.ops_per_pass},
                    {"bytes_per_pass", b.bytes_per_pass}, {"deadline_us", b.deadline_us},
                    {"reap_batch", b.reap_batch}};
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
  // nvmet-tcp's defaults.
  EXPECT_EQ(c.threading.mode, "bound");
  EXPECT_TRUE(c.threading.cpus.empty());
  EXPECT_EQ(c.threading.threads, 0u);
  EXPECT_EQ(c.budgets.recv_pdus, 32u);
  EXPECT_EQ(c.budgets.send_pdus, 64u);
  EXPECT_EQ(c.budgets.ops_per_pass, 64u);
}

TEST(Config, DefaultSurvivesRoundTrip) {
  auto r = parse_config(independent_json(control::default_config()).dump());
  EXPECT_TRUE(r.errors.empty()) << dump(r.errors);
  EXPECT_EQ(independent_json(r.config), independent_json(control::default_config()));
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
  EXPECT_EQ(c.tcp.so_priority, 3);
  EXPECT_EQ(c.tcp.busy_poll_us, 25u);
  EXPECT_TRUE(c.tcp.prefer_busy_poll);
  EXPECT_EQ(c.tcp.socket_buffer_bytes, 1u << 20);
  const auto& t = c.threading;
  EXPECT_EQ(t.mode, "unbound");
  EXPECT_EQ(t.cpus, std::vector<unsigned>{0});
  EXPECT_EQ(t.threads, 2u);
  EXPECT_EQ(t.queue_cpu, "round_robin");
  EXPECT_EQ(t.affinity_scope, "smt");
  EXPECT_TRUE(t.strict);
  EXPECT_EQ(t.first_core, -1);
  EXPECT_EQ(t.idle_poll_us, 500u);
  EXPECT_EQ(t.idle_poll_period_us, 40u);
  EXPECT_FALSE(t.idle_poll_adaptive);
  EXPECT_EQ(t.priority, "nice");
  EXPECT_EQ(t.inline_budget, 16u);
  EXPECT_EQ(t.io_mechanism, "io_uring");
  const auto& b = c.budgets;
  EXPECT_EQ(b.recv_pdus, 16u);
  EXPECT_EQ(b.send_pdus, 4u);
  EXPECT_EQ(b.ops_per_pass, 128u);
  EXPECT_EQ(b.bytes_per_pass, 1u << 20);
  EXPECT_EQ(b.deadline_us, 200u);
  EXPECT_EQ(b.reap_batch, 64u);
}

TEST(Config, FullExampleRoundTrips) {
  auto first = parse_config(full_example);
  ASSERT_TRUE(first.errors.empty()) << dump(first.errors);
  auto text = independent_json(first.config).dump(2);
  auto second = parse_config(text);
  ASSERT_TRUE(second.errors.empty()) << dump(second.errors) << text;
  EXPECT_EQ(independent_json(second.config), independent_json(first.config));
}

// The example in docs/reference/config-file.md is a valid configuration (keeps the documentation
// honest).
TEST(Config, DocumentedExampleIsValid) {
  const auto root = test_support::source_dir();
  if (root.empty()) GTEST_SKIP() << "NVMETUNE_SOURCE_DIR is not set (CTest sets it)";
  const auto page = root / "docs" / "reference" / "config-file.md";
  std::ifstream in(page);
  ASSERT_TRUE(in) << "cannot read " << page;
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  // The page's first example (the whole document); later ones may show other documents.
  const auto section = doc.find("# The configuration file (JSON)");
  ASSERT_NE(section, std::string::npos) << page << " has no \"The configuration file (JSON)\" title";
  const auto start = doc.find("```json\n", section);
  ASSERT_NE(start, std::string::npos) << page << " has no ```json block";
  const auto end = doc.find("```", start + 8);
  auto r = parse_config(doc.substr(start + 8, end - start - 8));
  EXPECT_TRUE(r.errors.empty()) << dump(r.errors);
  ASSERT_EQ(r.config.subsystems.size(), 1u);
  EXPECT_EQ(r.config.subsystems[0].namespaces.size(), 3u);
  auto again = parse_config(independent_json(r.config).dump());
  EXPECT_TRUE(again.errors.empty()) << dump(again.errors);
  EXPECT_EQ(independent_json(again.config), independent_json(r.config));
}

TEST(Config, ReportsEveryMistakeInOnePassWithExactPaths) {
  auto r = parse_config(R"({
    "listeners": [{"traddr": "127.0.0.256", "trsvcid": "70000"}, {"trtype": "fc", "traddr": "10.0.0.1"}],
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
    "tcp": {"in_capsule_data_size": 100, "queue_depth": 1, "maxh2cdata": 4097, "mdts_bytes": 3000,
            "so_priority": 16, "busy_poll_us": 1000001, "prefer_busy_poll": "yes", "socket_buffer_bytes": "65MiB"},
    "threading": {"mode": "warp", "threads": 2000, "cpumask": "1-0", "queue_cpu": "any",
                  "first_core": -2, "idle_poll_us": 10000001, "idle_poll_period_us": 10000001, "idle_poll_adaptive": 1, "priority": "rt", "inline_budget": 0,
                  "io_mechanism": "aio", "strict": 1, "affinity_scope": "rack"},
    "budgets": {"recv_pdus": 0, "send_pdus": 1025, "ops_per_pass": 65537, "bytes_per_pass": "2GiB",
                "deadline_us": 1000001, "reap_batch": 0}
  })");
  auto m = by_path(r.errors);
  const std::map<std::string, std::string> expected = {
      {"$.listeners[0].traddr", "invalid IPv4 address"},
      {"$.listeners[0].trsvcid", "invalid port"},
      {"$.listeners[1].trtype", "unsupported transport \"fc\""},
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
      {"$.tcp.so_priority", "out of range: 16 (expected -1..15)"},
      {"$.tcp.busy_poll_us", "out of range: 1000001 (expected 0..1000000)"},
      {"$.tcp.prefer_busy_poll", "expected true or false"},
      {"$.tcp.socket_buffer_bytes", "out of range: 68157440 (expected 0..67108864)"},
      {"$.threading.mode", "unknown execution mode \"warp\" (expected one of: \"bound\", \"unbound\", \"poll\", \"inline\")"},
      {"$.threading.threads", "out of range: 2000 (expected 0..1024)"},
      {"$.threading.cpumask", "malformed CPU list \"1-0\""},
      {"$.threading.queue_cpu", "unknown queue_cpu \"any\" (expected one of: \"incoming\", \"round_robin\")"},
      {"$.threading.affinity_scope", "unknown affinity_scope \"rack\""},
      {"$.threading.strict", "expected true or false"},
      {"$.threading.first_core", "out of range: -2 (expected -1.."},
      {"$.threading.idle_poll_us", "out of range: 10000001 (expected 0..10000000)"},
      {"$.threading.idle_poll_period_us", "out of range: 10000001 (expected 0..10000000)"},
      {"$.threading.idle_poll_adaptive", "expected true or false"},
      {"$.threading.priority", "unknown priority \"rt\" (expected one of: \"normal\", \"nice\", \"fifo\")"},
      {"$.threading.inline_budget", "out of range: 0 (expected 1..1024)"},
      {"$.threading.io_mechanism", "unknown io_mechanism \"aio\" (expected one of: \"epoll\", \"io_uring\")"},
      {"$.budgets.recv_pdus", "out of range: 0 (expected 1..1024)"},
      {"$.budgets.send_pdus", "out of range: 1025 (expected 1..1024)"},
      {"$.budgets.ops_per_pass", "out of range: 65537 (expected 1..65536)"},
      {"$.budgets.bytes_per_pass", "out of range: 2147483648 (expected 0..1073741824"},
      {"$.budgets.deadline_us", "out of range: 1000001 (expected 0..1000000)"},
      {"$.budgets.reap_batch", "out of range: 0 (expected 1..1024)"},
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
                            "threading": {"mode": "bound", "zzz": 1}, "budgets": {"recv_pdu": 4},
                            "exec": {}, "odd key": 1})");
  auto m = by_path(r.errors);
  ASSERT_EQ(m.size(), 6u) << dump(r.errors);
  EXPECT_NE(m["$.listener"].find("did you mean \"listeners\"?"), std::string::npos);
  EXPECT_NE(m["$.tcp.qdepth"].find("unknown key \"qdepth\""), std::string::npos);
  EXPECT_NE(m["$.threading.zzz"].find("expected one of: mode, cpumask, threads, queue_cpu"), std::string::npos);
  EXPECT_NE(m["$.budgets.recv_pdu"].find("did you mean \"recv_pdus\"?"), std::string::npos);
  EXPECT_NE(m["$.exec"].find("unknown key \"exec\""), std::string::npos) << m["$.exec"];  // the old name
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
                            "size": true}]}], "tcp": {"queue_depth": "128"}, "threading": [],
                            "budgets": {"recv_pdus": "8", "bytes_per_pass": true}})");
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
      {"$.threading", "expected an object, got array"},
      {"$.budgets.recv_pdus", "expected a non-negative integer, got string \"8\""},
      {"$.budgets.bytes_per_pass", "expected a size"},
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
    Case{"/tcp/mdts_bytes", 8192, "", ""},
    Case{"/tcp/mdts_bytes", 16777216, "", ""},
    Case{"/threading/threads", 0, "", ""},
    Case{"/threading/threads", 1024, "", ""},
    Case{"/threading/mode", "bound", "", ""},
    Case{"/threading/mode", "poll", "", ""},
    Case{"/threading/mode", "inline", "", ""},
    Case{"/threading/cpumask", "all", "", ""},
    Case{"/threading/cpumask", "0,0,0-0", "", ""},
    Case{"/threading/queue_cpu", "incoming", "", ""},
    Case{"/threading/affinity_scope", "cpu", "", ""},
    Case{"/threading/affinity_scope", "cache", "", ""},
    Case{"/threading/affinity_scope", "numa", "", ""},
    Case{"/threading/affinity_scope", "system", "", ""},
    Case{"/threading/first_core", 0, "", ""},
    Case{"/threading/idle_poll_us", 0, "", ""},
    Case{"/threading/idle_poll_us", 10000000, "", ""},
    Case{"/threading/idle_poll_period_us", 0, "", ""},
    Case{"/threading/idle_poll_period_us", 10000000, "", ""},
    Case{"/threading/idle_poll_adaptive", false, "", ""},
    Case{"/threading/priority", "normal", "", ""},
    Case{"/threading/priority", "fifo", "", ""},
    Case{"/threading/inline_budget", 1, "", ""},
    Case{"/threading/inline_budget", 1024, "", ""},
    Case{"/threading/io_mechanism", "epoll", "", ""},
    Case{"/budgets/recv_pdus", 1, "", ""},
    Case{"/budgets/send_pdus", 1024, "", ""},
    Case{"/budgets/ops_per_pass", 65536, "", ""},
    Case{"/budgets/bytes_per_pass", 0, "", ""},
    Case{"/budgets/bytes_per_pass", "0", "", ""},
    Case{"/budgets/bytes_per_pass", "1GiB", "", ""},
    Case{"/budgets/bytes_per_pass", 1073741824, "", ""},
    Case{"/budgets/deadline_us", 0, "", ""},
    Case{"/budgets/deadline_us", 1000000, "", ""},
    Case{"/budgets/reap_batch", 1024, "", ""},
    // refused values
    Case{"/listeners/0/trsvcid", 65536, "$.listeners[0].trsvcid", "invalid port \"65536\""},
    Case{"/listeners/0/trsvcid", "44x", "$.listeners[0].trsvcid", "invalid port"},
    Case{"/listeners/0/trsvcid", "", "$.listeners[0].trsvcid", "invalid port"},
    Case{"/listeners/0/traddr", "localhost", "$.listeners[0].traddr", "invalid IPv4 address"},
    Case{"/subsystems/0/nqn", std::string("nqn.") + std::string(220, 'x'), "$.subsystems[0].nqn", "224 bytes"},
    Case{"/subsystems/0/hosts/0", "host1", "$.subsystems[0].hosts[0]", "must start with \"nqn.\""},
    // A host with such an NQN could not connect (fabrics.cpp refuses it): the same rule here.
    Case{"/subsystems/0/hosts/0", "nqn.h\x1b[31m", "$.subsystems[0].hosts[0]", "holds control characters"},
    Case{"/subsystems/0/nqn", "nqn.a\nb", "$.subsystems[0].nqn", "holds control characters"},
    Case{"/subsystems/0/serial", "012345678901234567890", "$.subsystems[0].serial", "at most 20"},
    Case{"/subsystems/0/namespaces/0/nsid", 1025, "$.subsystems[0].namespaces[0].nsid", "expected 1..1024"},
    Case{"/subsystems/0/namespaces/0/block_size", 1024, "$.subsystems[0].namespaces[0].block_size", "512 or 4096"},
    Case{"/subsystems/0/namespaces/0/size", 0, "$.subsystems[0].namespaces[0].size", "positive"},
    Case{"/subsystems/0/namespaces/0/size", "0", "$.subsystems[0].namespaces[0].size", "positive"},
    Case{"/subsystems/0/namespaces/0/size", "1GB", "$.subsystems[0].namespaces[0].size", "malformed size"},
    Case{"/subsystems/0/namespaces/0/uuid", "not-a-uuid", "$.subsystems[0].namespaces[0].uuid", "invalid UUID"},
    Case{"/subsystems/0/namespaces/0/backend", "nvme", "$.subsystems[0].namespaces[0].backend", "unknown backend"},
    Case{"/subsystems/0/namespaces/0/path", "/tmp/x", "$.subsystems[0].namespaces[0].path", "only backend \"file\""},
    Case{"/subsystems/0/namespaces/2/populate", true, "$.subsystems[0].namespaces[2].populate", "only backend \"ram\""},
    Case{"/subsystems/0/namespaces/0/populate", 1, "$.subsystems[0].namespaces[0].populate", "expected true or false"},
    Case{"/subsystems/0/namespaces/2/size", 6144, "$.subsystems[0].namespaces[2].size", "multiple of block_size 4096"},
    Case{"/subsystems/1/nqn", "nqn.2026-12.io.nvmetune:a", "$.subsystems[1].nqn", "duplicate subsystem NQN"},
    Case{"/tcp/in_capsule_data_size", 131088, "$.tcp.in_capsule_data_size", "expected 0..131072"},
    Case{"/tcp/in_capsule_data_size", 8200, "$.tcp.in_capsule_data_size", "multiple of 16"},
    Case{"/tcp/queue_depth", 1025, "$.tcp.queue_depth", "expected 2..1024"},
    Case{"/tcp/maxh2cdata", 2048, "$.tcp.maxh2cdata", "at least 4096"},
    Case{"/tcp/mdts_bytes", 2048, "$.tcp.mdts_bytes", "power of two"},
    Case{"/tcp/mdts_bytes", 4096, "$.tcp.mdts_bytes", "power of two"},  // MDTS 0 = unlimited
    Case{"/tcp/mdts_bytes", 33554432, "$.tcp.mdts_bytes", "power of two"},
    Case{"/tcp/mdts_bytes", 4294967296, "$.tcp.mdts_bytes", "does not fit in 32 bits"},
    Case{"/tcp/max_io_queues", 0, "$.tcp.max_io_queues", "expected 1..65535"},
    Case{"/threading/mode", "event", "$.threading.mode", "unknown execution mode \"event\""},
    Case{"/threading/mode", 1, "$.threading.mode", "expected a string"},
    Case{"/threading/cpumask", "", "$.threading.cpumask", "empty CPU mask"},
    Case{"/threading/cpumask", "0-", "$.threading.cpumask", "malformed CPU list \"0-\""},
    Case{"/threading/cpumask", "0,", "$.threading.cpumask", "malformed CPU list"},
    Case{"/threading/cpumask", "a", "$.threading.cpumask", "malformed CPU list"},
    Case{"/threading/cpumask", "0 1", "$.threading.cpumask", "malformed CPU list"},
    Case{"/threading/cpumask", "9000", "$.threading.cpumask", "malformed CPU list"},
    Case{"/threading/cpumask", 3, "$.threading.cpumask", "expected a string"},
    Case{"/threading/threads", 1025, "$.threading.threads", "out of range: 1025 (expected 0..1024)"},
    Case{"/threading/threads", -1, "$.threading.threads", "-1 is negative"},
    Case{"/threading/first_core", 1.5, "$.threading.first_core", "expected an integer, got 1.5"},
    Case{"/threading/first_core", "0", "$.threading.first_core", "expected an integer"},
    Case{"/threading/first_core", 4294967296, "$.threading.first_core", "does not fit in an int"},
    Case{"/threading/first_core", -4294967296, "$.threading.first_core", "does not fit in an int"},
    Case{"/threading/idle_poll_us", 10000001, "$.threading.idle_poll_us", "expected 0..10000000"},
    Case{"/threading/idle_poll_period_us", 10000001, "$.threading.idle_poll_period_us", "expected 0..10000000"},
    Case{"/threading/idle_poll_period_us", -1, "$.threading.idle_poll_period_us", "-1 is negative"},
    Case{"/threading/idle_poll_adaptive", "on", "$.threading.idle_poll_adaptive", "expected true or false"},
    Case{"/threading/inline_budget", 1025, "$.threading.inline_budget", "expected 1..1024"},
    Case{"/threading/io_mechanism", "iouring", "$.threading.io_mechanism", "unknown io_mechanism \"iouring\""},
    Case{"/threading/strict", "yes", "$.threading.strict", "expected true or false"},
    Case{"/budgets/recv_pdus", 1025, "$.budgets.recv_pdus", "expected 1..1024"},
    Case{"/budgets/send_pdus", 0, "$.budgets.send_pdus", "expected 1..1024"},
    Case{"/budgets/ops_per_pass", 0, "$.budgets.ops_per_pass", "expected 1..65536"},
    Case{"/budgets/bytes_per_pass", "1025MiB", "$.budgets.bytes_per_pass", "out of range: 1074790400"},
    Case{"/budgets/bytes_per_pass", "1GB", "$.budgets.bytes_per_pass", "malformed size"},
    Case{"/budgets/bytes_per_pass", -1, "$.budgets.bytes_per_pass", "-1 is negative"},
    Case{"/budgets/deadline_us", 1000001, "$.budgets.deadline_us", "expected 0..1000000"},
    Case{"/budgets/reap_batch", 1025, "$.budgets.reap_batch", "expected 1..1024"},
    Case{"/budgets/reap_batch", 4294967296, "$.budgets.reap_batch", "does not fit in 32 bits"}));

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

// ---------------------------------------------------------------- CPU lists

TEST(CpuList, ParsesRangesAndSingles) {
  const std::pair<const char*, std::vector<unsigned>> cases[] = {
      {"", {}},
      {"0", {0}},
      {"0-3,6", {0, 1, 2, 3, 6}},
      {"6,0-3", {0, 1, 2, 3, 6}},       // sorted
      {"1,1,0-1", {0, 1}},              // deduplicated
      {"5-5", {5}},
      {"8191", {8191}},
  };
  for (const auto& [text, cpus] : cases) {
    const auto got = sys::parse_cpu_list(text);
    EXPECT_EQ(got.error, "") << text;
    EXPECT_EQ(got.cpus, cpus) << text;
  }
}

TEST(CpuList, RefusesMalformedLists) {
  for (const char* text : {",", "0,", ",0", "0-", "-1", "3-1", "0--1", "0 1", " 0", "0 ", "a", "0x1", "1.5",
                           "8192", "0-8192", "+1", "0,,1", "0-1-2"}) {
    const auto got = sys::parse_cpu_list(text);
    EXPECT_NE(got.error, "") << text;
    EXPECT_TRUE(got.cpus.empty()) << "no CPUs from a malformed list: " << text;
  }
}

TEST(CpuList, FormatsCompactRanges) {
  EXPECT_EQ(sys::format_cpu_list({}), "");
  EXPECT_EQ(sys::format_cpu_list({0}), "0");
  EXPECT_EQ(sys::format_cpu_list({0, 1, 2, 3, 6}), "0-3,6");
  EXPECT_EQ(sys::format_cpu_list({6, 3, 2, 1, 0, 3}), "0-3,6");
  EXPECT_EQ(sys::format_cpu_list({1, 3, 5, 6}), "1,3,5-6");
  for (const char* text : {"0-3,6", "0", "1,3,5-6", "0-63"}) {
    const auto got = sys::parse_cpu_list(text);
    ASSERT_EQ(got.error, "") << text;
    EXPECT_EQ(sys::format_cpu_list(got.cpus), text);
  }
}

TEST(CpuList, OnlineCpusMatchSysfs) {
  const auto online = sys::online_cpus();
  ASSERT_FALSE(online.empty());
  EXPECT_TRUE(std::is_sorted(online.begin(), online.end()));
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  if (!in || !std::getline(in, text)) GTEST_SKIP() << "no /sys/devices/system/cpu/online";
  EXPECT_EQ(sys::format_cpu_list(online), text);
}

// A CPU just above the highest online one: offline (or absent) on any machine.
unsigned first_offline_cpu() { return sys::online_cpus().back() + 1; }

std::string online_text() { return sys::format_cpu_list(sys::online_cpus()); }

TEST(Threading, CpumaskMustBeOnline) {
  const unsigned cpu = first_offline_cpu();
  json doc = json::parse(full_example);
  doc["threading"]["cpumask"] = "0," + std::to_string(cpu);
  auto r = parse_config(doc.dump());
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].path, "$.threading.cpumask");
  EXPECT_EQ(r.errors[0].message, "CPU " + std::to_string(cpu) + " is not online (online: " + online_text() + ")");

  doc["threading"]["cpumask"] = std::to_string(cpu) + "-" + std::to_string(cpu + 3);
  r = parse_config(doc.dump());
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].message, "CPUs " + std::to_string(cpu) + "-" + std::to_string(cpu + 3) +
                                     " are not online (online: " + online_text() + ")");
}

TEST(Threading, FirstCoreAndItsThreadsMustBeOnline) {
  const auto online = sys::online_cpus();
  const int max_online = static_cast<int>(online.back());
  json doc = json::parse(full_example);
  doc["threading"]["mode"] = "poll";
  doc["threading"]["cpumask"] = "all";

  doc["threading"]["first_core"] = max_online + 1;
  auto r = parse_config(doc.dump());
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].path, "$.threading.first_core");
  EXPECT_NE(r.errors[0].message.find("out of range: " + std::to_string(max_online + 1) + " (expected -1.." +
                                     std::to_string(max_online)),
            std::string::npos)
      << r.errors[0].message;

  // The last CPU with 2 threads runs past the online CPUs.
  doc["threading"]["first_core"] = max_online;
  doc["threading"]["threads"] = 2;
  r = parse_config(doc.dump());
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].path, "$.threading.first_core");
  EXPECT_NE(r.errors[0].message.find("CPU " + std::to_string(max_online + 1) + " is not online (online: " +
                                     online_text() + ")"),
            std::string::npos)
      << r.errors[0].message;

  doc["threading"]["threads"] = 1;
  EXPECT_TRUE(parse_config(doc.dump()).errors.empty());
  doc["threading"]["first_core"] = -1;
  doc["threading"]["threads"] = 1024;  // free over the mask: any count
  EXPECT_TRUE(parse_config(doc.dump()).errors.empty());
}

// ---------------------------------------------------------------- config_json.hpp

TEST(ParseThreading, PartialObjectMergesOntoTheCurrentValue) {
  control::ThreadingConfig t;
  t.mode = "unbound";
  t.threads = 3;
  auto errors = control::parse_threading(json{{"mode", "poll"}, {"idle_poll_us", 50}}, "params", t);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(t.mode, "poll");
  EXPECT_EQ(t.idle_poll_us, 50u);
  EXPECT_EQ(t.threads, 3u);  // untouched

  errors = control::parse_threading(json{{"cpumask", "0"}}, "params", t);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(t.cpus, std::vector<unsigned>{0});
  errors = control::parse_threading(json{{"cpumask", "all"}}, "params", t);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_TRUE(t.cpus.empty());
}

TEST(ParseThreading, ReportsEveryBadFieldUnderThePathAndChangesNothing) {
  control::ThreadingConfig t;
  t.threads = 2;
  const json before = control::to_json(t);
  auto errors = control::parse_threading(
      json{{"mode", "warp"}, {"threads", 5000}, {"cpumask", ""}, {"priority", 3}, {"speed", 1}}, "params", t);
  auto m = by_path(errors);
  EXPECT_EQ(m.size(), 5u) << dump(errors);
  EXPECT_NE(m["params.mode"].find("unknown execution mode \"warp\""), std::string::npos);
  EXPECT_NE(m["params.threads"].find("out of range: 5000 (expected 0..1024)"), std::string::npos);
  EXPECT_NE(m["params.cpumask"].find("empty CPU mask"), std::string::npos);
  EXPECT_NE(m["params.priority"].find("expected a string"), std::string::npos);
  EXPECT_NE(m["params.speed"].find("unknown key"), std::string::npos);
  EXPECT_EQ(control::to_json(t), before);  // a refused change changes nothing

  errors = control::parse_threading(json::array(), "params", t);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "params");
  EXPECT_NE(errors[0].message.find("expected an object"), std::string::npos);
}

TEST(ParseThreading, ValidatesTheMergedWhole) {
  // first_core alone is fine; with the current thread count it pins past the online CPUs.
  control::ThreadingConfig t;
  t.mode = "poll";
  t.threads = static_cast<unsigned>(sys::online_cpus().size()) + 1;
  auto errors = control::parse_threading(json{{"first_core", 0}}, "params", t);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].path, "params.first_core");
  EXPECT_EQ(t.first_core, -1);
}

TEST(ParseBudgets, PartialMergeSizesAndErrors) {
  control::BudgetConfig b;
  auto errors = control::parse_budgets(json{{"recv_pdus", 16}, {"bytes_per_pass", "256K"}}, "params", b);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(b.recv_pdus, 16u);
  EXPECT_EQ(b.bytes_per_pass, 256u * 1024);
  EXPECT_EQ(b.send_pdus, 64u);

  const json before = control::to_json(b);
  errors = control::parse_budgets(json{{"recv_pdus", 0}, {"reap_batch", "x"}, {"send_pdus", 4}}, "params", b);
  auto m = by_path(errors);
  EXPECT_EQ(m.size(), 2u) << dump(errors);
  EXPECT_TRUE(m.count("params.recv_pdus"));
  EXPECT_TRUE(m.count("params.reap_batch"));
  EXPECT_EQ(control::to_json(b), before);  // send_pdus was valid, but the request failed as a whole
}

TEST(ParseSubsystem, WholeObjectWithPaths) {
  control::SubsystemConfig s;
  auto errors = control::parse_subsystem(
      json::parse(R"({"nqn": "nqn.2026-12.io.nvmetune:x", "allow_any_host": true,
                      "namespaces": [{"nsid": 1, "backend": "ram", "size": "1MiB"}]})"),
      "params", s);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(s.nqn, "nqn.2026-12.io.nvmetune:x");
  ASSERT_EQ(s.namespaces.size(), 1u);
  EXPECT_EQ(s.namespaces[0].backend.size_bytes, 1u << 20);

  control::SubsystemConfig bad;
  errors = control::parse_subsystem(
      json::parse(R"({"nqn": "x", "namespaces": [{"nsid": 1, "backend": "ram", "size": "1MiB"},
                                                 {"nsid": 1, "backend": "tape"}]})"),
      "params", bad);
  auto m = by_path(errors);
  EXPECT_EQ(m.size(), 3u) << dump(errors);
  EXPECT_TRUE(m.count("params.nqn"));
  EXPECT_TRUE(m.count("params.namespaces[1].nsid"));
  EXPECT_TRUE(m.count("params.namespaces[1].backend"));
  EXPECT_TRUE(bad.nqn.empty());
}

TEST(ParseNamespace, RequiredKeysAndRules) {
  control::NamespaceConfig ns;
  auto errors = control::parse_namespace(json{{"backend", "null"}, {"size", 1000}}, "params", ns);
  auto m = by_path(errors);
  EXPECT_EQ(m.size(), 2u) << dump(errors);
  EXPECT_NE(m["params.nsid"].find("missing required key"), std::string::npos);
  EXPECT_NE(m["params.size"].find("multiple of block_size 512"), std::string::npos);
  errors = control::parse_namespace(json{{"nsid", 3}, {"backend", "null"}, {"size", "1GiB"}}, "params", ns);
  EXPECT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(ns.nsid, 3u);
}

TEST(ToJson, EncodesEveryFieldAndRoundTrips) {
  auto first = parse_config(full_example);
  ASSERT_TRUE(first.errors.empty()) << dump(first.errors);
  const json doc = control::to_json(first.config);
  EXPECT_EQ(doc["threading"]["cpumask"], "0");
  EXPECT_EQ(doc["threading"]["io_mechanism"], "io_uring");
  EXPECT_EQ(doc["budgets"]["bytes_per_pass"], 1 << 20);
  EXPECT_EQ(doc["subsystems"][0]["namespaces"][1]["path"], "/var/tmp/x.img");
  auto second = parse_config(doc.dump());
  ASSERT_TRUE(second.errors.empty()) << dump(second.errors) << doc.dump(2);
  EXPECT_EQ(control::to_json(second.config), doc);
  // The two writers agree on what the document means.
  EXPECT_EQ(independent_json(second.config), independent_json(first.config));

  auto def = parse_config(control::to_json(control::default_config()).dump());
  ASSERT_TRUE(def.errors.empty()) << dump(def.errors);
  EXPECT_EQ(control::to_json(def.config), control::to_json(control::default_config()));
  EXPECT_EQ(control::to_json(def.config)["threading"]["cpumask"], "all");
}

TEST(ToJson, FragmentsRoundTripThroughTheirParsers) {
  control::ThreadingConfig t;
  t.mode = "poll";
  t.cpus = {0};
  t.first_core = 0;
  t.threads = 1;
  t.priority = "fifo";
  control::ThreadingConfig back;
  ASSERT_TRUE(control::parse_threading(control::to_json(t), "$", back).empty());
  EXPECT_EQ(control::to_json(back), control::to_json(t));

  control::BudgetConfig b;
  b.deadline_us = 7;
  b.bytes_per_pass = 4096;
  control::BudgetConfig bb;
  ASSERT_TRUE(control::parse_budgets(control::to_json(b), "$", bb).empty());
  EXPECT_EQ(control::to_json(bb), control::to_json(b));
}

TEST(Validate, ThreadingAndBudgetsBuiltInCode) {
  auto c = control::default_config();
  c.threading.mode = "event";
  c.threading.cpus = {first_offline_cpu()};
  c.budgets.ops_per_pass = 0;
  auto m = by_path(control::validate(c));
  EXPECT_EQ(m.size(), 3u);
  EXPECT_TRUE(m.count("$.threading.mode"));
  EXPECT_TRUE(m.count("$.threading.cpumask"));
  EXPECT_TRUE(m.count("$.budgets.ops_per_pass"));
  EXPECT_EQ(control::validate_threading(c.threading).size(), 2u);
  EXPECT_EQ(control::validate_budgets(c.budgets, "b").at(0).path, "b.ops_per_pass");
}

// BackendSpec::delay_us: null and ram only, 0..1 s, encoded and read back.
TEST(Config, BackendDelayRules) {
  auto ns = [](const std::string& body) {
    return std::string(R"({"subsystems":[{"nqn":"nqn.2026-12.io.nvmetune:d","namespaces":[)") + body + "]}]}";
  };
  auto ok = control::parse_config(ns(R"({"nsid":1,"backend":"ram","size":"1MiB","delay_us":2000})"));
  ASSERT_TRUE(ok.errors.empty()) << ok.errors.front().path << ": " << ok.errors.front().message;
  EXPECT_EQ(ok.config.subsystems[0].namespaces[0].backend.delay_us, 2000u);
  EXPECT_EQ(control::to_json(ok.config.subsystems[0].namespaces[0])["delay_us"], 2000);
  auto back = control::parse_config(control::to_json(ok.config).dump());
  ASSERT_TRUE(back.errors.empty());
  EXPECT_EQ(back.config.subsystems[0].namespaces[0].backend.delay_us, 2000u);
  EXPECT_FALSE(control::to_json(control::default_config().subsystems[0].namespaces[0]).contains("delay_us"));

  auto file = control::parse_config(ns(R"({"nsid":1,"backend":"file","path":"/tmp/x","delay_us":5})"));
  ASSERT_EQ(file.errors.size(), 1u);
  EXPECT_EQ(file.errors[0].path, "$.subsystems[0].namespaces[0].delay_us");
  auto big = control::parse_config(ns(R"({"nsid":1,"backend":"null","size":"1MiB","delay_us":1000001})"));
  ASSERT_EQ(big.errors.size(), 1u);
  EXPECT_EQ(big.errors[0].path, "$.subsystems[0].namespaces[0].delay_us");
  control::NamespaceConfig one;
  EXPECT_EQ(control::parse_namespace(nlohmann::json::parse(R"({"nsid":2,"backend":"null","size":4096,"delay_us":-1})"),
                                     "params", one).at(0).path, "params.delay_us");
}

}  // namespace
