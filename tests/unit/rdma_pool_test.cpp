// The RDMA transport's device-free pieces of issue 13's memory work (engine/rdma/): the data
// pool's size classes and accounting, per-queue caches that draw and return in batches, a queue
// that finds a class empty waiting and being woken when buffers come back, the completion vector
// chosen per queue and shown in stats, and the "rdma" configuration section's validation. The
// pool here is the real mapping the engine registers on a device; only the registration
// (ibv_reg_mr) needs one.
#include <gtest/gtest.h>

#include <set>
#include <tuple>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/config/config_json.hpp"
#include "engine/rpc/json_codec.hpp"
#include "engine/rdma/data_pool.hpp"
#include "engine/rdma/options.hpp"

namespace {

using namespace rdma;

struct CountingWaiter : DataPool::Waiter {
  int woken = 0;
  void buffers_returned() override { ++woken; }
};

struct Mapped {
  Mapped(uint64_t bytes, uint32_t mdts) { EXPECT_EQ(pool.create(bytes, mdts), ""); }
  DataPool pool;
};

// Two queues' caches on one device's pool (the base is mapped before the caches are built).
struct TwoQueues : Mapped {
  TwoQueues(uint64_t bytes, uint32_t mdts) : Mapped(bytes, mdts) {}
  CountingWaiter wa, wb;
  BufferCache a{pool, wa}, b{pool, wb};
};

TEST(RdmaDataPool, ClassesGrowByEightUpToTwiceMdtsEachAnEqualShare) {
  const auto c = buffer_classes(32ull << 20, 1u << 20);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].size, 16u << 10);
  EXPECT_EQ(c[1].size, 128u << 10);
  EXPECT_EQ(c[2].size, 1u << 20);
  EXPECT_EQ(c[3].size, 2u << 20);  // a Compare of MDTS: data and the medium's copy
  EXPECT_EQ(c[0].count, 512u);
  EXPECT_EQ(c[1].count, 64u);
  EXPECT_EQ(c[2].count, 8u);
  EXPECT_EQ(c[3].count, 4u);
  EXPECT_EQ(c[0].cache, 32u);  // capped at SPDK's buf_cache_size
  EXPECT_EQ(c[1].cache, 8u);   // an eighth of the class
  EXPECT_EQ(c[3].cache, 0u);   // too few to cache: straight from the pool
  const auto small = buffer_classes(4ull << 20, 128u << 10);
  ASSERT_EQ(small.size(), 3u);
  EXPECT_EQ(small[2].size, 256u << 10);
  // A pool too small for one buffer of a class still gets one: every size can be served.
  const auto tiny = buffer_classes(1ull << 20, 16u << 20);
  EXPECT_EQ(tiny.back().size, 32u << 20);
  EXPECT_EQ(tiny.back().count, 1u);
}

TEST(RdmaDataPool, PinnedBytesAreThePoolNotPerQueue) {
  DataPool pool;
  ASSERT_EQ(pool.create(32ull << 20, 1u << 20), "");
  // 512×16K + 64×128K + 8×1M + 4×2M: the configured 32 MiB, whatever the number of queues.
  EXPECT_EQ(pool.bytes(), size_t{32} << 20);
  EXPECT_EQ(pool.describe(), "32MiB (512x16KiB 64x128KiB 8x1MiB 4x2MiB)");
  EXPECT_EQ(pool.class_for(4096), 0u);
  EXPECT_EQ(pool.class_for(16 << 10), 0u);
  EXPECT_EQ(pool.class_for((16 << 10) + 1), 1u);
  EXPECT_EQ(pool.class_for(2u << 20), 3u);
  EXPECT_EQ(pool.class_for((2u << 20) + 1), 4u);  // none: prepare refuses transfers over MDTS
}

TEST(RdmaDataPool, CachesDrawInBatchesAndGiveBackBeyondTheirShare) {
  DataPool pool;
  ASSERT_EQ(pool.create(32ull << 20, 1u << 20), "");
  CountingWaiter w;
  std::set<uint8_t*> seen;
  {
    BufferCache cache(pool, w);
    std::vector<BufferCache::Buffer> out;
    for (int i = 0; i < 100; ++i) {
      auto b = cache.get(4096);
      ASSERT_NE(b.data, nullptr);
      EXPECT_EQ(b.size, 16u << 10);
      EXPECT_GE(b.data, pool.base());
      EXPECT_LT(b.data, pool.base() + pool.bytes());
      EXPECT_TRUE(seen.insert(b.data).second) << "a buffer handed out twice";
      out.push_back(b);
    }
    // Refills of half a cache (16): the pool lost only what is out plus the cache's remainder.
    EXPECT_EQ(pool.free_count(0), 512u - 100u - cache.held(0));
    EXPECT_LT(cache.held(0), 16u);
    for (const auto& b : out) cache.put(b);
    EXPECT_LE(cache.held(0), 32u);  // at most its cache; the rest went back
    EXPECT_EQ(pool.free_count(0) + cache.held(0), 512u);
  }
  EXPECT_EQ(pool.free_count(0), 512u);  // the cache's destruction returns everything
  EXPECT_EQ(w.woken, 0);
}

