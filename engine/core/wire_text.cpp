// Showing text a peer sent (wire_text.hpp).
#include "engine/core/wire_text.hpp"

#include <cstdint>

namespace core {

namespace {

constexpr char32_t del = 0x7f, c1_first = 0x80, c1_last = 0x9f;

bool continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

// The code point of the valid sequence of length n at s[i].
char32_t decode(std::string_view s, size_t i, size_t n) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  switch (n) {
    case 1: return b(0);
    case 2: return char32_t(b(0) & 0x1f) << 6 | (b(1) & 0x3f);
    case 3: return char32_t(b(0) & 0x0f) << 12 | char32_t(b(1) & 0x3f) << 6 | (b(2) & 0x3f);
    default: return char32_t(b(0) & 0x07) << 18 | char32_t(b(1) & 0x3f) << 12 | char32_t(b(2) & 0x3f) << 6 | (b(3) & 0x3f);
  }
}

bool is_control(char32_t cp) { return cp < 0x20 || cp == del || (cp >= c1_first && cp <= c1_last); }

// The length of the displayable character at s[i], or 0 when that byte must be escaped.
size_t safe_length(std::string_view s, size_t i) {
  const size_t n = utf8_sequence_length(s, i);
  return n != 0 && !is_control(decode(s, i, n)) ? n : 0;
}

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  if (lead < 0x80) return 1;
  size_t n = 0;
  char32_t min = 0;  // the smallest code point that needs n bytes: anything less is overlong
  if ((lead & 0xe0) == 0xc0) n = 2, min = 0x80;
  else if ((lead & 0xf0) == 0xe0) n = 3, min = 0x800;
  else if ((lead & 0xf8) == 0xf0) n = 4, min = 0x10000;
  else return 0;
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k)
    if (!continuation(static_cast<unsigned char>(s[i + k]))) return 0;
  const char32_t cp = decode(s, i, n);
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

bool is_display_safe(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = safe_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string display_text(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = safe_length(s, i)) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i++]);
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 0xf];
  }
  return out;
}

}  // namespace core
