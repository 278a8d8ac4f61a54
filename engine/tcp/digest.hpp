#pragma once
// CRC32C (Castagnoli) header and data digests, computed by ISA-L.
#include <cstddef>
#include <cstdint>
#include <span>

namespace tcp {

inline constexpr uint32_t crc32c_seed = 0xffffffffu;

// Running CRC32C: start with crc32c_seed, feed pieces, finish with crc32c_final.
uint32_t crc32c_update(uint32_t crc, const void* data, size_t len);
inline uint32_t crc32c_final(uint32_t crc) { return ~crc; }
inline uint32_t crc32c(const void* data, size_t len) {
  return crc32c_final(crc32c_update(crc32c_seed, data, len));
}

}  // namespace tcp
