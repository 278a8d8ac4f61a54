#pragma once
// Little-endian field access over raw spec buffers. NVMe is little-endian on the wire;
// these keep the layouts readable without packed structs and unaligned UB.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace nvme {

template <typename T>
inline T get_le(const void* base, size_t off) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + off, sizeof(T));
  return v;  // x86-64 and aarch64 are little-endian; static_assert below guards others
}

template <typename T>
inline void put_le(void* base, size_t off, T v) {
  std::memcpy(static_cast<uint8_t*>(base) + off, &v, sizeof(T));
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "nvmetune assumes a little-endian host");

// Fixed-width ASCII fields (SN, MN, FR) are space padded; NQN fields are NUL padded.
inline void put_ascii(void* base, size_t off, size_t width, std::string_view s, char pad = ' ') {
  auto* p = static_cast<char*>(base) + off;
  std::memset(p, pad, width);
  std::memcpy(p, s.data(), s.size() < width ? s.size() : width);
}

inline std::string_view get_cstr(const void* base, size_t off, size_t width) {
  const auto* p = static_cast<const char*>(base) + off;
  size_t n = 0;
  while (n < width && p[n] != '\0') ++n;
  return {p, n};
}

}  // namespace nvme
