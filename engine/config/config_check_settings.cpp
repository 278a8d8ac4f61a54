// Pass 2 for the tuning settings (threading, budgets, tcp, rdma): each value against its row of the
// settings schema, so the rules a form shows are the rules validation applies (config_check.hpp).
#include <nlohmann/json.hpp>

#include "engine/config/config_check.hpp"
#include "engine/system/topology.hpp"
#include "engine/config/config_json.hpp"
#include "engine/config/settings_schema.hpp"

namespace control {

namespace {

using json = nlohmann::json;

std::string one_of(const std::vector<std::string_view>& names) {
  std::string list;
  for (auto n : names) list += (list.empty() ? "" : ", ") + json_quote(n);
  return list;
}

void check_choice(Checker& c, const Setting& s, const std::string& p, const std::string& value) {
  if (std::find(s.choices.begin(), s.choices.end(), value) == s.choices.end())
    c.error(p, "unknown " + std::string(s.noun) + " " + json_quote(value) + " (expected one of: " +
                   one_of(s.choices) + ")");
}

void check_number(Checker& c, const Setting& s, const std::string& p, int64_t v) {
  const std::string got = " (got " + std::to_string(v) + ")";
  if (s.power_of_two) {
    const bool pow2 = v > 0 && (v & (v - 1)) == 0;
    if (!pow2 || v < *s.min || v > *s.max)
      c.error(p, "must be a power of two from " + std::to_string(*s.min) + " to " + std::to_string(*s.max) + got);
    return;
  }
  const auto multiple = static_cast<int64_t>(s.multiple_of);
  if (!s.max) {  // a floor, and an alignment worded with it (tcp.maxh2cdata)
    if (v < *s.min || v % multiple != 0)
      c.error(p, "must be at least " + std::to_string(*s.min) +
                     (multiple > 1 ? " and a multiple of " + std::to_string(multiple) : "") + got);
    return;
  }
  c.range(p, v, *s.min, *s.max);
  if (v % multiple != 0) c.error(p, "must be a multiple of " + std::to_string(multiple));
}

// Checks each setting of `section` in schema order against its value in `values` (the section
// as to_json encodes it). `special(s, p)` takes the settings whose rule depends on more than
// their own value and returns true for those.
template <typename Special>
void check_section(Checker& c, std::string_view section, const json& values, const std::string& path,
                   Special special) {
  for (const Setting* s : settings_in(section)) {
    const std::string p = path + "." + std::string(s->key);
    if (special(*s, p)) continue;
    const json& v = values.at(std::string(s->key));
    if (s->type == SettingType::choice) check_choice(c, *s, p, v.get<std::string>());
    else if (s->type == SettingType::integer || s->type == SettingType::size) check_number(c, *s, p, v.get<int64_t>());
  }
}

constexpr auto no_special = [](const Setting&, const std::string&) { return false; };

// Poll threads pinned from first_core: thread i on first_core + i, so all of those must be online.
void check_first_core(Checker& c, const ThreadingConfig& t, const std::string& path,
                      const std::vector<unsigned>& online) {
  const std::string p = path + ".first_core";
  const int max_online = online.empty() ? 0 : static_cast<int>(online.back());
  if (t.first_core < -1 || t.first_core > max_online) {
    c.error(p, "out of range: " + std::to_string(t.first_core) + " (expected -1.." + std::to_string(max_online) +
                   "; -1 = threads float over the cpumask, else the highest online CPU is " +
                   std::to_string(max_online) + ")");
    return;
  }
  static const auto threads_max = static_cast<unsigned>(*find_setting("threading.threads")->max);
  if (t.first_core < 0 || t.threads > threads_max) return;
  const size_t n = t.threads ? t.threads : (t.cpus.empty() ? online.size() : t.cpus.size());
  std::vector<unsigned> pinned;
  for (size_t i = 0; i < n; ++i) pinned.push_back(static_cast<unsigned>(t.first_core) + static_cast<unsigned>(i));
  if (auto problem = offline_problem(pinned, online))
    c.error(p, "first_core " + std::to_string(t.first_core) + " with " + std::to_string(n) +
                   " thread(s) pins threads to CPUs " + sys::format_cpu_list(pinned) + ", but " + *problem);
}

}  // namespace

void check_tcp(Checker& c, const TcpConfig& t, const std::string& path) {
  check_section(c, "tcp", to_json(t), path, no_special);
}

void check_rdma(Checker& c, const RdmaConfig& r, const std::string& path) {
  check_section(c, "rdma", to_json(r), path, no_special);
}

void check_threading(Checker& c, const ThreadingConfig& t, const std::string& path,
                     const std::vector<unsigned>& online) {
  check_section(c, "threading", to_json(t), path, [&](const Setting& s, const std::string& p) {
    if (s.type == SettingType::cpumask) {
      if (auto problem = offline_problem(t.cpus, online)) c.error(p, *problem);
      return true;
    }
    if (s.key != "first_core") return false;
    check_first_core(c, t, path, online);
    return true;
  });
}

void check_budgets(Checker& c, const BudgetConfig& b, const std::string& path) {
  check_section(c, "budgets", to_json(b), path, no_special);
}

}  // namespace control
