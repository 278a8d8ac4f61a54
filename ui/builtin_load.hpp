#pragma once
// The toolbar's built-in load: a random 4 KiB read/write mix from the initiator library
// (engine/initiator/load_generator.hpp, what `nvmetune perf` runs) against the shown engine's
// first listener and subsystem, until stopped. Runs on a thread of its own; finished() reports
// the fio-shaped summary or the failure. Every run records its per-I/O latency into live(), which
// the dashboard reads once per interval to draw the host's view beside the target's.
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>

#include "engine/initiator/load_generator.hpp"

namespace ui {

class BuiltinLoad : public QObject {
  Q_OBJECT

 public:
  static constexpr unsigned default_queues = 2;
  static constexpr unsigned default_qd = 16;
  static constexpr double max_time_s = 24 * 3600;

  explicit BuiltinLoad(QObject* parent = nullptr);
  ~BuiltinLoad() override;  // stops and joins

  // The default workload against target (randrw 70 % reads, 4 KiB, 2 queues x QD 16).
  static initiator::LoadSpec default_spec(initiator::Target target);
  bool running() const { return _thread.joinable() && !_done.load(); }
  // The host's latency of every run so far, cumulative; readable from any thread.
  const initiator::LiveLatency& live() const { return _live; }

 public slots:
  void start(const initiator::LoadSpec& spec);
  void stop();  // returns at once; finished() follows

 signals:
  void started();
  void finished(const QString& summary, bool ok);

 private:
  initiator::LiveLatency _live;  // before _thread: the run records into it until joined
  std::thread _thread;
  std::atomic<bool> _stop{false};
  std::atomic<bool> _done{true};
};

}  // namespace ui