TEST(RdmaDataPool, AnExhaustedClassMakesTheQueueWaitUntilBuffersReturn) {
  TwoQueues q(32ull << 20, 1u << 20);
  auto [pool, a, b, wb] = std::tie(q.pool, q.a, q.b, q.wb);
  std::vector<BufferCache::Buffer> held;
  for (;;) {  // queue a takes every 2 MiB buffer
    auto x = a.get(1536u << 10);
    if (!x.data) break;
    held.push_back(x);
  }
  EXPECT_EQ(held.size(), 4u);
  EXPECT_EQ(b.get(2u << 20).data, nullptr);  // b waits, it does not fail
  EXPECT_TRUE(pool.has_waiters());
  EXPECT_EQ(wb.woken, 0);
  EXPECT_NE(b.get(4096).data, nullptr);  // other classes are unaffected
  a.put(held.back());
  held.pop_back();
  EXPECT_EQ(wb.woken, 1);  // woken once, and no longer registered
  EXPECT_FALSE(pool.has_waiters());
  auto got = b.get(2u << 20);
  ASSERT_NE(got.data, nullptr);
  EXPECT_EQ(got.size, 2u << 20);
  b.put(got);
  for (const auto& x : held) a.put(x);
  EXPECT_EQ(wb.woken, 1);
}

TEST(RdmaDataPool, WaitersPresentMakeCachesGiveEverythingBack) {
  TwoQueues q(2ull << 20, 128u << 10);
  auto [pool, a, b, wb] = std::tie(q.pool, q.a, q.b, q.wb);
  const uint32_t n = pool.classes()[0].count;
  std::vector<BufferCache::Buffer> held;
  for (uint32_t i = 0; i < n; ++i) held.push_back(a.get(4096));
  ASSERT_NE(held.back().data, nullptr);
  EXPECT_EQ(b.get(4096).data, nullptr);
  a.put(held.back());  // would stay in a's cache without a waiter
  EXPECT_EQ(a.held(0), 0u);
  EXPECT_EQ(wb.woken, 1);
  EXPECT_NE(b.get(4096).data, nullptr);
}

TEST(RdmaCompVector, SpreadByQueueIdOrPinned) {
  EXPECT_EQ(choose_comp_vector(-1, 0, 4), 0);
  EXPECT_EQ(choose_comp_vector(-1, 1, 4), 1);
  EXPECT_EQ(choose_comp_vector(-1, 5, 4), 1);
  EXPECT_EQ(choose_comp_vector(2, 0, 4), 2);
  EXPECT_EQ(choose_comp_vector(2, 7, 4), 2);
  EXPECT_EQ(choose_comp_vector(6, 1, 4), 2);   // beyond the device's vectors: wraps
  EXPECT_EQ(choose_comp_vector(-1, 3, 1), 0);  // soft-RoCE has one
  EXPECT_EQ(choose_comp_vector(3, 3, 0), 0);
}

// ctl stats shows each RDMA queue's vector; TCP queues have none (the key is left out).
TEST(RdmaCompVector, ShownPerQueueInStats) {
  stats::Snapshot snap;
  snap.queues.resize(2);
  snap.queues[0].io_mechanism = "rdma";
  snap.queues[0].comp_vector = 1;
  snap.queues[1].io_mechanism = "epoll";
  const auto j = control::snapshot_json(snap);
  EXPECT_EQ(j["queues"][0]["comp_vector"], 1);
  EXPECT_FALSE(j["queues"][1].contains("comp_vector"));
  const auto back = control::snapshot_from_json(j);
  ASSERT_EQ(back.queues.size(), 2u);
  EXPECT_EQ(back.queues[0].comp_vector, 1);
  EXPECT_EQ(back.queues[1].comp_vector, -1);
}

TEST(RdmaConfig, SectionParsesSizesAndRefusesBadValuesAtTheirPaths) {
  const auto ok = control::parse_config(R"({"rdma":{"data_pool_bytes":"64MiB","use_srq":true,"srq_size":512,
                                            "comp_vector":3}})");
  ASSERT_TRUE(ok.errors.empty()) << ok.errors[0].path << ": " << ok.errors[0].message;
  EXPECT_EQ(ok.config.rdma.data_pool_bytes, 64ull << 20);
  EXPECT_TRUE(ok.config.rdma.use_srq);
  EXPECT_EQ(ok.config.rdma.srq_size, 512u);
  EXPECT_EQ(ok.config.rdma.comp_vector, 3);
  const auto bad = control::parse_config(R"({"rdma":{"data_pool_bytes":"4KiB","srq_size":100,
                                             "comp_vector":-2,"srq":1}})");
  std::set<std::string> paths;
  for (const auto& e : bad.errors) paths.insert(e.path);
  EXPECT_EQ(paths, (std::set<std::string>{"$.rdma.data_pool_bytes", "$.rdma.srq_size", "$.rdma.comp_vector",
                                          "$.rdma.srq"}));
  const auto defaults = control::RdmaConfig{};
  EXPECT_EQ(defaults.data_pool_bytes, 32ull << 20);
  EXPECT_FALSE(defaults.use_srq);
  EXPECT_EQ(defaults.srq_size, 1024u);
  EXPECT_EQ(defaults.comp_vector, -1);
}

}  // namespace
