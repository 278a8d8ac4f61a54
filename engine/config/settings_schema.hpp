#pragma once
// The one description of the tuning settings (threading, budgets, tcp): name, JSON path, type,
// range or choices, default, the modes it applies to and a help text. The configuration's
// validation checks ranges and choices from this table, the control socket serves it
// (`settings.schema`), and a front end generates its tuning forms and tooltips from it, so a
// new knob is one row here plus its field in config.hpp (read, encoded) and nothing in widgets.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace control {

enum class SettingType {
  integer,  // min..max (max absent: see max_rule), optionally multiple_of / power_of_two
  size,     // bytes: an integer or a size string ("1GiB"); same range rules as integer
  boolean,
  choice,   // one of choices
  cpumask,  // a CPU list ("0-3,6") or "all", every CPU online
};
std::string_view to_string(SettingType t);

struct Setting {
  std::string_view section;  // "threading", "budgets", "tcp" or "rdma": the configuration object
  std::string_view key;      // "idle_poll_us"
  SettingType type;
  std::string_view label;    // a form's label, "Idle poll"
  std::string_view unit;     // "µs", "PDUs", "bytes", or ""
  std::optional<int64_t> min;
  std::optional<int64_t> max;
  std::string_view max_rule;  // when max depends on the machine ("the highest online CPU")
  uint64_t multiple_of = 1;
  bool power_of_two = false;
  std::vector<std::string_view> choices;  // choice only
  std::string_view noun;                  // what errors call a choice's value ("execution mode")
  std::vector<std::string_view> modes;    // threading modes it applies to (all four for most)
  bool live = true;                       // applies live; false: at start (new connections)
  std::string_view help;                  // what it does and the trade-off, one paragraph
  nlohmann::json default_value;           // the model's default (config.hpp)

  std::string path() const { return std::string(section) + "." + std::string(key); }
};

// Every tuning setting, in the order of the configuration's keys within each section.
const std::vector<Setting>& settings_schema();

// The settings of one section, in key order.
std::vector<const Setting*> settings_in(std::string_view section);

// A setting by path ("threading.idle_poll_us"); nullptr when there is none.
const Setting* find_setting(std::string_view path);

// The keys of a section, as unknown-key messages list them.
std::vector<std::string_view> setting_keys(std::string_view section);

// The schema as JSON (what `settings.schema` returns): {"settings": [{name, path, section,
// type, label, unit, min, max, max_rule, multiple_of, power_of_two, values, modes, live,
// default, help}, …]}; absent members are left out.
nlohmann::json settings_schema_json();

}  // namespace control
