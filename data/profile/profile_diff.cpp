// Profile differences (profile_diff.hpp): a walk over two canonical documents.
#include "data/profile/profile_diff.hpp"

#include <algorithm>
#include <map>

namespace data {

namespace {

using json = nlohmann::json;

// What names an element of an array of objects, so elements pair up whatever their order;
// empty when the element has no identity (then elements pair up by index).
std::string identity(const json& e) {
  if (!e.is_object()) return {};
  if (auto it = e.find("nqn"); it != e.end() && it->is_string()) return it->get<std::string>();
  if (auto it = e.find("nsid"); it != e.end()) return "nsid=" + it->dump();
  if (e.contains("traddr")) return e.value("traddr", std::string()) + ":" + e.value("trsvcid", std::string());
  if (auto it = e.find("irq"); it != e.end()) return "irq=" + it->dump();
  if (e.contains("device")) return e.value("device", std::string()) + "/" + (e.contains("queue") ? e["queue"].dump() : "");
  return {};
}

std::string text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

class Walker {
 public:
  explicit Walker(std::vector<DiffEntry>& out) : _out(out) {}

  void value(const std::string& path, const json* a, const json* b) {
    if (a && b && *a == *b) return;
    if (a && b && a->is_object() && b->is_object()) return object(path, *a, *b);
    if (a && b && a->is_array() && b->is_array()) return array(path, *a, *b);
    _out.push_back({path, a ? std::optional<json>(*a) : std::nullopt, b ? std::optional<json>(*b) : std::nullopt});
  }

  void object(const std::string& path, const json& a, const json& b, bool root = false) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.push_back(k);
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    for (const auto& k : keys) {
      if (root && k == "name") continue;
      auto ia = a.find(k), ib = b.find(k);
      value(path.empty() ? k : path + "." + k, ia == a.end() ? nullptr : &*ia, ib == b.end() ? nullptr : &*ib);
    }
  }

 private:
  void array(const std::string& path, const json& a, const json& b) {
    const bool scalars = std::all_of(a.begin(), a.end(), [](const json& e) { return e.is_primitive(); }) &&
                         std::all_of(b.begin(), b.end(), [](const json& e) { return e.is_primitive(); });
    if (scalars) return scalar_set(path, a, b);
    std::map<std::string, std::pair<const json*, const json*>> paired;  // by identity, or by index
    std::vector<std::string> order;
    auto add = [&](const json& arr, bool second) {
      for (size_t i = 0; i < arr.size(); ++i) {
        std::string id = identity(arr[i]);
        if (id.empty()) id = std::to_string(i);
        auto [it, fresh] = paired.try_emplace(id, nullptr, nullptr);
        if (fresh) order.push_back(id);
        (second ? it->second.second : it->second.first) = &arr[i];
      }
    };
    add(a, false);
    add(b, true);
    for (const auto& id : order) value(path + "[" + id + "]", paired[id].first, paired[id].second);
  }

  // Host NQNs and the like: a set; each one added or removed is a line.
  void scalar_set(const std::string& path, const json& a, const json& b) {
    for (const auto& e : a)
      if (std::find(b.begin(), b.end(), e) == b.end()) _out.push_back({path + "[" + text(e) + "]", e, std::nullopt});
    for (const auto& e : b)
      if (std::find(a.begin(), a.end(), e) == a.end()) _out.push_back({path + "[" + text(e) + "]", std::nullopt, e});
  }

  std::vector<DiffEntry>& _out;
};

}  // namespace

std::vector<DiffEntry> diff_profiles(const json& a, const json& b) {
  std::vector<DiffEntry> out;
  Walker w(out);
  if (a.is_object() && b.is_object()) w.object("", a, b, true);
  else w.value("$", &a, &b);
  return out;
}

std::string format_diff(const std::vector<DiffEntry>& entries) {
  std::string out;
  for (const auto& e : entries)
    out += e.path + ": " + (e.before ? text(*e.before) : "(absent)") + " \u2192 " + (e.after ? text(*e.after) : "(absent)") + "\n";
  return out;
}

}  // namespace data
