#pragma once
// A tuning profile: one JSON document ("schema": "nvmetune.profile/1") holding a name, a
// description and any of the engine's configuration sections (threading with its I/O
// mechanism, budgets, tcp, listeners, subsystems with their namespaces and allowed hosts) plus
// IRQ/RPS/XPS steering. Every section is optional: a profile with only threading and budgets
// moves between machines; one with topology describes a whole target.
//
// A section present is a whole section: keys it leaves out take the configuration's defaults
// (README.md "Configuration"), so applying it sets exactly what it shows and two profiles diff
// field by field. The configuration sections are judged by engine/control's own parsers.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config/config.hpp"

namespace data {

inline constexpr std::string_view profile_schema = "nvmetune.profile/1";
inline constexpr size_t profile_name_max = 64;

// Which CPUs may service one interrupt line: by number ("irq": 42), or by the device and queue
// that own it ("device": "eth0", "queue": 3; the line is looked up when steering is applied).
struct IrqSteering {
  std::optional<unsigned> irq;
  std::string device;
  std::optional<unsigned> queue;
  std::vector<unsigned> cpus;  // empty = every online CPU ("all")
};

// RPS (receive packet steering) or XPS (transmit) for one queue of a network device.
struct QueueSteering {
  std::string device;
  unsigned queue = 0;
  std::vector<unsigned> cpus;  // empty = every online CPU ("all")
};

// Applied by the engine as one transaction (steering.apply, whose request has this shape);
// `profile save` captures the lines and queues the engine changed, with their CPUs now.
struct SteeringConfig {
  std::vector<IrqSteering> irq;
  std::vector<QueueSteering> rps;
  std::vector<QueueSteering> xps;
};

struct Profile {
  std::string name;         // may be empty in a file (import --name gives one)
  std::string description;
  std::optional<control::ThreadingConfig> threading;
  std::optional<control::BudgetConfig> budgets;
  std::optional<control::TcpConfig> tcp;
  std::optional<SteeringConfig> steering;
  std::optional<std::vector<control::ListenerConfig>> listeners;
  std::optional<std::vector<control::SubsystemConfig>> subsystems;
};

struct ProfileParse {
  Profile profile;
  std::vector<control::ConfigError> errors;  // every error, sorted by path; empty = valid
};

// Parses and validates a whole profile document in one pass: JSON syntax, the schema version,
// unknown and duplicate keys, types, ranges, CPUs not online on this machine, empty masks.
ProfileParse parse_profile(std::string_view json_text);

// "" when name can name a stored profile (1..64 of [A-Za-z0-9._-], not starting with '.' or
// '-'), else why not.
std::string profile_name_problem(std::string_view name);

// The canonical document: schema, then the sections present, each whole. parse_profile of its
// dump gives back p.
nlohmann::json to_json(const Profile& p);
// to_json(p) as indented text with schema, name and description first (for files and `show`).
std::string to_text(const Profile& p);
// The same ordering for a canonical document already in hand (a stored profile).
std::string to_text(const nlohmann::json& canonical);

nlohmann::json to_json(const SteeringConfig& s);

}  // namespace data
