// Profile logic below app/: capturing a running engine as a profile (through its control
// methods) and importing any tool's document (data/profile/profile_capture.hpp,
// profile_import.hpp's import_document).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "data/profile/profile.hpp"
#include "data/profile/profile_apply.hpp"
#include "data/profile/profile_capture.hpp"
#include "data/profile/profile_import.hpp"
#include "support/engine_config.hpp"

namespace {

using json = nlohmann::json;

TEST(ProfileCapture, TheEnginesStateRoundTripsAsAProfile) {
  engine::Engine engine(test_support::one_namespace_config("nqn.2026-12.io.nvmetune:cap", {"null", 1 << 20}));
  control::BudgetConfig b;
  b.recv_pdus = 5;
  ASSERT_TRUE(engine.set_budgets(b).empty());
  const auto cap = data::capture_profile("snap", "before the change", false, data::engine_caller(engine));
  ASSERT_EQ(cap.error, "");
  const auto parsed = data::parse_profile(cap.doc.dump());
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors.front().path << ": " << parsed.errors.front().message;
  EXPECT_EQ(parsed.profile.name, "snap");
  ASSERT_TRUE(parsed.profile.budgets);
  EXPECT_EQ(parsed.profile.budgets->recv_pdus, 5u);
  ASSERT_TRUE(parsed.profile.subsystems);
  EXPECT_EQ(parsed.profile.subsystems->at(0).nqn, "nqn.2026-12.io.nvmetune:cap");

  const auto tuning = data::capture_profile("t", "", true, data::engine_caller(engine));
  EXPECT_FALSE(tuning.doc.contains("subsystems"));
  EXPECT_FALSE(tuning.doc.contains("description"));
  EXPECT_TRUE(tuning.doc.contains("threading"));
}

TEST(ProfileCapture, AFailedMethodIsNamed) {
  const data::RpcCaller refusing = [](const std::string& method, const json&) {
    if (method == "budgets.get") return data::RpcResult{false, nullptr, "no engine", {}};
    return data::RpcResult{true, json::object(), "", {}};
  };
  EXPECT_EQ(data::capture_profile("x", "", true, refusing).error, "budgets.get: no engine");
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ImportDocument, DetectsConvertsOrRefuses) {
  const auto nvmetcli = data::import_document(read(std::string(NVMETUNE_TEST_DATA) + "/profile/nvmetcli_config.json"));
  EXPECT_EQ(nvmetcli.source, data::ProfileSource::nvmetcli);
  EXPECT_TRUE(nvmetcli.errors.empty());
  EXPECT_TRUE(nvmetcli.profile.contains("subsystems"));
  EXPECT_FALSE(nvmetcli.no_equivalent.empty());

  const auto own = data::import_document(R"({"schema": "nvmetune.profile/1"})");
  EXPECT_EQ(own.source, data::ProfileSource::profile);
  EXPECT_TRUE(own.profile.is_null()) << "a profile is judged on its own text";

  const auto unknown = data::import_document(R"({"what": 1})");
  ASSERT_EQ(unknown.errors.size(), 1u);
  EXPECT_EQ(unknown.errors[0].path, "$");
  EXPECT_NE(unknown.errors[0].message.find("not a profile"), std::string::npos);

  const auto broken = data::import_document("{\"a\": 1, \"a\": 2");
  ASSERT_EQ(broken.errors.size(), 1u);
  EXPECT_NE(broken.errors[0].message.find("JSON syntax error"), std::string::npos);
}

}  // namespace
