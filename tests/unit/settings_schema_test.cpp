// The tuning settings' schema (engine/config/settings_schema.hpp) agrees with the
// configuration's validation: every default validates, every documented range and choice is
// the one enforced, the keys are the ones the parser allows, and settings.schema serves it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config/config_json.hpp"
#include "engine/control/engine.hpp"
#include "engine/rpc/rpc_methods.hpp"
#include "engine/config/settings_schema.hpp"
#include "support/engine_config.hpp"

namespace {

using control::ConfigError;
using control::Setting;
using control::SettingType;
using json = nlohmann::json;

// Parses {key: value} as the setting's section by the configuration rules (params path "$.x").
std::vector<ConfigError> parse_one(const Setting& s, const json& value) {
  const json v = {{std::string(s.key), value}};
  const std::string path = "$." + std::string(s.section);
  if (s.section == "threading") {
    control::ThreadingConfig t;
    return control::parse_threading(v, path, t);
  }
  if (s.section == "budgets") {
    control::BudgetConfig b;
    return control::parse_budgets(v, path, b);
  }
  if (s.section == "rdma") {
    control::RdmaConfig r;
    return control::parse_rdma(v, path, r);
  }
  control::TcpConfig t;
  return control::parse_tcp(v, path, t);
}

std::string describe(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) out += e.path + ": " + e.message + "\n";
  return out;
}

TEST(SettingsSchema, CoversEveryTuningKeyOnce) {
  const auto& all = control::settings_schema();
  ASSERT_EQ(all.size(), 13u + 6u + 13u + 4u);  // threading, budgets, tcp, rdma keys of README's table
  for (const Setting& s : all) {
    EXPECT_EQ(std::count_if(all.begin(), all.end(), [&](const Setting& o) { return o.path() == s.path(); }), 1)
        << s.path();
    EXPECT_EQ(control::find_setting(s.path()), &s);
    EXPECT_FALSE(s.help.empty()) << s.path();
    EXPECT_FALSE(s.label.empty()) << s.path();
    EXPECT_FALSE(s.modes.empty()) << s.path();
  }
  EXPECT_EQ(control::find_setting("threading.nope"), nullptr);
}

TEST(SettingsSchema, EveryDefaultValidatesAndIsTheModelsDefault) {
  const json model = {{"threading", control::to_json(control::ThreadingConfig{})},
                      {"budgets", control::to_json(control::BudgetConfig{})},
                      {"tcp", control::to_json(control::TcpConfig{})},
                      {"rdma", control::to_json(control::RdmaConfig{})}};
  for (const Setting& s : control::settings_schema()) {
    EXPECT_TRUE(parse_one(s, s.default_value).empty()) << s.path() << "\n" << describe(parse_one(s, s.default_value));
    EXPECT_EQ(s.default_value, model[std::string(s.section)][std::string(s.key)]) << s.path();
  }
}

