#pragma once
// Sizes as people write them in configuration, profiles and command lines.
#include <cstdint>
#include <string_view>

namespace control {

// "1GiB", "512M", "4096" → bytes; false on a malformed size. K/M/G/T and KiB/MiB/GiB/TiB are
// both 1024-based.
bool parse_size(std::string_view s, uint64_t& out);

}  // namespace control
