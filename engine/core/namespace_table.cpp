// The namespace table and its reclamation (namespace_table.hpp).
#include "engine/core/namespace_table.hpp"

#include <algorithm>

namespace core {

uint8_t NamespaceTable::this_thread_shard() {
  static std::atomic<unsigned> next{0};
  thread_local const uint8_t shard = static_cast<uint8_t>(next.fetch_add(1, std::memory_order_relaxed) % shard_count);
  return shard;
}

int64_t NamespaceTable::holds_in(unsigned gen) const {
  int64_t n = 0;
  for (const auto& s : _shards) n += s.holds[gen].load();
  return n;
}

std::vector<uint32_t> NamespaceTable::active_nsids() const {
  std::vector<uint32_t> ids;
  for (uint32_t i = 1; i <= max_nsid; ++i)
    if (active(i)) ids.push_back(i);
  return ids;
}

bool NamespaceTable::add(std::unique_ptr<Namespace> ns) {
  const uint32_t id = ns->nsid();
  std::lock_guard lk(_mutex);
  if (id < 1 || id > max_nsid || _owned[id]) return false;
  _slots[id].store(ns.get(), std::memory_order_release);
  _owned[id] = std::move(ns);
  reclaim_locked();
  return true;
}

bool NamespaceTable::remove(uint32_t nsid) {
  std::lock_guard lk(_mutex);
  if (nsid < 1 || nsid > max_nsid || !_owned[nsid]) return false;
  _slots[nsid].store(nullptr);  // seq_cst: before the epoch is read
  _retired.push_back({std::move(_owned[nsid]), _epoch.load()});
  reclaim_locked();
  return true;
}

size_t NamespaceTable::reclaim() {
  std::lock_guard lk(_mutex);
  return reclaim_locked();
}

size_t NamespaceTable::reclaim_locked() {
  while (!_retired.empty()) {
    const uint64_t e = _epoch.load();
    std::erase_if(_retired, [e](const Retired& r) { return r.epoch + 2 <= e; });
    // Advancing reuses the parity of generation e-1: only once no command holds one of it.
    if (_retired.empty() || holds_in(static_cast<unsigned>((e - 1) & 1)) != 0) break;
    _epoch.store(e + 1);
  }
  return _retired.size();
}

}  // namespace core
