#include "engine/backend/ram/ram_backend.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace backend {

namespace {

constexpr uint64_t page_size = 4096;
// x86-64's and arm64's (4k granule) PMD size: the unit of a transparent huge page.
constexpr uint64_t huge_page_size = 2 << 20;

// The core checks LBA ranges before an Io exists; this is defence against memory corruption.
bool in_range(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

// Faults [p, p + len) in writable. MADV_POPULATE_WRITE (Linux 5.14) does it in one call;
// older kernels get one write per page. False when the memory is not there (ENOMEM).
bool populate(uint8_t* p, uint64_t len) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, len, MADV_POPULATE_WRITE) == 0) return true;
  if (errno != EINVAL) return false;
#endif
  for (uint64_t off = 0; off < len; off += page_size) static_cast<volatile uint8_t*>(p)[off] = 0;
  return true;
}

}  // namespace

RamBackend::~RamBackend() { munmap(_memory, _size_bytes); }

bool RamBackend::submit(IoContext& ctx, Io& io) {
  bool ranged = io.op != IoOp::flush;
  if (ranged && !in_range(io.offset, io.length, _size_bytes)) {
    io.result = -ERANGE;
    return true;
  }
  switch (io.op) {
    case IoOp::read:
      // Lent: the transport sends from the namespace itself (no copy of 4k..MDTS per read);
      // the command's namespace hold keeps the memory alive until the data is sent.
      if (io.may_lend) io.lent = _memory + io.offset;
      else std::memcpy(io.buf, _memory + io.offset, io.length);
      break;
    case IoOp::write:
      // Received in place (write_target): the data is where it belongs already.
      if (io.buf != _memory + io.offset) std::memcpy(_memory + io.offset, io.buf, io.length);
      break;
    case IoOp::flush:
      break;  // nothing volatile to write back
    case IoOp::write_zeroes:
    case IoOp::discard:
      zero_range(io.offset, io.length);
      break;
  }
  io.result = 0;
  // Delayed: the data moved now, only the completion waits (what a host can observe).
  if (_delay_ns == 0) return true;
  return !ctx.complete_after(io, _delay_ns);
}

// A 4k write copied its data twice in user space (staging buffer to the command's, then to
// here), a quarter of the target's cycles at 4k randwrite qd32.
uint8_t* RamBackend::write_target(uint64_t offset, uint32_t length) {
  return in_range(offset, length, _size_bytes) ? _memory + offset : nullptr;
}

// Whole pages are dropped with MADV_DONTNEED: on a private anonymous mapping they read back
// as zeroes and stop costing memory. Only the unaligned head and tail are cleared by hand.
void RamBackend::zero_range(uint64_t offset, uint64_t length) {
  uint64_t end = offset + length;
  uint64_t first_page = (offset + page_size - 1) / page_size * page_size;
  uint64_t last_page = end / page_size * page_size;
  if (first_page >= last_page ||
      madvise(_memory + first_page, last_page - first_page, MADV_DONTNEED) != 0) {
    std::memset(_memory + offset, 0, length);
    return;
  }
  // Populated: the kernel zero-fills fresh pages, cheaper than writing zeroes over old ones.
  if (_populated) (void)populate(_memory + first_page, last_page - first_page);
  std::memset(_memory + offset, 0, first_page - offset);
  std::memset(_memory + last_page, 0, end - last_page);
}

namespace {

// Maps size bytes at a huge-page boundary (an anonymous mapping is only 4k-aligned; a namespace
// whose first 2 MiB straddled a boundary would lose a huge page at each end), by mapping a huge
// page more and unmapping the slack. nullptr (errno set) when there is no room.
uint8_t* map_aligned(uint64_t size) {
  const uint64_t slack = size >= huge_page_size ? huge_page_size : 0;
  void* raw = mmap(nullptr, size + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* base = static_cast<uint8_t*>(raw);
  if (slack == 0) return base;
  const uint64_t head = (huge_page_size - reinterpret_cast<uintptr_t>(base) % huge_page_size) % huge_page_size;
  if (head != 0) munmap(base, head);
  if (slack - head != 0) munmap(base + head + size, slack - head);
  return base + head;
}

}  // namespace

std::unique_ptr<Backend> open_ram_backend(const BackendSpec& spec, std::string& error) {
  if (spec.size_bytes == 0 || spec.size_bytes % page_size != 0) {
    error = "ram backend: size must be a positive multiple of 4096";
    return nullptr;
  }
  uint8_t* memory = map_aligned(spec.size_bytes);
  if (memory == nullptr) {
    error = "ram backend: cannot map " + std::to_string(spec.size_bytes) +
            " bytes: " + std::generic_category().message(errno);
    return nullptr;
  }
  // Transparent huge pages on every RAM namespace, advised before the first fault: 4k reads
  // spread over a GiB otherwise miss the TLB on nearly every page (4k randread qd32 against
  // SPDK's hugepage-backed malloc bdev: 1.03-1.07 of SPDK posix with 4k pages, 1.19-1.22 with
  // huge ones). Each first write into a 2 MiB extent then faults in (and zeroes) the whole
  // extent, once; populating moves all of that to start-up. Advice only: a kernel without THP
  // (EINVAL) or with it set to never serves the namespace the same, with 4k pages.
  (void)madvise(memory, spec.size_bytes, MADV_HUGEPAGE);
  if (spec.populate && !populate(memory, spec.size_bytes)) {
    error = "ram backend: cannot populate " + std::to_string(spec.size_bytes) +
            " bytes: " + std::generic_category().message(errno);
    munmap(memory, spec.size_bytes);
    return nullptr;
  }
  return std::make_unique<RamBackend>(memory, spec.size_bytes, spec.delay_us, spec.populate);
}

std::string_view transparent_huge_pages() {
  static const std::string mode = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string text;
    std::getline(f, text);
    // "always [madvise] never": the bracketed word is the mode in force.
    const auto open = text.find('['), close = text.find(']');
    return open != std::string::npos && close > open ? text.substr(open + 1, close - open - 1) : std::string("absent");
  }();
  return mode;
}

std::span<uint8_t> ram_backend_memory(Backend& backend) {
  auto* ram = dynamic_cast<RamBackend*>(&backend);
  return ram != nullptr ? ram->memory() : std::span<uint8_t>{};
}

}  // namespace backend
