#include "engine/tcp/digest.hpp"

#include <isa-l/crc.h>

namespace tcp {

uint32_t crc32c_update(uint32_t crc, const void* data, size_t len) {
  // ISA-L's crc32_iscsi neither inverts on entry nor on exit: the caller owns seed and final xor.
  return crc32_iscsi(static_cast<unsigned char*>(const_cast<void*>(data)), static_cast<int>(len), crc);
}

}  // namespace tcp
