#include "engine/rdma/buffer_pool.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace rdma {
namespace {
inline constexpr size_t page = 4096;
size_t round_up(size_t n) { return (n + page - 1) / page * page; }
}  // namespace

BufferPool::~BufferPool() {
  deregister();
  if (_base) munmap(_base, _len);
}

void BufferPool::deregister() {
  if (_mr) ibv_dereg_mr(_mr);
  _mr = nullptr;
}

std::string BufferPool::create(ibv_pd* pd, const PoolLayout& l) {
  _layout = l;
  const size_t capsules = round_up(size_t{l.capsules} * l.capsule_size);
  const size_t cqes = round_up(size_t{l.responses} * 16);
  _len = capsules + cqes;
  void* p = mmap(nullptr, _len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return std::string("cannot map ") + std::to_string(_len) + " bytes: " + std::strerror(errno);
  _base = static_cast<uint8_t*>(p);
  _cqes = _base + capsules;
  // Local write: receives and RDMA READ land here. No remote access: the target initiates
  // every transfer, so no host can touch this memory.
  // An int, not the enum: verbs.h's ibv_reg_mr macro ANDs it with another enum type, which
  // C++20 deprecates (an error under -Werror in the sanitizer builds).
  const int access = IBV_ACCESS_LOCAL_WRITE;
  _mr = ibv_reg_mr(pd, _base, _len, access);
  if (!_mr)
    return "cannot register " + std::to_string(_len) + " bytes: " + std::strerror(errno) +
           (errno == ENOMEM ? " (locked-memory limit: ulimit -l)" : "");
  return {};
}

}  // namespace rdma
