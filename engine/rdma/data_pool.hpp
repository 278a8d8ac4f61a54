#pragma once
// Command data buffers shared by the queues of one RDMA device (as SPDK's transport-wide buffer
// pool with per-poll-group caches): one mapping, registered once on the device's PD, carved in
// a few size classes (16 KiB, ×8 steps, up to 2 × MDTS for Compare's scratch half), each class an
// equal share of data_pool_bytes. Queues draw through a BufferCache of their own: no lock and
// no allocation per command; the shared free lists are locked once per batch. A queue that finds
// a class empty registers as a waiter and is woken (buffers_returned) when buffers come back.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rdma {

struct BufferClass {
  uint32_t size = 0;   // bytes per buffer
  uint32_t count = 0;  // buffers in the pool
  uint32_t cache = 0;  // most a queue keeps for itself
};

// The classes for a pool of pool_bytes serving transfers up to mdts_bytes (pure: unit-tested).
std::vector<BufferClass> buffer_classes(uint64_t pool_bytes, uint32_t mdts_bytes);

class DataPool {
 public:
  struct Waiter {
    virtual void buffers_returned() = 0;  // called with the pool's lock held: only schedule
   protected:
    ~Waiter() = default;
  };

  DataPool() = default;
  ~DataPool();
  DataPool(const DataPool&) = delete;
  DataPool& operator=(const DataPool&) = delete;

  // Maps the classes' buffers; "" or why not.
  std::string create(uint64_t pool_bytes, uint32_t mdts_bytes);
  uint8_t* base() const { return _base; }
  size_t bytes() const { return _len; }
  const std::vector<BufferClass>& classes() const { return _classes; }
  // The smallest class holding need bytes; classes().size() when none does.
  uint32_t class_for(uint32_t need) const;
  std::string describe() const;  // "32MiB (512x16KiB 64x128KiB …)" for logs

  // Moves up to n free buffers of class c into out; none: w (if given) is woken when some
  // come back. Returns how many were moved.
  uint32_t take(uint32_t c, uint32_t n, std::vector<uint8_t*>& out, Waiter* w);
  // Gives back the last n buffers of in (n = all when waiters wait) and wakes the waiters.
  void give(uint32_t c, std::vector<uint8_t*>& in, uint32_t n);
  void forget(Waiter* w);
  bool has_waiters() const { return _has_waiters.load(std::memory_order_relaxed); }
  uint32_t free_count(uint32_t c) const;

 private:
  std::vector<BufferClass> _classes;
  std::vector<std::vector<uint8_t*>> _free;  // per class, capacity = count: never reallocates
  uint8_t* _base = nullptr;
  size_t _len = 0;
  mutable std::mutex _mu;  // per batch, never per command
  std::vector<Waiter*> _waiters;
  std::atomic<bool> _has_waiters{false};
};

// One queue's buffers in hand, per class, refilled from and returned to the pool in batches.
class BufferCache {
 public:
  struct Buffer {
    uint8_t* data = nullptr;
    uint32_t cls = 0;
    uint32_t size = 0;
  };
  BufferCache(DataPool& pool, DataPool::Waiter& waiter);
  ~BufferCache();  // everything back to the pool (after the queue's backend I/O has ended)
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;

  // A buffer of at least need bytes, or data == nullptr: the pool is exhausted for that size
  // and the waiter will be woken when buffers return.
  Buffer get(uint32_t need);
  void put(const Buffer& b);
  // Keeps b without returning anything now (a queue being destroyed; its I/O may still run).
  void keep(const Buffer& b) { _local[b.cls].push_back(b.data); }
  uint32_t held(uint32_t cls) const { return static_cast<uint32_t>(_local[cls].size()); }

 private:
  DataPool& _pool;
  DataPool::Waiter& _waiter;
  std::vector<std::vector<uint8_t*>> _local;
};

}  // namespace rdma
