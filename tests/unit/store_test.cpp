// data::Store: schema and migrations, profiles, downsampling, histogram merge, events,
// retention, export, the writer's drop-oldest accounting.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/store/store.hpp"
#include "data/store/writer.hpp"
#include "data/store_version.hpp"
#include "engine/stats/histogram_layout.hpp"
#include "support/synthetic_snapshot.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int64_t sec = 1'000'000'000;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("store_test." + std::to_string(getpid()) + "." +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    path = (dir / "sub" / "t.db").string();
  }
  void TearDown() override { fs::remove_all(dir); }
  std::unique_ptr<data::Store> open() {
    std::string error;
    auto s = data::Store::open(path, error);
    EXPECT_TRUE(s) << error;
    return s;
  }
  int64_t new_run(data::Store& s, int64_t start = 1000 * sec) {
    std::string error;
    data::RunInfo info;
    info.start_ns = start;
    info.engine_version = "test";
    info.profile_json = R"({"threading":{"mode":"bound"}})";
    int64_t run = s.begin_run(info, error);
    EXPECT_GT(run, 0) << error;
    return run;
  }
  fs::path dir;
  std::string path;
};

stats::Snapshot counter_snapshot(uint64_t seq, int64_t time_ns, uint64_t commands) {
  stats::Snapshot s;
  s.seq = seq;
  s.time_ns = time_ns;
  s.interval_ns = sec;
  s.total.commands = commands;
  return s;
}

void set_user_version(const std::string& path, int v) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, ("PRAGMA user_version = " + std::to_string(v)).c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

}  // namespace

TEST_F(StoreTest, CreatesDirectoryWalAndCurrentSchema) {
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(s->schema_version(), data::store_schema_version);
  EXPECT_EQ(s->integrity_check(), "ok");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(StoreTest, ReopenKeepsDataAndDoesNotRemigrate) {
  {
    auto s = open();
    new_run(*s);
  }
  auto s = open();
  EXPECT_EQ(s->list_runs().size(), 1u);
}

TEST_F(StoreTest, NewerSchemaIsRefusedAndLeftAlone) {
  { open(); }
  set_user_version(path, data::store_schema_version + 1);
  std::string error;
  EXPECT_FALSE(data::Store::open(path, error));
  EXPECT_NE(error.find("newer"), std::string::npos) << error;
  EXPECT_NE(error.find(std::to_string(data::store_schema_version + 1)), std::string::npos) << error;
  EXPECT_FALSE(data::Store::open_existing(path, error));
  set_user_version(path, data::store_schema_version);  // untouched: still opens at its version
  EXPECT_TRUE(data::Store::open(path, error)) << error;
}

TEST_F(StoreTest, MissingAndGarbageFilesAreClearErrors) {
  std::string error;
  EXPECT_FALSE(data::Store::open_existing(path, error));
  EXPECT_NE(error.find("no such database"), std::string::npos) << error;
  fs::create_directories(dir);
  const std::string junk = (dir / "junk.db").string();
  std::ofstream(junk) << std::string(8192, 'x');
  EXPECT_FALSE(data::Store::open(junk, error));
  EXPECT_NE(error.find("not an SQLite database"), std::string::npos) << error;
}

TEST_F(StoreTest, ProfilesCrud) {
  auto s = open();
  std::string error;
  EXPECT_FALSE(s->save_profile("", "{}", error));
  ASSERT_TRUE(s->save_profile("b", R"({"v":1})", error)) << error;
  ASSERT_TRUE(s->save_profile("a", R"({"v":2})", error)) << error;
  const auto first = s->load_profile("b");
  ASSERT_TRUE(first);
  usleep(1000);
  ASSERT_TRUE(s->save_profile("b", R"({"v":3})", error));
  const auto again = s->load_profile("b");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->json, R"({"v":3})");
  EXPECT_EQ(again->created_ns, first->created_ns);  // upsert keeps the birth time
  const auto all = s->list_profiles();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "a");
  EXPECT_TRUE(s->delete_profile("a", error));
  EXPECT_FALSE(s->delete_profile("a", error));
  EXPECT_EQ(error, "no profile a");
  EXPECT_FALSE(s->load_profile("a"));
}

