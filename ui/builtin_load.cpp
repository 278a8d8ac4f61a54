// The built-in load's thread (builtin_load.hpp).
#include "ui/builtin_load.hpp"

#include <QMetaObject>

namespace ui {

namespace {

constexpr unsigned read_percent = 70;

QString summary(const initiator::LoadResult& r) {
  if (r.status != initiator::LoadResult::Status::ok) return "load could not start: " + QString::fromStdString(r.error);
  const double secs = r.runtime_s > 0 ? r.runtime_s : 1;
  QString text = QString("load: read IOPS=%1, write IOPS=%2 over %3 s")
                     .arg(double(r.read.h.count) / secs, 0, 'f', 0)
                     .arg(double(r.write.h.count) / secs, 0, 'f', 0)
                     .arg(r.runtime_s, 0, 'f', 1);
  if (!r.failure.empty()) text += "; failure: " + QString::fromStdString(r.failure);
  return text;
}

}  // namespace

BuiltinLoad::BuiltinLoad(QObject* parent) : QObject(parent) {}

BuiltinLoad::~BuiltinLoad() {
  _stop = true;
  if (_thread.joinable()) _thread.join();
}

initiator::LoadSpec BuiltinLoad::default_spec(initiator::Target target) {
  initiator::LoadSpec spec;
  spec.target = std::move(target);
  spec.pattern = initiator::Pattern::randrw;
  spec.mixread = read_percent;
  spec.queues = default_queues;
  spec.qd = default_qd;
  spec.threads = 1;
  spec.time_s = max_time_s;
  return spec;
}

void BuiltinLoad::start(const initiator::LoadSpec& spec) {
  if (running()) return;
  if (_thread.joinable()) _thread.join();
  _stop = false;
  _done = false;
  auto run = spec;
  run.stop = &_stop;
  run.live = &_live;
  _thread = std::thread([this, run] {
    const auto result = initiator::run_load(run);
    _done = true;
    const bool ok = result.status == initiator::LoadResult::Status::ok && result.failure.empty();
    QMetaObject::invokeMethod(this, [this, text = summary(result), ok] { emit finished(text, ok); }, Qt::QueuedConnection);
  });
  emit started();
}

void BuiltinLoad::stop() { _stop = true; }

}  // namespace ui
