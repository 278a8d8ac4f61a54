#pragma once
// What the tuning form is generated from: one description per live setting (section, JSON key,
// kind, range, the modes it matters in, and a tooltip with its trade-off). A new knob is one
// more entry, no widget code. settings_description() is the one place it comes from; when the
// engine publishes its own machine-readable description (control::settings_schema(), method
// settings.schema), that function converts it and nothing else changes.
#include <cstdint>
#include <string>
#include <vector>

namespace ui {

struct SettingField {
  enum class Kind { choice, integer, boolean, cpumask };
  std::string section;  // "threading" | "budgets": set with "<section>.set"
  std::string key;      // the JSON key in that section
  std::string label;
  Kind kind = Kind::integer;
  std::vector<std::string> choices;  // Kind::choice
  int64_t min = 0, max = 0;          // Kind::integer
  std::vector<std::string> modes;    // threading modes it applies to; empty = every mode
  std::string help;                  // what it does and what it costs
  std::string path() const { return section + "." + key; }
  bool applies_to(const std::string& mode) const;
};

const std::vector<SettingField>& settings_description();

}  // namespace ui