// One past each end of a plain range is refused at the setting's path, naming the schema's range.
TEST(SettingsSchema, OutOfRangeIsRefusedWithTheSchemasRange) {
  int checked = 0;
  for (const Setting& s : control::settings_schema()) {
    if (!s.min || !s.max || s.power_of_two || s.multiple_of > 1) continue;
    const std::string expected = "expected " + std::to_string(*s.min) + ".." + std::to_string(*s.max);
    auto above = parse_one(s, *s.max + 1);
    ASSERT_EQ(above.size(), 1u) << s.path() << "\n" << describe(above);
    EXPECT_EQ(above[0].path, "$." + s.path());
    EXPECT_NE(above[0].message.find(expected), std::string::npos) << above[0].message;
    EXPECT_TRUE(parse_one(s, *s.max).empty()) << s.path();
    if (*s.min > 0) {
      auto below = parse_one(s, *s.min - 1);
      ASSERT_EQ(below.size(), 1u) << s.path();
      EXPECT_NE(below[0].message.find(expected), std::string::npos) << below[0].message;
      EXPECT_TRUE(parse_one(s, *s.min).empty()) << s.path();
    }
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(SettingsSchema, AlignmentAndPowerOfTwoRulesAreEnforced) {
  for (const Setting& s : control::settings_schema()) {
    if (s.multiple_of > 1) {
      const int64_t aligned = *s.min == 0 ? static_cast<int64_t>(s.multiple_of) : *s.min;
      EXPECT_TRUE(parse_one(s, aligned).empty()) << s.path();
      auto off = parse_one(s, aligned + 1);
      ASSERT_EQ(off.size(), 1u) << s.path();
      EXPECT_NE(off[0].message.find("multiple of " + std::to_string(s.multiple_of)), std::string::npos)
          << off[0].message;
    }
    if (s.power_of_two) {
      EXPECT_TRUE(parse_one(s, *s.min).empty()) << s.path();
      EXPECT_TRUE(parse_one(s, *s.max).empty()) << s.path();
      for (int64_t bad : {*s.min + 1, *s.min / 2, *s.max * 2}) {
        auto errors = parse_one(s, bad);
        ASSERT_EQ(errors.size(), 1u) << s.path() << " " << bad;
        EXPECT_NE(errors[0].message.find("power of two from " + std::to_string(*s.min) + " to " +
                                         std::to_string(*s.max)),
                  std::string::npos)
            << errors[0].message;
      }
    }
  }
}

TEST(SettingsSchema, EnumsAcceptTheirValuesAndListThemWhenRefusing) {
  int checked = 0;
  for (const Setting& s : control::settings_schema()) {
    if (s.type != SettingType::choice) continue;
    ASSERT_FALSE(s.choices.empty()) << s.path();
    for (auto v : s.choices) {
      // io_uring may be refused by the engine on old kernels, never by validation.
      EXPECT_TRUE(parse_one(s, std::string(v)).empty()) << s.path() << "=" << v;
    }
    auto errors = parse_one(s, "no_such_value");
    ASSERT_EQ(errors.size(), 1u) << s.path();
    EXPECT_EQ(errors[0].path, "$." + s.path());
    for (auto v : s.choices) EXPECT_NE(errors[0].message.find("\"" + std::string(v) + "\""), std::string::npos);
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

// The parser's allowed keys are the schema's: an unknown key lists exactly them, in order.
TEST(SettingsSchema, UnknownKeyListsTheSchemasKeys) {
  for (std::string section : {"threading", "budgets", "tcp", "rdma"}) {
    std::string list;
    for (auto k : control::setting_keys(section)) list += (list.empty() ? "" : ", ") + std::string(k);
    Setting probe{.section = section == "threading" ? "threading" : section == "budgets" ? "budgets"
                             : section == "tcp"     ? "tcp"
                                                    : "rdma",
                  .key = "zzzzzzzzzzzz", .type = SettingType::integer};
    auto errors = parse_one(probe, 1);
    ASSERT_EQ(errors.size(), 1u) << section;
    EXPECT_EQ(errors[0].message, "unknown key \"zzzzzzzzzzzz\" (expected one of: " + list + ")");
  }
}

TEST(SettingsSchema, ModesNameOnlyExecutionModes) {
  const Setting* mode = control::find_setting("threading.mode");
  ASSERT_NE(mode, nullptr);
  for (const Setting& s : control::settings_schema())
    for (auto m : s.modes)
      EXPECT_NE(std::find(mode->choices.begin(), mode->choices.end(), m), mode->choices.end()) << s.path();
  EXPECT_EQ(control::find_setting("threading.idle_poll_us")->modes, std::vector<std::string_view>{"poll"});
  EXPECT_EQ(control::find_setting("threading.idle_poll_period_us")->modes, std::vector<std::string_view>{"bound"});
  EXPECT_EQ(control::find_setting("threading.idle_poll_adaptive")->modes, std::vector<std::string_view>{"bound"});
}

// settings.schema over the engine's method table serves the same description.
TEST(SettingsSchema, ServedBySettingsSchemaMethod) {
  engine::Engine engine(test_support::one_namespace_config("nqn.2026-12.io.nvmetune:schema", {"null", 1 << 20}));
  auto methods = control::make_engine_methods(engine, {"test", ""});
  auto it = methods.find("settings.schema");
  ASSERT_NE(it, methods.end());
  auto outcome = it->second(json::object());
  ASSERT_FALSE(outcome.error) << outcome.error->message;
  EXPECT_EQ(outcome.result, control::settings_schema_json());
  const json& settings = outcome.result.at("settings");
  ASSERT_EQ(settings.size(), control::settings_schema().size());
  const auto idle = std::find_if(settings.begin(), settings.end(),
                                 [](const json& s) { return s["path"] == "threading.idle_poll_us"; });
  ASSERT_NE(idle, settings.end());
  EXPECT_EQ((*idle)["type"], "integer");
  EXPECT_EQ((*idle)["min"], 0);
  EXPECT_EQ((*idle)["max"], 10000000);
  EXPECT_EQ((*idle)["default"], 1000);
  EXPECT_EQ((*idle)["modes"], json::array({"poll"}));
  EXPECT_TRUE(it->second(json{{"x", 1}}).error) << "params are refused";
}

}  // namespace
