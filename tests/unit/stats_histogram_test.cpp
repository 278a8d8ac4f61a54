// Latency histograms: the bucket layout, percentiles against injected values, interval
// arithmetic, a reader racing the writer, the bcc-style rendering, and record()'s cost.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/stats/histogram.hpp"
#include "engine/stats/histogram_data.hpp"
#include "engine/stats/histogram_layout.hpp"
#include "engine/stats/print.hpp"

namespace {

namespace hl = stats::histogram_layout;
using stats::Histogram;
using stats::HistogramData;

constexpr uint64_t us = 1000;
constexpr uint64_t ms = 1000 * us;

void expect_within(double got, double want, double rel, const char* what) {
  EXPECT_NEAR(got, want, want * rel) << what << ": got " << got << " want " << want;
}

// Exact percentile of sorted samples by the same rank convention as HistogramData.
uint64_t exact_percentile(const std::vector<uint64_t>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// ---- Layout

TEST(HistogramLayout, EveryValueFallsInsideItsBucket) {
  auto check = [](uint64_t v) {
    size_t i = hl::bucket_of(v);
    ASSERT_LT(i, hl::buckets) << v;
    EXPECT_LE(hl::lower_bound(i), v) << v;
    EXPECT_LT(v, hl::upper_bound(i)) << v;
  };
  for (uint64_t v = 0; v < 200'000; ++v) check(v);
  for (unsigned b = 1; b < hl::max_bits; ++b) {
    uint64_t p = uint64_t{1} << b;
    check(p - 1);
    check(p);
    check(p + 1);
  }
  std::mt19937_64 rng(42);
  for (int n = 0; n < 1'000'000; ++n) check(rng() & hl::max_trackable_ns);
}

TEST(HistogramLayout, BucketsAreContiguousMonotonicAndNarrow) {
  EXPECT_EQ(hl::lower_bound(0), 0u);
  for (size_t i = 0; i + 1 < hl::buckets; ++i) {
    EXPECT_EQ(hl::upper_bound(i), hl::lower_bound(i + 1)) << i;
    EXPECT_EQ(hl::bucket_of(hl::lower_bound(i)), i);
    EXPECT_EQ(hl::bucket_of(hl::upper_bound(i) - 1), i);
    // Relative width: at most 1/sub_count of the lower bound (the percentile error bound).
    if (i >= 2 * hl::sub_count) {
      EXPECT_LE(hl::width(i) * hl::sub_count, hl::lower_bound(i)) << i;
    }
  }
  size_t prev = 0;
  for (uint64_t v = 1; v < (uint64_t{1} << 41); v = v * 5 / 4 + 1) {
    size_t i = hl::bucket_of(v);
    EXPECT_GE(i, prev) << v;
    prev = i;
  }
}

TEST(HistogramLayout, MaxValueAndBeyondLandInTheLastBucket) {
  EXPECT_EQ(hl::bucket_of(hl::max_trackable_ns), hl::buckets - 1);
  EXPECT_EQ(hl::bucket_of(hl::max_trackable_ns + 1), hl::buckets - 1);
  EXPECT_EQ(hl::bucket_of(UINT64_MAX), hl::buckets - 1);
  EXPECT_EQ(hl::upper_bound(hl::buckets - 1), uint64_t{1} << hl::max_bits);
  EXPECT_EQ(hl::buckets, 1152u);  // 36 rows of 32: if this changes, stored data changes format
}

// ---- Percentiles against injected values

TEST(Histogram, SingleValueIsExact) {
  Histogram h;
  for (int n = 0; n < 10'000; ++n) h.record(50 * us);
  HistogramData d = h.read();
  EXPECT_EQ(d.count, 10'000u);
  EXPECT_EQ(d.min_ns, 50 * us);
  EXPECT_EQ(d.max_ns, 50 * us);
  expect_within(d.percentile(50), 50 * us, 0.03, "p50");
  expect_within(d.percentile(99), 50 * us, 0.03, "p99");
  expect_within(d.percentile(99.9), 50 * us, 0.03, "p99.9");
  EXPECT_DOUBLE_EQ(d.mean(), 50.0 * us);
}

TEST(Histogram, BimodalTenMicrosecondsAndOneMillisecond) {
  Histogram h;
  for (int n = 0; n < 9'000; ++n) h.record(10 * us);
  for (int n = 0; n < 1'000; ++n) h.record(1 * ms);
  HistogramData d = h.read();
  expect_within(d.percentile(50), 10 * us, 0.03, "p50");
  expect_within(d.percentile(89), 10 * us, 0.03, "p89");
  expect_within(d.percentile(95), 1 * ms, 0.03, "p95");
  expect_within(d.percentile(99), 1 * ms, 0.03, "p99");
  expect_within(d.mean(), 0.9 * 10 * us + 0.1 * ms, 1e-9, "mean");
}

TEST(Histogram, UniformOneToHundredMicroseconds) {
  Histogram h;
  std::vector<uint64_t> all;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> dist(1 * us, 100 * us);
  for (int n = 0; n < 100'000; ++n) {
    uint64_t v = dist(rng);
    h.record(v);
    all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  HistogramData d = h.read();
  expect_within(d.percentile(50), 50.5 * us, 0.03, "p50");
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9}) {
    // Smooth distribution: interpolation is far better than the sub-bucket width.
    expect_within(d.percentile(p), static_cast<double>(exact_percentile(all, p)), 0.005, "uniform");
  }
}

TEST(Histogram, AnyDistributionWithinOneSubBucket) {
  // Log-uniform 100 ns .. 10 s with a few spikes: the worst case is a spike, bounded by one
  // sub-bucket width (1/16 of the value).
  Histogram h;
  std::vector<uint64_t> all;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> exp10(2.0, 10.0);
  for (int n = 0; n < 50'000; ++n) {
    uint64_t v = n % 10 == 0 ? 123'457 : static_cast<uint64_t>(std::pow(10.0, exp10(rng)));
    h.record(v);
    all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  HistogramData d = h.read();
  for (double p = 0.5; p < 100.0; p += 0.5) {
    double want = static_cast<double>(exact_percentile(all, p));
    EXPECT_NEAR(d.percentile(p), want, want / static_cast<double>(hl::sub_count) + 1) << "p" << p;
  }
  EXPECT_EQ(d.percentile(0), static_cast<double>(all.front()));
  EXPECT_EQ(d.percentile(100), static_cast<double>(all.back()));
}

TEST(Histogram, EmptyRecordNAndHugeValues) {
  Histogram h;
  HistogramData empty = h.read();
  EXPECT_TRUE(empty.counts.empty());
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.percentile(50), 0.0);
  EXPECT_EQ(empty.mean(), 0.0);

  Histogram a, b;
  for (int n = 0; n < 7; ++n) a.record(3 * us);
  b.record_n(3 * us, 7);
  HistogramData da = a.read(), db = b.read();
  EXPECT_EQ(da.counts, db.counts);
  EXPECT_EQ(da.sum_ns, db.sum_ns);
  EXPECT_EQ(da.min_ns, db.min_ns);
  EXPECT_EQ(da.max_ns, db.max_ns);

  Histogram big;
  big.record(UINT64_MAX / 4);  // hours: clamped into the last bucket, max kept exactly
  big.record(5);
  HistogramData d = big.read();
  EXPECT_EQ(d.counts[hl::buckets - 1], 1u);
  EXPECT_EQ(d.max_ns, UINT64_MAX / 4);
  EXPECT_EQ(d.percentile(100), static_cast<double>(UINT64_MAX / 4));
  EXPECT_EQ(d.percentile(10), 5.0);
}

// ---- Merge and since

TEST(HistogramData, MergeAddsEverything) {
  Histogram a, b;
  for (int n = 0; n < 100; ++n) a.record(10 * us);
  for (int n = 0; n < 300; ++n) b.record(2 * ms);
  HistogramData m = a.read();
  m.merge(b.read());
  EXPECT_EQ(m.count, 400u);
  EXPECT_EQ(m.sum_ns, 100 * 10 * us + 300 * 2 * ms);
  EXPECT_EQ(m.min_ns, 10 * us);
  EXPECT_EQ(m.max_ns, 2 * ms);
  expect_within(m.percentile(20), 10 * us, 0.03, "merged p20");
  expect_within(m.percentile(50), 2 * ms, 0.03, "merged p50");

  HistogramData e;
  e.merge(a.read());
  EXPECT_EQ(e.count, 100u);
  HistogramData same = a.read();
  same.merge(HistogramData{});
  EXPECT_EQ(same.count, 100u);
}

TEST(HistogramData, SinceIsTheInterval) {
  Histogram h;
  for (int n = 0; n < 1'000; ++n) h.record(20 * us);
  HistogramData t1 = h.read();
  // Interval 1: a new maximum (exact) and values in the middle.
  Histogram alone;
  for (uint64_t v : {30 * us, 40 * us, 5 * ms}) {
    h.record(v);
    alone.record(v);
  }
  HistogramData t2 = h.read();
  HistogramData d = t2.since(t1);
  HistogramData want = alone.read();
  EXPECT_EQ(d.counts, want.counts);
  EXPECT_EQ(d.count, 3u);
  EXPECT_EQ(d.sum_ns, want.sum_ns);
  EXPECT_EQ(d.max_ns, 5 * ms);  // the cumulative max grew: exact
  // min not derivable exactly: the bucket of 30 us, clamped by the cumulative min.
  EXPECT_LE(d.min_ns, 30 * us);
  EXPECT_GE(d.min_ns, hl::lower_bound(hl::bucket_of(30 * us)));

  // Interval 2: nothing new at the extremes: both estimated from buckets, within one bucket.
  for (int n = 0; n < 10; ++n) h.record(100 * us);
  HistogramData d2 = h.read().since(t2);
  EXPECT_EQ(d2.count, 10u);
  EXPECT_GE(d2.min_ns, hl::lower_bound(hl::bucket_of(100 * us)));
  EXPECT_LE(d2.max_ns, hl::upper_bound(hl::bucket_of(100 * us)) - 1);
  EXPECT_LE(d2.min_ns, d2.max_ns);
  expect_within(d2.percentile(50), 100 * us, 1.0 / hl::sub_count, "interval p50");

  // Interval 3: a new minimum is exact.
  h.record(1 * us);
  EXPECT_EQ(h.read().since(t2).min_ns, 1 * us);

  // Nothing happened: empty. Earlier empty: everything.
  EXPECT_EQ(t2.since(t2).count, 0u);
  EXPECT_TRUE(t2.since(t2).counts.empty());
  EXPECT_EQ(t2.since(HistogramData{}).count, t2.count);
  EXPECT_EQ(HistogramData{}.since(t2).count, 0u);
}

TEST(HistogramData, IntervalsSumToTheWhole) {
  Histogram h;
  HistogramData sum, prev;
  std::mt19937_64 rng(3);
  for (int interval = 0; interval < 20; ++interval) {
    for (int n = 0; n < 500; ++n) h.record(rng() % (10 * ms));
    HistogramData now = h.read();
    sum.merge(now.since(prev));
    prev = now;
  }
  HistogramData all = h.read();
  EXPECT_EQ(sum.counts, all.counts);
  EXPECT_EQ(sum.count, all.count);
  EXPECT_EQ(sum.sum_ns, all.sum_ns);
  EXPECT_EQ(sum.min_ns, all.min_ns);  // the first interval holds the true extremes
  EXPECT_EQ(sum.max_ns, all.max_ns);
}

// ---- One writer, a reader racing it

TEST(Histogram, ReaderRacingTheWriterSeesConsistentMonotonicData) {
  Histogram h;
  constexpr uint64_t total = 2'000'000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    std::mt19937_64 rng(5);
    for (uint64_t n = 0; n < total; ++n) h.record(1 * us + rng() % (500 * us));
    done.store(true);
  });
  HistogramData prev;
  uint64_t reads = 0;
  while (!done.load() || reads == 0) {
    HistogramData d = h.read();
    ++reads;
    if (d.count == 0) continue;
    uint64_t sum = 0;
    for (uint64_t c : d.counts) sum += c;
    ASSERT_EQ(sum, d.count);
    ASSERT_LE(d.min_ns, d.max_ns);
    double p99 = d.percentile(99);
    ASSERT_GE(p99, static_cast<double>(d.min_ns));
    ASSERT_LE(p99, static_cast<double>(d.max_ns));
    if (!prev.counts.empty()) {
      ASSERT_GE(d.count, prev.count);
      ASSERT_GE(d.sum_ns, prev.sum_ns);
      for (size_t i = 0; i < hl::buckets; ++i) ASSERT_GE(d.counts[i], prev.counts[i]) << i;
      EXPECT_EQ(d.since(prev).count, d.count - prev.count);
    }
    prev = std::move(d);
  }
  writer.join();
  HistogramData last = h.read();
  EXPECT_EQ(last.count, total);
  EXPECT_GE(last.min_ns, 1 * us);
  EXPECT_LT(last.max_ns, 501 * us);
  std::printf("reader made %llu reads while the writer recorded %llu samples\n",
              static_cast<unsigned long long>(reads), static_cast<unsigned long long>(total));
}

// ---- Rendering

TEST(Print, Log2HistogramLikeLibbpfTools) {
  Histogram h;
  for (int n = 0; n < 10; ++n) h.record(3 * us);   // row 2 -> 3
  for (int n = 0; n < 20; ++n) h.record(5 * us);   // row 4 -> 7
  for (int n = 0; n < 40; ++n) h.record(100 * us);  // row 64 -> 127
  std::string out = stats::log2_hist(h.read(), stats::Unit::usecs);
  const char* want =
      "     usecs               : count    distribution\n"
      "         0 -> 1          : 0        |                                        |\n"
      "         2 -> 3          : 10       |**********                              |\n"
      "         4 -> 7          : 20       |********************                    |\n"
      "         8 -> 15         : 0        |                                        |\n"
      "        16 -> 31         : 0        |                                        |\n"
      "        32 -> 63         : 0        |                                        |\n"
      "        64 -> 127        : 40       |****************************************|\n";
  EXPECT_EQ(out, want);

  std::string stripped = stats::log2_hist(h.read(), stats::Unit::usecs, true);
  EXPECT_EQ(stripped.find("0 -> 1 "), std::string::npos);
  EXPECT_EQ(stripped.substr(stripped.find('\n') + 1, 34), "         2 -> 3          : 10     ");

  EXPECT_EQ(stats::log2_hist(HistogramData{}, stats::Unit::usecs), "");
}

TEST(Print, UnitsAndWideRows) {
  Histogram h;
  h.record(1500 * us);  // 1.5 ms: msecs row "0 -> 1"; usecs row 1024 -> 2047
  std::string msecs = stats::log2_hist(h.read(), stats::Unit::msecs);
  EXPECT_EQ(msecs,
            "     msecs               : count    distribution\n"
            "         0 -> 1          : 1        |****************************************|\n");
  std::string usecs = stats::log2_hist(h.read(), stats::Unit::usecs);
  EXPECT_NE(usecs.find("      1024 -> 2047       : 1        |****"), std::string::npos) << usecs;

  // Beyond row 32 (2^33 ns ~ 8.6 s in nsecs): libbpf-tools widens labels and halves the stars.
  Histogram slow;
  slow.record(uint64_t{1} << 33);
  slow.record(uint64_t{1} << 33);
  slow.record(3);
  std::string wide = stats::log2_hist(slow.read(), stats::Unit::nsecs, true);
  EXPECT_EQ(wide.substr(0, wide.find('\n') + 1),
            "               nsecs                         : count    distribution\n");
  EXPECT_NE(wide.find("          8589934592 -> 17179869183          : 2        |********************|\n"),
            std::string::npos)
      << wide;
  EXPECT_NE(wide.find("                   2 -> 3                    : 1        |**********          |\n"),
            std::string::npos)
      << wide;

  EXPECT_EQ(stats::parse_unit("usecs"), stats::Unit::usecs);
  EXPECT_EQ(stats::parse_unit("ms"), stats::Unit::msecs);
  EXPECT_FALSE(stats::parse_unit("seconds").has_value());
}

TEST(Print, DurationsAndPercentileLine) {
  EXPECT_EQ(stats::format_duration(0), "0ns");
  EXPECT_EQ(stats::format_duration(850), "850ns");
  EXPECT_EQ(stats::format_duration(999.4), "999ns");
  EXPECT_EQ(stats::format_duration(999.6), "1.00us");
  EXPECT_EQ(stats::format_duration(12'345), "12.3us");
  EXPECT_EQ(stats::format_duration(123'456), "123us");
  EXPECT_EQ(stats::format_duration(4'560'000), "4.56ms");
  EXPECT_EQ(stats::format_duration(1.2e9), "1.20s");

  Histogram one;
  for (int n = 0; n < 1000; ++n) one.record(50 * us);
  EXPECT_EQ(stats::percentile_line(one.read()), "p50 50.0us p99 50.0us p99.9 50.0us max 50.0us");
  EXPECT_EQ(stats::percentile_line(HistogramData{}), "p50 - p99 - p99.9 - max -");

  // A spike that is not the maximum: within one sub-bucket (50 us .. 50.175 us here).
  Histogram h;
  for (int n = 0; n < 1000; ++n) h.record(50 * us);
  h.record(2 * ms);
  HistogramData d = h.read();
  EXPECT_EQ(stats::percentile_line(d), "p50 " + stats::format_duration(d.percentile(50)) + " p99 " +
                                           stats::format_duration(d.percentile(99)) + " p99.9 " +
                                           stats::format_duration(d.percentile(99.9)) + " max 2.00ms");
  for (double p : {50.0, 99.0, 99.9}) expect_within(d.percentile(p), 50 * us, 1.0 / hl::sub_count, "spike");
  const double ps[] = {90, 99.99};
  std::string custom = stats::percentile_line(d, ps);
  EXPECT_EQ(custom.substr(0, 4), "p90 ");
  EXPECT_NE(custom.find(" p99.99 2.00ms max 2.00ms"), std::string::npos) << custom;
}

// ---- Cost (prints, does not gate: sanitizer builds are several times slower)

TEST(Histogram, RecordCost) {
  Histogram h;
  std::vector<uint64_t> values(4096);
  std::mt19937_64 rng(9);
  for (uint64_t& v : values) v = 5 * us + rng() % (200 * us);  // spread over ~100 buckets
  constexpr int rounds = 5;
  constexpr size_t per_round = 2'000'000;
  double best_spread = 1e9, best_same = 1e9;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (size_t n = 0; n < per_round; ++n) h.record(values[n & 4095]);
    auto t1 = std::chrono::steady_clock::now();
    for (size_t n = 0; n < per_round; ++n) h.record(20 * us + (n & 7));
    auto t2 = std::chrono::steady_clock::now();
    best_spread = std::min(best_spread, std::chrono::duration<double, std::nano>(t1 - t0).count() / per_round);
    best_same = std::min(best_same, std::chrono::duration<double, std::nano>(t2 - t1).count() / per_round);
  }
  EXPECT_EQ(h.count(), 2 * rounds * per_round);
  std::printf("Histogram::record: %.2f ns (values over ~100 buckets), %.2f ns (one bucket)\n",
              best_spread, best_same);
  RecordProperty("record_ns_spread", std::to_string(best_spread));
  RecordProperty("record_ns_same", std::to_string(best_same));
}

}  // namespace