TEST_F(StoreTest, SeriesDownsamplingMinMaxAvg) {
  auto s = open();
  const int64_t run = new_run(*s);
  std::vector<stats::Snapshot> snaps;
  for (uint64_t i = 0; i < 100; ++i) snaps.push_back(counter_snapshot(i + 1, (1000 + int64_t(i)) * sec, i));
  std::string error;
  ASSERT_TRUE(s->write_batch(run, snaps, {}, {}, error)) << error;

  auto raw = s->series(run, {"commands", ""}, {}, 0);
  ASSERT_EQ(raw.size(), 100u);
  EXPECT_EQ(raw[42].avg, 42);

  auto pts = s->series(run, {"commands", ""}, {}, 10);
  ASSERT_EQ(pts.size(), 10u);
  for (size_t b = 0; b < 10; ++b) {
    EXPECT_EQ(pts[b].n, 10u);
    EXPECT_EQ(pts[b].min, 10.0 * b);
    EXPECT_EQ(pts[b].max, 10.0 * b + 9);
    EXPECT_DOUBLE_EQ(pts[b].avg, 10.0 * b + 4.5);
  }
  // A sub-range: samples 20..39 in 2 buckets.
  pts = s->series(run, {"commands", ""}, {1020 * sec, 1039 * sec}, 2);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].min, 20);
  EXPECT_EQ(pts[1].max, 39);
  EXPECT_EQ(pts[0].n + pts[1].n, 20u);
  EXPECT_TRUE(s->series(run, {"no_such", ""}, {}, 10).empty());
  const auto names = s->list_series(run);
  EXPECT_NE(std::find(names.begin(), names.end(), data::SeriesKey{"iops", ""}), names.end());
}

// A worker's CPU time and the part of it spent spinning idle are both recorded, so a recorded
// poll-mode run does not read as a saturated worker. The spin is capped by the CPU time, as in
// the live split (stats::cpu_split).
TEST_F(StoreTest, WorkerSpinRecordedBesideItsCpuTime) {
  auto s = open();
  const int64_t run = new_run(*s);
  stats::Snapshot snap = counter_snapshot(1, 1001 * sec, 0);  // interval: 1 s
  stats::WorkerRow poller;
  poller.index = 0;
  poller.cpu_ns = 900'000'000;
  poller.idle_poll_ns = 600'000'000;
  stats::WorkerRow overcounted;  // spin measured past the CPU the kernel charged
  overcounted.index = 1;
  overcounted.cpu_ns = 200'000'000;
  overcounted.idle_poll_ns = 300'000'000;
  snap.workers = {poller, overcounted};
  std::string error;
  ASSERT_TRUE(s->write_batch(run, {snap}, {}, {}, error)) << error;

  const auto value = [&](const char* name, const char* labels) {
    const auto pts = s->series(run, {name, labels}, {}, 0);
    EXPECT_EQ(pts.size(), 1u) << name << "{" << labels << "}";
    return pts.empty() ? -1.0 : pts[0].avg;
  };
  EXPECT_DOUBLE_EQ(value("busy_pct", "worker=0"), 90.0);
  EXPECT_DOUBLE_EQ(value("idle_poll_pct", "worker=0"), 60.0);
  EXPECT_DOUBLE_EQ(value("idle_poll_ns", "worker=0"), 600'000'000.0);
  EXPECT_DOUBLE_EQ(value("busy_pct", "worker=1"), 20.0);
  EXPECT_DOUBLE_EQ(value("idle_poll_pct", "worker=1"), 20.0);
}

