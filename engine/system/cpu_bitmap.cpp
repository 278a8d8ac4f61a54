// Kernel CPU bitmap text (cpu_mask.hpp).
#include "engine/system/cpu_bitmap.hpp"

#include <algorithm>
#include <cstdio>

namespace sys {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

std::optional<std::vector<unsigned>> parse_cpu_mask(std::string_view text) {
  text = trimmed(text);
  if (text.empty()) return std::nullopt;
  std::vector<unsigned> cpus;
  unsigned bit = 0;
  // From the least significant digit: each hex digit holds 4 CPUs; commas only separate words.
  for (size_t i = text.size(); i-- > 0;) {
    if (text[i] == ',') continue;
    const int v = hex_value(text[i]);
    if (v < 0) return std::nullopt;
    for (int b = 0; b < 4; ++b)
      if (v & (1 << b)) cpus.push_back(bit + unsigned(b));
    bit += 4;
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::string format_cpu_mask(const std::vector<unsigned>& cpus, size_t words) {
  for (unsigned c : cpus) words = std::max(words, size_t(c / 32 + 1));
  std::vector<uint32_t> w(words, 0);
  for (unsigned c : cpus) w[c / 32] |= 1u << (c % 32);
  std::string out;
  for (size_t i = words; i-- > 0;) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", w[i]);
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out;
}

std::string format_cpu_mask_like(const std::vector<unsigned>& cpus, std::string_view like) {
  like = trimmed(like);
  const size_t words = like.empty() ? 1 : size_t(std::count(like.begin(), like.end(), ',')) + 1;
  std::string out = format_cpu_mask(cpus, words);
  const size_t first = like.empty() ? 8 : std::min(like.find(','), like.size());
  const size_t top = std::min<size_t>(first, 8);
  const size_t pad = std::min<size_t>(8 - top, out.find_first_not_of('0'));
  return out.substr(std::min(pad, out.size() - 1));
}

}  // namespace sys
