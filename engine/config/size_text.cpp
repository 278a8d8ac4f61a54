// Size text (size_text.hpp).
#include "engine/config/size_text.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <utility>

namespace control {

bool parse_size(std::string_view s, uint64_t& out) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end == s.data()) return false;  // no digits, or overflow
  std::string_view suffix(end, static_cast<size_t>(s.data() + s.size() - end));
  static constexpr std::array<std::pair<std::string_view, unsigned>, 9> suffixes{{
      {"", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40},
      {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}}};
  for (const auto& [name, shift] : suffixes) {
    if (suffix != name) continue;
    if (shift != 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) return false;
    out = value << shift;
    return true;
  }
  return false;
}

}  // namespace control