TEST_F(StoreTest, HistogramMergeGivesPercentilesOfAllIntervals) {
  namespace hl = stats::histogram_layout;
  auto s = open();
  const int64_t run = new_run(*s);
  // Interval 1: 900 samples at 10 us; interval 2: 100 samples at 1 ms. Merged: p50 near 10 us,
  // p99 near 1 ms, exactly what one histogram of both would say.
  stats::HistogramData expected;
  std::vector<stats::Snapshot> snaps;
  for (int i = 0; i < 2; ++i) {
    auto snap = counter_snapshot(i + 1, (1000 + i) * sec, 0);
    auto& h = snap.total.read_latency;
    h.counts.assign(hl::buckets, 0);
    const uint64_t v = i == 0 ? 10'000 : 1'000'000;
    const uint64_t n = i == 0 ? 900 : 100;
    h.counts[hl::bucket_of(v)] = n;
    h.count = n;
    h.sum_ns = v * n;
    h.min_ns = h.max_ns = v;
    expected.merge(h);
    snaps.push_back(snap);
  }
  std::string error;
  ASSERT_TRUE(s->write_batch(run, snaps, {}, {}, error)) << error;
  const auto merged = s->merge_histograms(run, {"read_latency", ""}, {});
  EXPECT_EQ(merged.count, 1000u);
  EXPECT_EQ(merged.counts, expected.counts);
  EXPECT_EQ(merged.min_ns, 10'000u);
  EXPECT_EQ(merged.max_ns, 1'000'000u);
  EXPECT_DOUBLE_EQ(merged.percentile(50), expected.percentile(50));
  EXPECT_NEAR(merged.percentile(50), 10'000, 10'000 * 0.032);  // within one sub-bucket
  EXPECT_DOUBLE_EQ(merged.percentile(99), expected.percentile(99));
  EXPECT_NEAR(merged.percentile(99), 1'000'000, 1'000'000 * 0.032);
  // Only the first interval.
  const auto first = s->merge_histograms(run, {"read_latency", ""}, {0, 1000 * sec});
  EXPECT_EQ(first.count, 900u);
  EXPECT_DOUBLE_EQ(first.percentile(99), 10'000);
}

TEST_F(StoreTest, SyntheticHistogramsRoundTripExactly) {
  auto s = open();
  const int64_t run = new_run(*s);
  const auto snap = test_support::synthetic_snapshot(1, 1000 * sec, 4);
  std::string error;
  ASSERT_TRUE(s->write_batch(run, {snap}, {}, {}, error)) << error;
  const auto back = s->merge_histograms(run, {"read_latency", "queue=3"}, {});
  EXPECT_EQ(back.counts, snap.queues[2].read_latency.counts);
  EXPECT_EQ(back.sum_ns, snap.queues[2].read_latency.sum_ns);
  EXPECT_EQ(back.percentile(99), snap.queues[2].read_latency.percentile(99));
}

TEST_F(StoreTest, EventsInRangeAndExperimentResults) {
  auto s = open();
  const int64_t run = new_run(*s);
  EXPECT_TRUE(s->add_event(run, 10 * sec, "threading", R"({"mode":"poll"})"));
  std::string error;
  ASSERT_TRUE(s->write_batch(run, {}, {{1, 20 * sec, "connect", R"({"qid":1})"}, {2, 30 * sec, "disconnect", ""}}, {}, error));
  EXPECT_EQ(s->events(run, {}).size(), 3u);
  const auto mid = s->events(run, {15 * sec, 25 * sec});
  ASSERT_EQ(mid.size(), 1u);
  EXPECT_EQ(mid[0].kind, "connect");
  EXPECT_EQ(s->events(run, {25 * sec, 0})[0].detail_json, "{}");
  EXPECT_TRUE(s->save_experiment_result(run, R"({"cell":1,"iops":5})"));
  ASSERT_EQ(s->experiment_results(run).size(), 1u);
}

TEST_F(StoreTest, RunsListEndAndCompare) {
  auto s = open();
  const int64_t a = new_run(*s), b = new_run(*s);
  std::string error;
  ASSERT_TRUE(s->write_batch(a, {counter_snapshot(1, 1000 * sec, 100), counter_snapshot(2, 1001 * sec, 300)}, {}, {}, error));
  ASSERT_TRUE(s->write_batch(b, {counter_snapshot(1, 2000 * sec, 1000)}, {}, {}, error));
  s->end_run(a, 1002 * sec, 7);
  const auto runs = s->list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].end_ns, 1002 * sec);
  EXPECT_EQ(runs[0].dropped_intervals, 7u);
  EXPECT_EQ(runs[0].intervals, 2u);
  EXPECT_EQ(runs[1].end_ns, 0);
  EXPECT_FALSE(s->get_run(99));
  bool found = false;
  for (const auto& r : s->compare(a, b)) {
    if (r.metric != "commands") continue;
    found = true;
    EXPECT_EQ(r.a, 200.0);
    EXPECT_EQ(r.b, 1000.0);
  }
  EXPECT_TRUE(found);
}

