// The session's worker thread and its polling (engine_session.hpp).
#include "ui/engine_session.hpp"

#include <QMetaObject>
#include <QTimer>

#include "engine/rpc/json_codec.hpp"

namespace ui {

namespace {

void register_types() {
  static const bool done = [] {
    qRegisterMetaType<ui::SessionStatus>();
    qRegisterMetaType<stats::Snapshot>();
    qRegisterMetaType<std::vector<stats::Event>>();
    qRegisterMetaType<std::vector<engine::ThreadInfo>>();
    qRegisterMetaType<std::vector<sys::CpuPlace>>();
    qRegisterMetaType<control::RpcOutcome>();
    qRegisterMetaType<ui::SnapshotBatch>();
    return true;
  }();
  (void)done;
}

}  // namespace

// Everything the worker thread owns.
struct EngineSession::Worker {
  std::unique_ptr<control::Client> client;
  QTimer* timer = nullptr;
  uint64_t last_seq = 0;
  uint64_t last_event = 0;
  unsigned polls = 0;
  SessionStatus status;
};

EngineSession::EngineSession(QObject* parent) : QObject(parent), _worker(std::make_shared<Worker>()) {
  register_types();
  _thread.setObjectName("nvmt-ui-client");
  _context = new QObject;
  _context->moveToThread(&_thread);
  connect(&_thread, &QThread::finished, _context, &QObject::deleteLater);
  _thread.start();
  on_worker([this](Worker& w) {
    w.timer = new QTimer(_context);
    w.timer->setInterval(default_poll_ms);
    connect(w.timer, &QTimer::timeout, _context, [this, &w] { poll(w); });
  });
  connect(this, &EngineSession::status_changed, this, [this](const SessionStatus& s) { _status = s; });
  connect(this, &EngineSession::attached, this, [this](const SessionStatus& s) { _status = s; });
}

EngineSession::~EngineSession() {
  // The client goes with the worker thread (a remote socket closes, nothing blocks for long).
  on_worker([](Worker& w) {
    if (w.timer) w.timer->stop();
    w.client.reset();
  });
  _thread.quit();
  _thread.wait();
}

void EngineSession::on_worker(std::function<void(Worker&)> fn) {
  QMetaObject::invokeMethod(_context, [w = _worker, fn = std::move(fn)] { fn(*w); }, Qt::QueuedConnection);
}

void EngineSession::attach(std::unique_ptr<control::Client> client) {
  auto shared = std::make_shared<std::unique_ptr<control::Client>>(std::move(client));
  on_worker([this, shared](Worker& w) {
    w.client = std::move(*shared);
    w.last_seq = w.last_event = 0;
    w.polls = 0;
    w.status = SessionStatus{};
    w.status.kind = QString::fromStdString(w.client->kind());
    w.status.address = QString::fromStdString(w.client->address());
    w.status.connected = true;
    refresh_status(w);
    emit attached(w.status);
    if (auto cpus = w.client->topology()) emit topology(cpus->cpus());
    w.timer->start();
    poll(w);
  });
}

void EngineSession::attach_remote(const QString& path) {
  on_worker([this, path](Worker&) {
    std::string error;
    auto client = control::connect_remote_client(path.toStdString(), error);
    if (!client) return emit attach_failed(QString::fromStdString(error));
    attach(std::move(client));
  });
}

uint64_t EngineSession::call(const QString& method, const nlohmann::json& params) {
  const uint64_t ticket = _next_ticket++;
  on_worker([this, ticket, method, params](Worker& w) {
    auto outcome = w.client ? w.client->call(method.toStdString(), params)
                            : control::RpcOutcome::fail(control::client_transport_error, "no engine attached");
    emit call_finished(ticket, method, outcome);
    refresh_status(w);
    emit status_changed(w.status);
    poll(w);  // show the change's event and the new mode without waiting for the timer
  });
  return ticket;
}

void EngineSession::request_history(int64_t from_ns, int64_t to_ns) {
  on_worker([this, from_ns, to_ns](Worker& w) {
    auto out = std::make_shared<std::vector<stats::Snapshot>>();
    if (w.client) {
      nlohmann::json params = {{"from_ns", from_ns}, {"to_ns", to_ns}};
      auto outcome = w.client->call("store.history", params);
      if (!outcome.error)
        for (const auto& j : outcome.result.value("intervals", nlohmann::json::array()))
          out->push_back(control::snapshot_from_json(j));
    }
    emit history_loaded(std::move(out));
  });
}

void EngineSession::set_poll_ms(int ms) {
  on_worker([ms](Worker& w) { w.timer->setInterval(ms); });
}

void EngineSession::poll(Worker& w) {
  if (!w.client) return;
  if (!w.client->connected()) {
    w.timer->stop();
    w.status.connected = false;
    w.status.error = QString::fromStdString(w.client->last_error());
    return emit status_changed(w.status);
  }
  if (auto s = w.client->snapshot(); s && s->seq != 0 && s->seq != w.last_seq) {
    w.last_seq = s->seq;
    emit snapshot(*s);
  }
  if (auto e = w.client->events(w.last_event); e && !e->empty()) {
    w.last_event = e->back().seq;
    emit events(*e);
  }
  if (w.polls++ % status_every_polls == 0) {
    if (auto t = w.client->threads()) emit threads(*t);
    refresh_status(w);
    emit status_changed(w.status);
  }
}

void EngineSession::refresh_status(Worker& w) {
  if (auto info = w.client->info()) {
    w.status.running = info->value("running", false);
    w.status.mode = QString::fromStdString(info->value("mode", std::string()));
    w.status.version = QString::fromStdString(info->value("version", std::string()));
    const auto listeners = info->value("listeners", nlohmann::json::array());
    if (!listeners.empty()) {
      w.status.traddr = QString::fromStdString(listeners[0].value("traddr", std::string()));
      w.status.port = QString::fromStdString(listeners[0].value("trsvcid", std::string())).toInt();
    }
  }
  if (w.status.subnqn.isEmpty())
    if (auto subs = w.client->call("subsystems.list", nullptr); !subs.error)
      for (const auto& sub : subs.result.value("subsystems", nlohmann::json::array()))
        if (w.status.subnqn.isEmpty()) w.status.subnqn = QString::fromStdString(sub.value("nqn", std::string()));
  auto health = w.client->call("store.health", nullptr);
  w.status.recording = !health.error;
  if (!health.error) {
    w.status.dropped_intervals = health.result.value("dropped", uint64_t{0});
    w.status.write_errors = health.result.value("write_errors", uint64_t{0});
  }
  w.status.connected = w.client->connected();
  if (!w.status.connected) w.status.error = QString::fromStdString(w.client->last_error());
}

}  // namespace ui
