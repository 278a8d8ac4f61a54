#pragma once
// ui::EngineSession: the GUI's source of engine data (DESIGN.md: sources -> models -> views).
// It owns one control::Client (embedded or remote, client.hpp) on a worker thread of its own:
// every client call (a remote mode switch takes seconds, a store query may read an hour of
// intervals) runs there, and results arrive on the UI thread as signals. Models subscribe to
// the signals; views never see the client.
#include <QObject>
#include <QString>
#include <QThread>

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/control/client.hpp"
#include "engine/stats/snapshot.hpp"
#include "engine/system/topology.hpp"

namespace ui {

// Intervals read back from a store: shared, never copied (an hour of them is large).
using SnapshotBatch = std::shared_ptr<const std::vector<stats::Snapshot>>;

// What the title and status bar say about the engine shown.
struct SessionStatus {
  QString kind;            // "embedded" | "remote" | "" (none)
  QString address;         // "in-process" | socket path
  bool connected = false;
  bool running = false;
  QString mode;            // execution model now
  QString version;
  QString error;           // why the connection broke, if it did
  bool recording = false;  // the engine records into a store (store.health answered)
  uint64_t dropped_intervals = 0;
  uint64_t write_errors = 0;
  QString traddr;          // the first listener: where the built-in load connects
  int port = 0;
  QString subnqn;          // the first subsystem
};

class EngineSession : public QObject {
  Q_OBJECT

 public:
  static constexpr int default_poll_ms = 100;   // snapshots are new once per sampler interval
  static constexpr int status_every_polls = 10;  // engine.info, threads, store health

  explicit EngineSession(QObject* parent = nullptr);
  ~EngineSession() override;

  // Shows client from now on (the previous one is dropped on the worker thread). Emits
  // attached(), then data as it comes.
  void attach(std::unique_ptr<control::Client> client);
  // Connects to a control socket on the worker thread: attached() or attach_failed().
  void attach_remote(const QString& path);
  const SessionStatus& status() const { return _status; }

  // One control method on the worker thread; call_finished(ticket, ...) answers. Returns ticket.
  uint64_t call(const QString& method, const nlohmann::json& params);
  // The recorded run's intervals in [from_ns, to_ns] (0 = open) through store.history:
  // history_loaded() answers (empty when the engine records nothing).
  void request_history(int64_t from_ns, int64_t to_ns);
  void set_poll_ms(int ms);

 signals:
  void attached(const ui::SessionStatus& status);
  void attach_failed(const QString& error);
  void status_changed(const ui::SessionStatus& status);
  void snapshot(const stats::Snapshot& s);
  void events(const std::vector<stats::Event>& events);
  void threads(const std::vector<engine::ThreadInfo>& threads);
  void topology(const std::vector<sys::CpuPlace>& cpus);
  void call_finished(quint64 ticket, const QString& method, const control::RpcOutcome& outcome);
  void history_loaded(const ui::SnapshotBatch& intervals);

 private:
  struct Worker;
  void on_worker(std::function<void(Worker&)> fn);
  void poll(Worker& w);
  void refresh_status(Worker& w);

  QThread _thread;
  QObject* _context = nullptr;       // lives on _thread: the target of queued work
  std::shared_ptr<Worker> _worker;   // touched only on _thread
  SessionStatus _status;             // UI thread's copy
  uint64_t _next_ticket = 1;
};

}  // namespace ui

Q_DECLARE_METATYPE(ui::SessionStatus)
Q_DECLARE_METATYPE(stats::Snapshot)
Q_DECLARE_METATYPE(std::vector<stats::Event>)
Q_DECLARE_METATYPE(std::vector<engine::ThreadInfo>)
Q_DECLARE_METATYPE(std::vector<sys::CpuPlace>)
Q_DECLARE_METATYPE(control::RpcOutcome)
Q_DECLARE_METATYPE(ui::SnapshotBatch)
