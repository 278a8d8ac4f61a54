// Configuration parsing and validation (config.hpp, config_json.hpp).
//
// parse_config works in passes over one document and reports everything it finds:
//  0. JSON syntax and duplicate keys (json_document.hpp);
//  1. shape: unknown and missing keys, value types (config_read.hpp); each value that passes
//     lands in the Config;
//  2. meaning: ranges, formats, duplicates, backends (config_check.hpp) on the resulting Config.
// A value that failed pass 1 keeps its default in the Config, so pass-2 errors at or below
// a path pass 1 already reported are dropped: one mistake, one message.
#include "engine/config/config_check.hpp"
#include "engine/system/topology.hpp"
#include "engine/config/config_json.hpp"
#include "engine/config/config_read.hpp"

namespace control {

namespace {

using json = nlohmann::json;

std::vector<ConfigError> validate_except(const Config& cfg, const std::vector<ConfigError>& broken) {
  std::vector<ConfigError> out;
  Checker c(out, broken);
  check_listeners(c, cfg.listeners);
  check_subsystems(c, cfg.subsystems);
  check_tcp(c, cfg.tcp, "$.tcp");
  check_rdma(c, cfg.rdma, "$.rdma");
  check_threading(c, cfg.threading, "$.threading", sys::online_cpus());
  check_budgets(c, cfg.budgets, "$.budgets");
  return out;
}

// Reads a fragment (pass 1), checks what it read (pass 2) and assigns it to out only when both
// passes found nothing: the shared skeleton of the parse_* functions of config_json.hpp.
template <typename T, typename ReadFn, typename CheckFn>
std::vector<ConfigError> parse_fragment(T& out, ReadFn read, CheckFn check) {
  std::vector<ConfigError> errors;
  JsonReader r(errors);
  T value = out;
  read(r, value);
  std::vector<ConfigError> semantic;
  Checker c(semantic, errors);
  check(c, value);
  errors.insert(errors.end(), semantic.begin(), semantic.end());
  sort_by_path(errors);
  if (errors.empty()) out = std::move(value);
  return errors;
}

// A check alone on a value built in code (nothing reported before it).
template <typename CheckFn>
std::vector<ConfigError> check_alone(CheckFn check) {
  std::vector<ConfigError> out;
  const std::vector<ConfigError> none;
  Checker c(out, none);
  check(c);
  return out;
}

}  // namespace

std::vector<ConfigError> parse_threading(const json& v, const std::string& path, ThreadingConfig& out) {
  const auto online = sys::online_cpus();
  return parse_fragment(
      out, [&](JsonReader& r, ThreadingConfig& t) { read_threading(r, v, path, t); },
      [&](Checker& c, const ThreadingConfig& t) { check_threading(c, t, path, online); });
}

std::vector<ConfigError> parse_budgets(const json& v, const std::string& path, BudgetConfig& out) {
  return parse_fragment(
      out, [&](JsonReader& r, BudgetConfig& b) { read_budgets(r, v, path, b); },
      [&](Checker& c, const BudgetConfig& b) { check_budgets(c, b, path); });
}

std::vector<ConfigError> parse_tcp(const json& v, const std::string& path, TcpConfig& out) {
  return parse_fragment(
      out, [&](JsonReader& r, TcpConfig& t) { read_tcp(r, v, path, t); },
      [&](Checker& c, const TcpConfig& t) { check_tcp(c, t, path); });
}

std::vector<ConfigError> parse_rdma(const json& v, const std::string& path, RdmaConfig& out) {
  return parse_fragment(
      out, [&](JsonReader& r, RdmaConfig& t) { read_rdma(r, v, path, t); },
      [&](Checker& c, const RdmaConfig& t) { check_rdma(c, t, path); });
}

std::vector<ConfigError> parse_subsystem(const json& v, const std::string& path, SubsystemConfig& out) {
  return parse_fragment(
      out, [&](JsonReader& r, SubsystemConfig& s) { s = read_subsystem(r, v, path); },
      [&](Checker& c, const SubsystemConfig& s) { check_subsystem(c, s, path); });
}

std::vector<ConfigError> parse_namespace(const json& v, const std::string& path, NamespaceConfig& out) {
  return parse_fragment(
      out, [&](JsonReader& r, NamespaceConfig& ns) { ns = read_namespace(r, v, path); },
      [&](Checker& c, const NamespaceConfig& ns) { check_namespace(c, ns, path); });
}

std::vector<ConfigError> validate_threading(const ThreadingConfig& t, const std::string& path) {
  return check_alone([&](Checker& c) { check_threading(c, t, path, sys::online_cpus()); });
}

std::vector<ConfigError> validate_budgets(const BudgetConfig& b, const std::string& path) {
  return check_alone([&](Checker& c) { check_budgets(c, b, path); });
}

ParseResult parse_config(std::string_view json_text) {
  auto parsed = parse_json_document(json_text);
  if (!parsed.syntax_ok) return ParseResult{Config{}, std::move(parsed.errors)};
  return parse_config_document(parsed.doc, std::move(parsed.errors));
}

ParseResult parse_config_document(const json& doc, std::vector<ConfigError> errors) {
  ParseResult result;
  result.errors = std::move(errors);
  JsonReader reader(result.errors);
  result.config = read_config(reader, doc);
  if (!doc.is_object()) return result;
  auto semantic = validate_except(result.config, result.errors);
  result.errors.insert(result.errors.end(), semantic.begin(), semantic.end());
  sort_by_path(result.errors);
  return result;
}

std::vector<ConfigError> validate(const Config& c) {
  auto errors = validate_except(c, {});
  sort_by_path(errors);
  return errors;
}

}  // namespace control
