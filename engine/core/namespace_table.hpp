#pragma once
// A subsystem's namespaces by NSID, read on every command without a lock, and freed once no
// command holds them (issue 15, defect 5: removed namespaces used to live as long as the
// subsystem, so an add/remove loop grew without bound).
//
// The scheme is two-generation reference counting, in the manner of SRCU and the kernel's
// percpu_ref: a command takes a hold in the current generation (an atomic add on a counter
// shard of its thread's, no lock, no allocation) before it reads the slot, and drops it when
// it completes. Removing a namespace empties its slot and retires the object at epoch E. Only
// commands of generations E-1 and E can have read it, so the control path advances the epoch
// each time the generation before the current one has drained, and frees what was retired at
// E once the epoch reaches E+2. Commands taken after the slot was emptied read null, so the
// data path never waits on the control path and a retired namespace is freed within two
// command lifetimes of the last I/O that could see it.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/core/namespace.hpp"

namespace core {

inline constexpr uint32_t max_nsid = 1024;

class NamespaceTable;

// What a command holds while it uses a namespace (kept in its Request); table is null when
// nothing is held.
struct NsHold {
  NamespaceTable* table = nullptr;
  uint8_t shard = 0;
  uint8_t gen = 0;
};

class NamespaceTable {
 public:
  NamespaceTable() = default;
  NamespaceTable(const NamespaceTable&) = delete;
  NamespaceTable& operator=(const NamespaceTable&) = delete;

  // Data path: the namespace at nsid with a hold on it, or nullptr (and no hold).
  Namespace* acquire(uint32_t nsid, NsHold& h) {
    if (nsid < 1 || nsid > max_nsid) return nullptr;
    h.shard = this_thread_shard();
    h.gen = static_cast<uint8_t>(_epoch.load() & 1);
    _shards[h.shard].holds[h.gen].fetch_add(1);  // seq_cst: ordered before the slot's load
    Namespace* ns = _slots[nsid].load();
    if (!ns) return _shards[h.shard].holds[h.gen].fetch_sub(1, std::memory_order_release), nullptr;
    h.table = this;
    return ns;
  }
  // Drops h's hold, if any (on whichever thread the command completes).
  static void release(NsHold& h) {
    if (!h.table) return;
    h.table->_shards[h.shard].holds[h.gen].fetch_sub(1, std::memory_order_release);
    h.table = nullptr;
  }
  // Whether nsid is active now; for checks that do not touch the namespace.
  bool active(uint32_t nsid) const { return nsid >= 1 && nsid <= max_nsid && _slots[nsid].load(std::memory_order_acquire); }

  // Control path.
  std::vector<uint32_t> active_nsids() const;
  bool add(std::unique_ptr<Namespace> ns);  // false if the NSID is taken or out of range
  bool remove(uint32_t nsid);               // false if there is none
  // Frees the retired namespaces no command can hold any more; returns how many are left.
  size_t reclaim();

 private:
  static constexpr unsigned shard_count = 16;
  struct alignas(64) Shard {
    std::array<std::atomic<int64_t>, 2> holds{};
  };
  struct Retired {
    std::unique_ptr<Namespace> ns;
    uint64_t epoch;  // the epoch when its slot was emptied
  };

  static uint8_t this_thread_shard();
  int64_t holds_in(unsigned gen) const;
  size_t reclaim_locked();

  std::array<std::atomic<Namespace*>, max_nsid + 1> _slots{};
  std::atomic<uint64_t> _epoch{2};
  std::array<Shard, shard_count> _shards{};
  mutable std::mutex _mutex;  // the control path: owners and the retired list
  std::array<std::unique_ptr<Namespace>, max_nsid + 1> _owned{};
  std::vector<Retired> _retired;
};

// A hold for the length of a scope (admin commands that read a namespace while they run).
class NsRef {
 public:
  NsRef(NamespaceTable& t, uint32_t nsid) : _ns(t.acquire(nsid, _h)) {}
  ~NsRef() { NamespaceTable::release(_h); }
  NsRef(const NsRef&) = delete;
  NsRef& operator=(const NsRef&) = delete;
  explicit operator bool() const { return _ns != nullptr; }
  const Namespace* operator->() const { return _ns; }
  const Namespace& operator*() const { return *_ns; }

 private:
  NsHold _h;
  Namespace* _ns;
};

}  // namespace core
