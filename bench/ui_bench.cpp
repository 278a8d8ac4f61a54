// GUI benchmarks (printed, never gating): 
//   replot  the dashboard with 30 minutes of 1 s intervals across every series, 64 connected
//           queues and 8 worker threads: the time of one full replot (aim < 16 ms), and of the
//           live path (one interval appended, then replot)
//   stall   the longest the UI thread is unresponsive while the dashboard loads an hour of
//           stored 1 s intervals from `serve --db`'s control socket (aim < 50 ms)
// Run: QT_QPA_PLATFORM=offscreen build/default/bench/ui_bench [replot|stall]
#include <QApplication>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTimer>

#include <time.h>

#include <algorithm>
#include <map>
#include <cstdio>
#include <vector>

#include <qcustomplot.h>

#include "data/store/store.hpp"
#include "data/store/store_methods.hpp"
#include "engine/rpc/rpc_methods.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "support/engine_config.hpp"
#include "support/synthetic_snapshot.hpp"
#include "ui/engine_session.hpp"
#include "ui/models/event_model.hpp"
#include "ui/models/interval_history.hpp"
#include "ui/views/dashboard_view.hpp"

namespace {

constexpr int64_t second_ns = 1'000'000'000;
constexpr unsigned replot_intervals = 30 * 60;
constexpr unsigned replot_queues = 64;
constexpr unsigned replot_workers = 8;
constexpr int replots = 30;
constexpr unsigned stall_intervals = 3600;
constexpr unsigned stall_queues = 4;
constexpr size_t write_batch = 200;

constexpr uint64_t distinct_snapshots = 16;  // made once each, then re-stamped (making them dominates otherwise)

stats::Snapshot interval(uint64_t seq, int64_t t0, unsigned queues, unsigned workers) {
  static std::map<std::pair<uint64_t, unsigned>, stats::Snapshot> made;
  auto key = std::pair{seq % distinct_snapshots, queues};
  auto it = made.find(key);
  if (it == made.end()) it = made.emplace(key, test_support::synthetic_snapshot(key.first + 1, 0, queues, 50)).first;
  auto s = it->second;
  s.seq = seq;
  s.time_ns = t0 + int64_t(seq) * second_ns;
  s.workers.resize(workers);
  for (unsigned w = 0; w < workers; ++w) {
    s.workers[w].index = w;
    s.workers[w].name = "nvmt-bnd/" + std::to_string(w);
    s.workers[w].cpu_ns = 100'000'000 + seq % 7 * 10'000'000;
    s.workers[w].busy_passes = 900;
    s.workers[w].idle_passes = 100;
  }
  s.total.write_latency = s.total.read_latency;
  return s;
}

// CPU time of this thread in ms: what a replot costs without the other builds on this machine.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// The dashboard as the main window shows it, on the whole run.
struct Dashboard {
  ui::IntervalHistory history;
  ui::EventModel events;
  ui::DashboardView view{history, events};
  Dashboard() {
    view.resize(1280, 760);
    view.show();
    view.set_window_s(0);
  }
};

void bench_replot() {
  Dashboard d;
  auto& [history, events, view] = d;
  const int64_t t0 = data::realtime_ns() - int64_t(replot_intervals) * second_ns;
  std::vector<stats::Snapshot> snaps;
  for (uint64_t i = 1; i <= replot_intervals; ++i) snaps.push_back(interval(i, t0, replot_queues, replot_workers));
  history.add_history(std::make_shared<const std::vector<stats::Snapshot>>(std::move(snaps)));
  while (history.size() < replot_intervals) QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  std::vector<stats::Event> marks;
  for (uint64_t i = 1; i <= 20; ++i) marks.push_back({i, t0 + int64_t(i * 90) * second_ns, "threading", R"({"mode":"poll"})"});
  events.add_events(marks);
  QApplication::processEvents();
  std::vector<double> full, live, cpu;
  for (int i = 0; i < replots; ++i) {
    QElapsedTimer t;
    t.start();
    const double c0 = thread_cpu_ms();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    cpu.push_back(thread_cpu_ms() - c0);
    full.push_back(double(t.nsecsElapsed()) / 1e6);
  }
  for (int i = 0; i < replots; ++i) {
    const uint64_t seq = replot_intervals + 1 + uint64_t(i);
    auto s = interval(seq, t0, replot_queues, replot_workers);
    QElapsedTimer t;
    t.start();
    history.add_snapshot(s);
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    live.push_back(double(t.nsecsElapsed()) / 1e6);
  }
  std::sort(full.begin(), full.end());
  std::sort(cpu.begin(), cpu.end());
  std::sort(live.begin(), live.end());
  std::printf("replot: %u intervals x %d graphs, %u queues, %u workers: full replot median %.2f ms wall (%.2f ms CPU), "
              "max %.2f ms; interval appended + replot median %.2f ms, max %.2f ms (aim < 16 ms)\n",
              replot_intervals, view.plot()->graphCount(), replot_queues, replot_workers, full[full.size() / 2],
              cpu[cpu.size() / 2], full.back(), live[live.size() / 2], live.back());
}

void bench_stall() {
  QTemporaryDir dir;
  std::string error;
  auto store = data::Store::open(dir.filePath("bench.db").toStdString(), error);
  if (!store) return (void)std::printf("stall: %s\n", error.c_str());
  const int64_t run = store->begin_run({}, error);
  const int64_t t0 = data::realtime_ns() - int64_t(stall_intervals) * second_ns;
  std::vector<stats::Snapshot> batch;
  for (uint64_t i = 1; i <= stall_intervals; ++i) {
    batch.push_back(interval(i, t0, stall_queues, 2));
    if (batch.size() == write_batch || i == stall_intervals) {
      if (!store->write_batch(run, batch, {}, {false, std::nullopt}, error)) return (void)std::printf("stall: %s\n", error.c_str());
      batch.clear();
    }
  }
  engine::Engine engine(test_support::one_namespace_config(control::default_nqn, backend::BackendSpec{"null", 1u << 30}));
  if (!engine.start().empty()) return (void)std::printf("stall: the engine did not start\n");
  data::Writer writer(*store, run);
  auto methods = control::make_engine_methods(engine, {"bench", "", std::chrono::steady_clock::now()});
  methods.merge(data::make_store_methods(*store, run, writer));
  control::RpcServer server(std::move(methods), {dir.filePath("control.sock").toStdString()});
  if (auto e = server.start(); !e.empty()) return (void)std::printf("stall: %s\n", e.c_str());

  ui::EngineSession session;
  Dashboard d;
  auto& [history, events, view] = d;
  QObject::connect(&session, &ui::EngineSession::history_loaded, &history, &ui::IntervalHistory::add_history);
  bool attached = false, loaded = false;
  QObject::connect(&session, &ui::EngineSession::attached, [&] { attached = true; });
  QObject::connect(&history, &ui::IntervalHistory::history_added, [&] { loaded = true; });
  session.attach_remote(QString::fromStdString(server.path()));
  while (!attached) QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);

  // A 1 ms timer on the UI thread: the longest gap between its ticks is the longest stall.
  QElapsedTimer clock, total;
  double worst = 0;
  clock.start();
  QTimer tick;
  tick.setInterval(1);
  QObject::connect(&tick, &QTimer::timeout, [&] {
    worst = std::max(worst, double(clock.nsecsElapsed()) / 1e6);
    clock.restart();
  });
  tick.start();
  total.start();
  session.request_history(0, 0);
  while (!loaded) QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  view.plot()->replot(QCustomPlot::rpImmediateRefresh);
  QApplication::processEvents();
  worst = std::max(worst, double(clock.nsecsElapsed()) / 1e6);
  std::printf("stall: %zu stored 1 s intervals loaded in %.0f ms (query + JSON on the session thread); longest UI-thread "
              "stall %.1f ms (rows and graphs built, one replot) (aim < 50 ms)\n",
              history.size(), double(total.nsecsElapsed()) / 1e6, worst);
  engine.stop();
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const QString only = argc > 1 ? QString(argv[1]) : QString();
  if (only.isEmpty() || only == "replot") bench_replot();
  if (only.isEmpty() || only == "stall") bench_stall();
  return 0;
}
