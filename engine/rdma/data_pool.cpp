#include "engine/rdma/data_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdma {
namespace {

inline constexpr uint32_t smallest_class = 16 * 1024;  // 4-16 KiB I/O, admin data, 8 KiB Compare
inline constexpr uint32_t class_step = 8;
inline constexpr uint32_t max_cache = 32;  // SPDK's default buf_cache_size
// A queue caches at most 1/8 of a class, so a few busy queues cannot hold all of it.
inline constexpr uint32_t cache_share = 8;

std::string size_text(uint64_t n) {
  if (n % (1u << 20) == 0) return std::to_string(n >> 20) + "MiB";
  return std::to_string(n >> 10) + "KiB";
}

}  // namespace

std::vector<BufferClass> buffer_classes(uint64_t pool_bytes, uint32_t mdts_bytes) {
  std::vector<uint32_t> sizes;
  const uint64_t largest = uint64_t{2} * mdts_bytes;  // Compare reads the medium into a second half
  for (uint64_t s = smallest_class; s < largest; s *= class_step) sizes.push_back(static_cast<uint32_t>(s));
  sizes.push_back(static_cast<uint32_t>(std::max<uint64_t>(largest, smallest_class)));
  std::vector<BufferClass> out;
  const uint64_t share = pool_bytes / sizes.size();
  for (uint32_t s : sizes) {
    const auto count = static_cast<uint32_t>(std::max<uint64_t>(1, share / s));
    out.push_back({s, count, std::min(max_cache, count / cache_share)});
  }
  return out;
}

DataPool::~DataPool() {
  if (_base) munmap(_base, _len);
}

std::string DataPool::create(uint64_t pool_bytes, uint32_t mdts_bytes) {
  _classes = buffer_classes(pool_bytes, mdts_bytes);
  _len = 0;
  for (const auto& c : _classes) _len += size_t{c.count} * c.size;
  void* p = mmap(nullptr, _len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return "cannot map a data pool of " + std::to_string(_len) + " bytes: " + std::strerror(errno);
  _base = static_cast<uint8_t*>(p);
  uint8_t* at = _base;
  _free.resize(_classes.size());
  for (size_t i = 0; i < _classes.size(); ++i) {
    _free[i].reserve(_classes[i].count);
    for (uint32_t k = 0; k < _classes[i].count; ++k, at += _classes[i].size) _free[i].push_back(at);
  }
  return {};
}

uint32_t DataPool::class_for(uint32_t need) const {
  uint32_t c = 0;
  while (c < _classes.size() && _classes[c].size < need) ++c;
  return c;
}

std::string DataPool::describe() const {
  std::string s;
  for (const auto& c : _classes) s += (s.empty() ? "" : " ") + std::to_string(c.count) + "x" + size_text(c.size);
  return size_text(_len) + " (" + s + ")";
}

uint32_t DataPool::take(uint32_t c, uint32_t n, std::vector<uint8_t*>& out, Waiter* w) {
  std::lock_guard lk(_mu);
  auto& f = _free[c];
  const auto moved = static_cast<uint32_t>(std::min<size_t>(n, f.size()));
  out.insert(out.end(), f.end() - moved, f.end());
  f.resize(f.size() - moved);
  if (moved == 0 && w && std::find(_waiters.begin(), _waiters.end(), w) == _waiters.end()) {
    _waiters.push_back(w);
    _has_waiters.store(true, std::memory_order_relaxed);
  }
  return moved;
}

void DataPool::give(uint32_t c, std::vector<uint8_t*>& in, uint32_t n) {
  std::lock_guard lk(_mu);
  n = std::min<uint32_t>(n, static_cast<uint32_t>(in.size()));
  _free[c].insert(_free[c].end(), in.end() - n, in.end());
  in.resize(in.size() - n);
  // Every waiter retries: a queue woken for another class finds nothing and waits again.
  for (Waiter* w : _waiters) w->buffers_returned();
  _waiters.clear();
  _has_waiters.store(false, std::memory_order_relaxed);
}

void DataPool::forget(Waiter* w) {
  std::lock_guard lk(_mu);
  std::erase(_waiters, w);
  _has_waiters.store(!_waiters.empty(), std::memory_order_relaxed);
}

uint32_t DataPool::free_count(uint32_t c) const {
  std::lock_guard lk(_mu);
  return static_cast<uint32_t>(_free[c].size());
}

BufferCache::BufferCache(DataPool& pool, DataPool::Waiter& waiter) : _pool(pool), _waiter(waiter) {
  _local.resize(pool.classes().size());
  for (size_t i = 0; i < _local.size(); ++i) _local[i].reserve(pool.classes()[i].cache + 1);
}

BufferCache::~BufferCache() {
  _pool.forget(&_waiter);
  for (uint32_t c = 0; c < _local.size(); ++c)
    if (!_local[c].empty()) _pool.give(c, _local[c], static_cast<uint32_t>(_local[c].size()));
}

BufferCache::Buffer BufferCache::get(uint32_t need) {
  const uint32_t c = _pool.class_for(need);
  if (c >= _local.size()) return {};
  auto& l = _local[c];
  // Half a cache per refill: the next puts have room before anything goes back.
  if (l.empty() && _pool.take(c, std::max(1u, _pool.classes()[c].cache / 2), l, &_waiter) == 0) return {};
  Buffer b{l.back(), c, _pool.classes()[c].size};
  l.pop_back();
  return b;
}

void BufferCache::put(const Buffer& b) {
  auto& l = _local[b.cls];
  l.push_back(b.data);
  const uint32_t cache = _pool.classes()[b.cls].cache;
  // Another queue waits: everything in hand goes back at once, so it is not starved by caches.
  if (_pool.has_waiters()) return _pool.give(b.cls, l, static_cast<uint32_t>(l.size()));
  if (l.size() > cache) _pool.give(b.cls, l, static_cast<uint32_t>(l.size()) - cache / 2);
}

}  // namespace rdma
