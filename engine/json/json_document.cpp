// Pass 0: JSON syntax and duplicate keys (json_document.hpp).
#include "engine/json/json_document.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "engine/json/json_path.hpp"

namespace control {

namespace {

using json = nlohmann::json;

// Tracks the JSON path during nlohmann's SAX-like parser callback so duplicate object keys
// (which nlohmann would silently resolve as "last one wins") are reported with their path.
class DuplicateKeyTracker {
 public:
  explicit DuplicateKeyTracker(std::vector<ConfigError>& errors) : _errors(errors) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: push(false); break;
      case json::parse_event_t::array_start: push(true); break;
      case json::parse_event_t::key: on_key(parsed.get<std::string>()); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end: _frames.pop_back(); element_done(); break;
      case json::parse_event_t::value: element_done(); break;
    }
    return true;
  }

 private:
  struct Frame {
    std::string path;
    bool is_array = false;
    size_t index = 0;          // arrays: elements completed so far
    std::string key;           // objects: the current key
    std::set<std::string> keys;
  };

  void push(bool is_array) {
    std::string path = "$";
    if (!_frames.empty()) {
      const Frame& top = _frames.back();
      path = top.is_array ? index_path(top.path, top.index) : member_path(top.path, top.key);
    }
    _frames.push_back(Frame{std::move(path), is_array, 0, {}, {}});
  }
  void on_key(std::string key) {
    Frame& top = _frames.back();
    if (!top.keys.insert(key).second)
      _errors.push_back({member_path(top.path, key), "duplicate key " + json_quote(key)});
    top.key = std::move(key);
  }
  void element_done() {
    if (!_frames.empty() && _frames.back().is_array) ++_frames.back().index;
  }

  std::vector<ConfigError>& _errors;
  std::vector<Frame> _frames;
};

ConfigError syntax_error(std::string_view text, const json::parse_error& e) {
  // e.byte is 1-based (the offending character; size + 1 at the end of input).
  const size_t before = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < before; ++i) {
    if (text[i] == '\n') { ++line; column = 1; } else { ++column; }
  }
  std::string detail = e.what();
  if (auto colon = detail.find(": "); colon != std::string::npos) detail.erase(0, colon + 2);
  return {"$", "JSON syntax error at byte " + std::to_string(e.byte) + " (line " +
                   std::to_string(line) + ", column " + std::to_string(column) + "): " + detail};
}

}  // namespace

JsonDocument parse_json_document(std::string_view json_text) {
  JsonDocument out;
  try {
    out.doc = json::parse(json_text.begin(), json_text.end(), DuplicateKeyTracker(out.errors));
    out.syntax_ok = true;
  } catch (const json::parse_error& e) {
    out.errors = {syntax_error(json_text, e)};  // duplicates seen so far matter no more
    out.doc = nullptr;
  }
  return out;
}

}  // namespace control