TEST_F(StoreTest, RetentionByAgeAndSizeKeepsOpenRuns) {
  auto s = open();
  std::string error;
  std::vector<int64_t> runs;
  for (int r = 0; r < 4; ++r) {
    const int64_t run = new_run(*s, (1000 + r * 100) * sec);
    std::vector<stats::Snapshot> snaps;
    for (int i = 0; i < 20; ++i)
      snaps.push_back(test_support::synthetic_snapshot(i + 1, (1000 + r * 100 + i) * sec, 8));
    ASSERT_TRUE(s->write_batch(run, snaps, {{1, (1000 + r * 100) * sec, "x", "{}"}}, {}, error)) << error;
    if (r < 3) s->end_run(run, (1000 + r * 100 + 20) * sec);
    runs.push_back(run);
  }
  // By age: at t = 1250 s with 100 s max age, run 0 (ended 1020) and run 1 (ended 1120) go.
  auto r = s->apply_retention(100 * sec, 0, 1250 * sec);
  EXPECT_EQ(r.runs_deleted, 2u);
  EXPECT_FALSE(s->get_run(runs[0]));
  EXPECT_FALSE(s->get_run(runs[1]));
  EXPECT_TRUE(s->events(runs[0], {}).empty());
  EXPECT_TRUE(s->series(runs[0], {"iops", ""}, {}, 0).empty());
  ASSERT_TRUE(s->get_run(runs[2]));
  // By size: 1 byte is below anything; the ended run goes, the open one stays.
  r = s->apply_retention(0, 1);
  EXPECT_EQ(r.runs_deleted, 1u);
  EXPECT_FALSE(s->get_run(runs[2]));
  ASSERT_TRUE(s->get_run(runs[3]));
  EXPECT_EQ(s->series(runs[3], {"iops", ""}, {}, 0).size(), 20u);
  EXPECT_LT(r.bytes_after, r.bytes_before);
  EXPECT_EQ(s->integrity_check(), "ok");
  EXPECT_TRUE(s->vacuum(error)) << error;
}

TEST_F(StoreTest, ExportCsvAndJson) {
  auto s = open();
  const int64_t run = new_run(*s);
  std::string error;
  auto snap = test_support::synthetic_snapshot(1, 1000 * sec, 2);
  ASSERT_TRUE(s->write_batch(run, {snap}, {{1, 1000 * sec, "threading", R"({"mode":"poll"})"}}, {}, error));
  std::ostringstream csv;
  ASSERT_TRUE(s->export_csv(run, csv, error)) << error;
  const std::string text = csv.str();
  EXPECT_EQ(text.rfind("time_ns,name,labels,value\n", 0), 0u);
  EXPECT_NE(text.find("1000000000000,commands,queue=2," + std::to_string(snap.queues[1].commands) + "\n"), std::string::npos);
  EXPECT_NE(text.find(",read_latency.p99_ns,queue=1,"), std::string::npos);

  std::ostringstream js;
  ASSERT_TRUE(s->export_json(run, js, error)) << error;
  const auto doc = nlohmann::json::parse(js.str());
  EXPECT_EQ(doc["run"]["id"], run);
  EXPECT_EQ(doc["run"]["profile"]["threading"]["mode"], "bound");
  EXPECT_EQ(doc["events"][0]["detail"]["mode"], "poll");
  bool seen = false;
  for (const auto& ser : doc["series"]) {
    if (ser["name"] == "commands" && ser["labels"].value("queue", "") == "1") {
      seen = true;
      EXPECT_EQ(ser["points"][0][1].get<double>(), static_cast<double>(snap.queues[0].commands));
    }
  }
  EXPECT_TRUE(seen);
  uint64_t total = 0;
  for (const auto& h : doc["histograms"])
    if (h["source"] == "read_latency" && h["labels"].empty())
      for (const auto& b : h["buckets"]) total += b[2].get<uint64_t>();
  EXPECT_EQ(total, snap.total.read_latency.count);
  EXPECT_FALSE(s->export_csv(run + 1, csv, error));
  EXPECT_EQ(error, "no run " + std::to_string(run + 1));
}

TEST_F(StoreTest, WriterDropsOldestWhenFullAndCountsThem) {
  auto s = open();
  const int64_t run = new_run(*s);
  data::WriterOptions wo;
  wo.queue_capacity = 5;
  data::Writer w(*s, run, wo);
  w.pause(true);  // the disk "falls behind"
  for (uint64_t i = 1; i <= 12; ++i) w.submit(counter_snapshot(i, (1000 + int64_t(i)) * sec, i));
  auto st = w.stats();
  EXPECT_EQ(st.submitted, 12u);
  EXPECT_EQ(st.dropped, 7u);
  w.pause(false);
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(w.stats().written, 5u);
  EXPECT_EQ(s->interval_seqs(run), (std::vector<uint64_t>{8, 9, 10, 11, 12}));  // the newest kept
  w.stop();
  EXPECT_EQ(s->get_run(run)->dropped_intervals, 7u);
  EXPECT_NE(s->get_run(run)->end_ns, 0);
}

