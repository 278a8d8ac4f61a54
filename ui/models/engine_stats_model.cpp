#include "ui/models/engine_stats_model.hpp"

#include <QLocale>

namespace ui {

namespace {

enum class Kind { count, bytes, gauge };

struct CounterInfo {
  const char* name;
  const char* meaning;
  Kind kind;
  uint64_t (*get)(const engine::EngineStats&);
};

// Indexed by EngineStatsModel::Counter.
constexpr std::array<CounterInfo, EngineStatsModel::counter_count> counters{{
    {"commands", "NVMe commands completed (admin, fabrics and I/O)", Kind::count,
     [](const engine::EngineStats& s) { return s.commands; }},
    {"read bytes", "data bytes sent to hosts (C2HData)", Kind::bytes,
     [](const engine::EngineStats& s) { return s.read_bytes; }},
    {"write bytes", "data bytes received from hosts (in-capsule and H2CData)", Kind::bytes,
     [](const engine::EngineStats& s) { return s.write_bytes; }},
    {"PDUs received", "NVMe/TCP PDUs received", Kind::count,
     [](const engine::EngineStats& s) { return s.pdus_rx; }},
    {"PDUs sent", "NVMe/TCP PDUs sent", Kind::count,
     [](const engine::EngineStats& s) { return s.pdus_tx; }},
    {"connects", "Fabrics Connect commands accepted (admin and I/O queues)", Kind::count,
     [](const engine::EngineStats& s) { return s.connects; }},
    {"disconnects", "queues closed", Kind::count,
     [](const engine::EngineStats& s) { return s.disconnects; }},
    {"protocol errors", "queues ended with a C2HTermReq", Kind::count,
     [](const engine::EngineStats& s) { return s.protocol_errors; }},
    {"queues", "connected NVMe/TCP queues now", Kind::gauge,
     [](const engine::EngineStats& s) { return uint64_t{s.queues}; }},
    {"controllers", "live controllers now", Kind::gauge,
     [](const engine::EngineStats& s) { return uint64_t{s.controllers}; }},
}};

QString format_value(Kind kind, uint64_t v) {
  QLocale locale;
  if (kind == Kind::bytes) return locale.formattedDataSize(static_cast<qint64>(v), 1, QLocale::DataSizeIecFormat);
  return locale.toString(static_cast<qulonglong>(v));
}

QString format_rate(Kind kind, double r) {
  QLocale locale;
  if (kind == Kind::bytes)
    return locale.formattedDataSize(static_cast<qint64>(r), 1, QLocale::DataSizeIecFormat) + "/s";
  return locale.toString(r, 'f', 0) + "/s";
}

}  // namespace

EngineStatsModel::EngineStatsModel(Source source, QObject* parent)
    : QAbstractTableModel(parent), _source(std::move(source)) {}

EngineStatsModel::EngineStatsModel(const engine::Engine& engine, QObject* parent)
    : EngineStatsModel([&engine] { return engine.stats(); }, parent) {}

int EngineStatsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : counter_count;
}

int EngineStatsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : column_count;
}

QString EngineStatsModel::name(Counter c) { return QString::fromLatin1(counters[slot(c)].name); }

QVariant EngineStatsModel::data(const QModelIndex& idx, int role) const {
  if (!idx.isValid() || idx.row() >= counter_count) return {};
  const auto row = static_cast<size_t>(idx.row());
  const CounterInfo& info = counters[row];
  const bool rate_shown = info.kind != Kind::gauge;
  switch (role) {
    case Qt::DisplayRole:
      if (idx.column() == name_column) return QString::fromLatin1(info.name);
      if (idx.column() == value_column) return format_value(info.kind, _values[row]);
      if (idx.column() == rate_column && rate_shown) return format_rate(info.kind, _rates[row]);
      return {};
    case Qt::ToolTipRole:
      return QString::fromLatin1(info.meaning);
    case value_role:
      if (idx.column() == value_column) return QVariant::fromValue<qulonglong>(_values[row]);
      if (idx.column() == rate_column && rate_shown) return _rates[row];
      return {};
    case Qt::TextAlignmentRole:
      if (idx.column() != name_column) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    default:
      return {};
  }
}

QVariant EngineStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case name_column: return tr("counter");
    case value_column: return tr("total");
    case rate_column: return tr("per second");
    default: return {};
  }
}

void EngineStatsModel::refresh() {
  const double interval = _since_last.isValid() ? _since_last.nsecsElapsed() / 1e9 : 0.0;
  _since_last.start();
  update(_source(), interval);
}

void EngineStatsModel::update(const engine::EngineStats& sample, double interval_seconds) {
  for (size_t i = 0; i < counters.size(); ++i) {
    const uint64_t now = counters[i].get(sample);
    const bool can_rate = _have_sample && interval_seconds > 0 && now >= _values[i];
    _rates[i] = can_rate ? static_cast<double>(now - _values[i]) / interval_seconds : 0.0;
    _values[i] = now;
  }
  _have_sample = true;
  emit dataChanged(index(0, value_column), index(counter_count - 1, rate_column));
}

}  // namespace ui
