#pragma once
// The RAM backend: a namespace held in anonymous memory, served synchronously with memcpy.
// Pages cost memory only once written (MAP_NORESERVE), so a large namespace is cheap to
// declare; Write Zeroes and Deallocate give whole pages back to the kernel. The memory asks for
// transparent huge pages (2 MiB extents, faulted in whole at their first write). Populated
// (BackendSpec::populate), every page is resident from creation on and stays so. With a delay, data
// is copied at submission and the completion comes that long after, via the queue's io_uring.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "engine/backend/backend.hpp"

namespace backend {

class RamBackend final : public Backend {
 public:
  // Takes ownership of a mapping of size_bytes at memory (munmapped on destruction).
  RamBackend(uint8_t* memory, uint64_t size_bytes, uint32_t delay_us = 0, bool populated = false)
      : _memory(memory), _size_bytes(size_bytes), _delay_ns(uint64_t{delay_us} * 1000), _populated(populated) {}
  ~RamBackend() override;
  RamBackend(const RamBackend&) = delete;
  RamBackend& operator=(const RamBackend&) = delete;

  std::string_view kind() const override { return "ram"; }
  uint64_t size_bytes() const override { return _size_bytes; }
  bool submit(IoContext& ctx, Io& io) override;
  uint8_t* write_target(uint64_t offset, uint32_t length) override;
  std::span<uint8_t> memory() { return {_memory, _size_bytes}; }

 private:
  void zero_range(uint64_t offset, uint64_t length);

  uint8_t* _memory;
  uint64_t _size_bytes;
  uint64_t _delay_ns;
  bool _populated;
};

// Requires spec.size_bytes to be a positive multiple of 4096. On failure returns nullptr and
// sets error.
std::unique_ptr<Backend> open_ram_backend(const BackendSpec& spec, std::string& error);

// The kernel's transparent huge page mode ("always", "madvise", "never"; "absent" when the
// kernel has none): every RAM namespace asks for huge pages, which only "never" and "absent" refuse.
std::string_view transparent_huge_pages();

// Test hook: the memory behind a RAM backend (empty for any other backend), so a test can
// corrupt a block behind the engine's back.
std::span<uint8_t> ram_backend_memory(Backend& backend);

}  // namespace backend