TEST_F(StoreTest, WriterCommitsSnapshotsAndEvents) {
  auto s = open();
  const int64_t run = new_run(*s);
  uint64_t committed = 0;
  data::WriterOptions wo;
  wo.on_commit = [&committed](uint64_t seq) { committed = seq; };
  {
    data::Writer w(*s, run, wo);
    for (uint64_t i = 1; i <= 50; ++i) w.submit(test_support::synthetic_snapshot(i, (1000 + int64_t(i)) * sec, 4));
    w.submit_event({1, 1001 * sec, "connect", "{}"});
    ASSERT_TRUE(w.flush());
    EXPECT_EQ(w.stats().dropped, 0u);
  }
  EXPECT_EQ(committed, 50u);
  EXPECT_EQ(s->interval_seqs(run).size(), 50u);
  EXPECT_EQ(s->events(run, {}).size(), 1u);
}

namespace {

// eBPF probes' histograms and counters (Snapshot::probes, probe_counters) stored beside the
// engine's: histogram sources and series tagged with their probe, merged and exported the same.
TEST_F(StoreTest, ProbeHistogramsAndCountersStoredBesideTheEngines) {
  auto s = open();
  ASSERT_TRUE(s);
  const int64_t run = new_run(*s);
  std::mt19937_64 rng(7);
  std::vector<stats::Snapshot> snaps;
  for (uint64_t i = 1; i <= 3; ++i) {
    stats::Snapshot snap = counter_snapshot(i, (1000 + static_cast<int64_t>(i)) * sec, 10);
    snap.probes.push_back({"runqlat", "", test_support::synthetic_histogram(rng, 20'000, 100)});
    snap.probes.push_back({"runqlat", "tid=7,comm=nvmt-w0", test_support::synthetic_histogram(rng, 20'000, 40)});
    snap.probes.push_back({"wqlat", "wq=nvmet_tcp_wq", test_support::synthetic_histogram(rng, 50'000, 30)});
    snap.probe_counters.push_back({"hardirq_ns", "irq=24,name=virtio0,cpu=1", 1000 * i});
    snaps.push_back(std::move(snap));
  }
  std::string error;
  ASSERT_TRUE(s->write_batch(run, snaps, {}, {}, error)) << error;

  EXPECT_EQ(s->merge_histograms(run, {"runqlat", ""}, {}).count, 300u);
  // Labels are stored canonical (sorted by key), as the engine's are.
  EXPECT_EQ(s->merge_histograms(run, {"runqlat", "comm=nvmt-w0,tid=7"}, {}).count, 120u);
  EXPECT_EQ(s->merge_histograms(run, {"wqlat", "wq=nvmet_tcp_wq"}, {}).count, 90u);
  const auto sources = s->list_probe_histogram_sources(run);
  EXPECT_EQ(sources.size(), 3u);
  for (const auto& k : sources) EXPECT_TRUE(k.name == "runqlat" || k.name == "wqlat") << k.name;
  const auto series = s->list_probe_series(run);
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].name, "hardirq_ns");
  EXPECT_EQ(series[0].labels, "cpu=1,irq=24,name=virtio0");
  double sum = 0;
  for (const auto& p : s->series(run, series[0], {}, 0)) sum += p.avg;
  EXPECT_EQ(sum, 6000.0);
  std::ostringstream csv;
  ASSERT_TRUE(s->export_csv(run, csv, error)) << error;
  EXPECT_NE(csv.str().find(",runqlat.p99_ns,\"comm=nvmt-w0,tid=7\","), std::string::npos);
  EXPECT_NE(csv.str().find(",hardirq_ns,\"cpu=1,irq=24,name=virtio0\","), std::string::npos) << csv.str().substr(0, 400);
}

// A version-1 database (no series.origin) is migrated: its series are the engine's.
TEST_F(StoreTest, MigratesVersionOneSeriesToEngineOrigin) {
  {
    auto s = open();
    ASSERT_TRUE(s);
    std::string error;
    ASSERT_TRUE(s->write_batch(new_run(*s), {counter_snapshot(1, 1000 * sec, 5)}, {}, {}, error)) << error;
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "ALTER TABLE series DROP COLUMN origin; PRAGMA user_version = 1", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), data::store_schema_version);
  EXPECT_TRUE(s->list_probe_series(1).empty());
  EXPECT_FALSE(s->list_series(1).empty());
}

}  // namespace
