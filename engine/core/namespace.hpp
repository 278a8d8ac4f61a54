#pragma once
// A namespace: a backend plus its NVMe identity (NSZE, LBA format, NGUID/UUID/EUI-64).
#include <array>
#include <cstdint>
#include <memory>

#include "engine/backend/backend.hpp"

namespace core {

class Namespace {
 public:
  Namespace(uint32_t nsid, std::unique_ptr<backend::Backend> be, uint32_t block_size,
            std::array<uint8_t, 16> uuid);

  uint32_t nsid() const { return _nsid; }
  backend::Backend& backend() const { return *_backend; }
  uint32_t block_size() const { return 1u << _lba_shift; }
  unsigned lba_shift() const { return _lba_shift; }
  uint64_t nsze() const { return _nsze; }  // in logical blocks
  const std::array<uint8_t, 16>& uuid() const { return _uuid; }
  std::array<uint8_t, 16> nguid() const { return _uuid; }  // same 128-bit identity
  std::array<uint8_t, 8> eui64() const;

  // Identify Namespace (CNS 00h) data, 4096 bytes.
  void fill_identify(uint8_t* out) const;

 private:
  uint32_t _nsid;
  std::unique_ptr<backend::Backend> _backend;
  unsigned _lba_shift;
  uint64_t _nsze;
  std::array<uint8_t, 16> _uuid;
};

// A name-based UUID (RFC 4122 version 5 style layout over a 128-bit hash) so a namespace
// keeps its identity across restarts of the same configuration.
std::array<uint8_t, 16> derive_uuid(const std::string& subnqn, uint32_t nsid);
bool parse_uuid(const std::string& text, std::array<uint8_t, 16>& out);

}  // namespace core
