#pragma once
// The null backend: every operation succeeds at once, no data is stored, reads return zeroes.
// It measures the engine and the transport without any medium behind them (like the kernel's
// null_blk).
// With a delay, each completion comes that long after submission (null_blk's completion_nsec
// with irqmode=2), through the queue's io_uring timer: no thread per I/O.
#include <memory>
#include <string>

#include "engine/backend/backend.hpp"

namespace backend {

class NullBackend final : public Backend {
 public:
  explicit NullBackend(uint64_t size_bytes, uint32_t delay_us = 0)
      : _size_bytes(size_bytes), _delay_ns(uint64_t{delay_us} * 1000) {}
  std::string_view kind() const override { return "null"; }
  uint64_t size_bytes() const override { return _size_bytes; }
  bool submit(IoContext& ctx, Io& io) override;

 private:
  uint64_t _size_bytes;
  uint64_t _delay_ns;
};

// Requires spec.size_bytes to be a positive multiple of 4096. On failure returns nullptr and
// sets error.
std::unique_ptr<Backend> open_null_backend(const BackendSpec& spec, std::string& error);

}  // namespace backend
