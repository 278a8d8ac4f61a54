#include "engine/core/namespace.hpp"

#include <cstring>
#include <string>

#include "engine/nvme/le.hpp"

namespace core {

namespace id_ns {  // Identify Namespace byte offsets
inline constexpr size_t nsze = 0, ncap = 8, nuse = 16, nlbaf = 25, flbas = 26, nmic = 30,
                        dlfeat = 33, anagrpid = 92, nguid = 104, eui64 = 120, lbaf0 = 128;
}

Namespace::Namespace(uint32_t nsid, std::unique_ptr<backend::Backend> be, uint32_t block_size,
                     std::array<uint8_t, 16> uuid)
    : _nsid(nsid), _backend(std::move(be)), _lba_shift(block_size == 4096 ? 12 : 9), _uuid(uuid) {
  _nsze = _backend->size_bytes() >> _lba_shift;
}

std::array<uint8_t, 8> Namespace::eui64() const {
  std::array<uint8_t, 8> e{};
  std::memcpy(e.data(), _uuid.data() + 8, 8);
  return e;
}

void Namespace::fill_identify(uint8_t* out) const {
  using nvme::put_le;
  std::memset(out, 0, 4096);
  put_le<uint64_t>(out, id_ns::nsze, _nsze);
  put_le<uint64_t>(out, id_ns::ncap, _nsze);
  put_le<uint64_t>(out, id_ns::nuse, _nsze);
  out[id_ns::nlbaf] = 0;  // one LBA format
  out[id_ns::flbas] = 0;
  out[id_ns::nmic] = 1;    // may be attached to several controllers (multipath)
  // 001b: deallocated blocks read back as zeroes; 000b: not reported.
  out[id_ns::dlfeat] = _backend->reads_zeroes_after_deallocate() ? 1 : 0;
  put_le<uint32_t>(out, id_ns::anagrpid, 1);
  std::memcpy(out + id_ns::nguid, _uuid.data(), 16);
  auto e = eui64();
  std::memcpy(out + id_ns::eui64, e.data(), 8);
  out[id_ns::lbaf0 + 2] = static_cast<uint8_t>(_lba_shift);  // LBADS
}

std::array<uint8_t, 16> derive_uuid(const std::string& subnqn, uint32_t nsid) {
  // Two FNV-1a 64-bit hashes with different seeds: stable and well spread; not cryptographic,
  // which an identifier does not need.
  auto fnv = [](const std::string& s, uint64_t h) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
  };
  const std::string key = subnqn + "/" + std::to_string(nsid);
  const uint64_t a = fnv(key, 0xcbf29ce484222325ull), b = fnv(key, 0x84222325cbf29ce4ull);
  std::array<uint8_t, 16> u{};
  std::memcpy(u.data(), &a, 8);
  std::memcpy(u.data() + 8, &b, 8);
  u[6] = static_cast<uint8_t>((u[6] & 0x0f) | 0x50);  // version 5 (name based)
  u[8] = static_cast<uint8_t>((u[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return u;
}

bool parse_uuid(const std::string& text, std::array<uint8_t, 16>& out) {
  std::string hex;
  for (char c : text)
    if (c != '-') hex += c;
  if (hex.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    unsigned v = 0;
    for (size_t k = 0; k < 2; ++k) {
      const char c = hex[2 * i + k];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<unsigned>(d);
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

}  // namespace core
