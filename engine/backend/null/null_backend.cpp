#include "engine/backend/null/null_backend.hpp"

#include <sys/mman.h>

#include <cstring>

namespace backend {

namespace {
// Same granularity as the RAM backend, so one namespace size works for both.
constexpr uint64_t size_granularity = 4096;
// The largest transfer a read can ask for (the settings' maximum MDTS).
constexpr size_t zero_map_bytes = 16u << 20;

// Read-only anonymous memory: every page is the kernel's one zero page, so 16 MiB of it costs
// no memory. nullptr if it cannot be mapped (reads then clear their buffer).
const uint8_t* zero_map() {
  static const uint8_t* const map = [] {
    void* p = mmap(nullptr, zero_map_bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<const uint8_t*>(p);
  }();
  return map;
}
}  // namespace

// Reads return zeroes. The buffer a read lands in is not the host's own: an RDMA device's data
// pool serves all its queues, so what it last held may be another host's data, and a TCP slot
// holds the same host's earlier data. A transport that sends lent memory (TCP) is lent the zero
// map: nothing is copied or cleared. Otherwise (RDMA, whose WRITEs need registered memory) the
// buffer is cleared: about 50 ns for 4 KiB and 4 us for 128 KiB here, against the several us an
// RDMA command takes anyway; only the null backend pays it, as the others fill the whole buffer
// or fail the read.
bool NullBackend::submit(IoContext& ctx, Io& io) {
  if (io.op == IoOp::read) {
    if (io.may_lend && io.length <= zero_map_bytes && zero_map()) io.lent = zero_map();
    else std::memset(io.buf, 0, io.length);
  }
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
