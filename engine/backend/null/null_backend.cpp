#include "engine/backend/null/null_backend.hpp"

namespace backend {

namespace {
// Same granularity as the RAM backend, so one namespace size works for both.
constexpr uint64_t size_granularity = 4096;
}  // namespace

// Reads leave the buffer untouched: the host gets whatever the buffer held, not zeroes.
// Clearing it would add a memset per read and the null target exists to cost nothing; no
// test of data integrity may run against it.
bool NullBackend::submit(IoContext& ctx, Io& io) {
  io.result = 0;
  if (_delay_ns == 0) return true;
  return !ctx.complete_after(io, _delay_ns);
}

std::unique_ptr<Backend> open_null_backend(const BackendSpec& spec, std::string& error) {
  if (spec.size_bytes == 0 || spec.size_bytes % size_granularity != 0) {
    error = "null backend: size must be a positive multiple of 4096";
    return nullptr;
  }
  return std::make_unique<NullBackend>(spec.size_bytes, spec.delay_us);
}

}  // namespace backend
