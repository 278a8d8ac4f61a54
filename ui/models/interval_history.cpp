// Snapshots turned into dashboard rows (interval_history.hpp).
#include "ui/models/interval_history.hpp"

#include <QCoreApplication>
#include <QDateTime>
#include <QPointer>
#include <QThreadPool>

#include <algorithm>
#include <map>

#include "engine/stats/cpu_split.hpp"
#include "engine/stats/stage_breakdown.hpp"

namespace ui {

namespace {

constexpr double ns_per_s = 1e9;
constexpr double ns_per_us = 1e3;
constexpr double bytes_per_mib = 1024.0 * 1024.0;

}  // namespace

IntervalHistory::IntervalHistory(QObject* parent) : QAbstractTableModel(parent) {}

int IntervalHistory::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(_rows.size()); }
int IntervalHistory::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : column_count; }

int IntervalHistory::source_index(const std::string& name) const {
  auto it = std::find(_sources.begin(), _sources.end(), name);
  return it == _sources.end() ? -1 : static_cast<int>(it - _sources.begin());
}

QVariant IntervalHistory::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const IntervalRow& r = _rows[static_cast<size_t>(index.row())];
  const double values[column_count] = {r.time_s, 0, r.read_iops, r.write_iops, r.read_mib_s, r.write_mib_s,
                                       r.p50_us, r.p99_us, r.p999_us, r.host_p50_us, r.host_p99_us, r.host_p999_us,
                                       r.queue_wait_p99_us, double(r.queues)};
  const int c = index.column();
  if (role == value_role) return c == mode_column ? QVariant(QString::fromStdString(r.mode)) : QVariant(values[c]);
  if (role == Qt::TextAlignmentRole) return c == mode_column ? Qt::AlignLeft : Qt::AlignRight;
  if (role != Qt::DisplayRole) return {};
  if (c == time_column) return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(r.time_s * 1000)).toString("hh:mm:ss");
  if (c == mode_column) return QString::fromStdString(r.mode);
  return QString::number(values[c], 'f', c == queues_column ? 0 : 1);
}

QVariant IntervalHistory::headerData(int section, Qt::Orientation orientation, int role) const {
  static const char* names[column_count] = {"time", "mode", "read IOPS", "write IOPS", "read MiB/s", "write MiB/s",
                                            "target p50 us", "target p99 us", "target p99.9 us", "host p50 us",
                                            "host p99 us", "host p99.9 us", "queue wait p99 us", "queues"};
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= column_count) return {};
  return names[section];
}

// irqload's per-(line, CPU) counters summed per CPU: "cpuN hardirq/s", then "cpuN softirq/s".
std::vector<std::pair<std::string, double>> cpu_irq_rates(const std::vector<stats::ProbeCounter>& counters, double secs) {
  std::map<std::string, double> per_cpu;  // ordered: cpu0 hardirq, cpu0 softirq, cpu1 ...
  for (const auto& c : counters) {
    const bool hard = c.name == "hardirq_count";
    if (!hard && c.name != "softirq_count") continue;
    const auto at = c.labels.rfind("cpu=");
    if (at == std::string::npos) continue;
    per_cpu["cpu" + c.labels.substr(at + 4) + (hard ? " hardirq/s" : " softirq/s")] += static_cast<double>(c.value);
  }
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, count] : per_cpu) out.emplace_back(name, count / secs);
  return out;
}

namespace {

struct Percentiles {
  double p50_us, p99_us, p999_us;
};

Percentiles percentiles_us(const stats::HistogramData& h) {
  return {h.percentile(50) / ns_per_us, h.percentile(99) / ns_per_us, h.percentile(99.9) / ns_per_us};
}

void add_latency(IntervalRow& r, const stats::Snapshot& s, const HostInterval* host) {
  stats::HistogramData target = s.total.target_read_latency;
  target.merge(s.total.target_write_latency);
  const auto t = percentiles_us(target);
  r.p50_us = t.p50_us, r.p99_us = t.p99_us, r.p999_us = t.p999_us;
  r.target_commands = target.count;
  const auto b = stats::stage_breakdown(s.total);
  r.target_mean_us = b.target_mean_ns / ns_per_us;
  for (const auto& f : b.stages) {
    r.stage_share_us.push_back(f.share_ns / ns_per_us);
    r.stage_p99_us.push_back(f.p99_ns / ns_per_us);
  }
  if (!host) return;
  stats::HistogramData ios = host->read;
  ios.merge(host->write);
  const auto p = percentiles_us(ios);
  r.host_p50_us = p.p50_us, r.host_p99_us = p.p99_us, r.host_p999_us = p.p999_us;
  r.host_ios = ios.count;
}

}  // namespace

BuiltRow build_row(const stats::Snapshot& s, const HostInterval* host) {
  BuiltRow b;
  IntervalRow& r = b.row;
  r.seq = s.seq;
  r.time_s = static_cast<double>(s.time_ns) / ns_per_s;
  r.length_s = static_cast<double>(s.interval_ns) / ns_per_s;
  r.mode = s.mode;
  const double secs = r.length_s > 0 ? r.length_s : 1;
  r.read_iops = static_cast<double>(s.total.read_latency.count) / secs;
  r.write_iops = static_cast<double>(s.total.write_latency.count) / secs;
  r.read_mib_s = static_cast<double>(s.total.read_bytes) / bytes_per_mib / secs;
  r.write_mib_s = static_cast<double>(s.total.write_bytes) / bytes_per_mib / secs;
  add_latency(r, s, host);
  r.queue_wait_p99_us = s.total.queue_wait.percentile(99) / ns_per_us;
  r.commands = s.total.commands;
  r.queues = static_cast<int>(std::count_if(s.queues.begin(), s.queues.end(), [](const stats::QueueRow& q) { return q.qid != 0; }));
  for (const auto& w : s.workers) {
    const auto split = stats::cpu_split(w, s.interval_ns);
    r.workers.push_back({w.name, stats::percent_of(split.busy_ns, s.interval_ns), stats::percent_of(split.idle_poll_ns, s.interval_ns),
                         stats::percent_of(split.sleep_ns, s.interval_ns)});
  }
  for (const auto& p : s.probes)
    if (p.labels.empty()) r.probe_rates.emplace_back(p.source, static_cast<double>(p.hist.count) / secs);
  r.cpu_irq_rates = cpu_irq_rates(s.probe_counters, secs);
  b.sources = histogram_sources(s, host);
  for (const auto& src : b.sources) b.log2.push_back(log2_us_rows(src.hist));
  return b;
}

IntervalRow IntervalHistory::adopt(BuiltRow built) {
  IntervalRow r = std::move(built.row);
  for (size_t k = 0; k < built.sources.size(); ++k) {
    int i = source_index(built.sources[k].name);
    if (i < 0) {
      _sources.push_back(built.sources[k].name);
      _titles.push_back(built.sources[k].title);
      i = static_cast<int>(_sources.size()) - 1;
    }
    if (r.log2.size() <= size_t(i)) r.log2.resize(size_t(i) + 1);
    r.log2[size_t(i)] = std::move(built.log2[k]);
  }
  return r;
}

void IntervalHistory::add_snapshot(const stats::Snapshot& s, const HostInterval* host) {
  if (!_rows.empty() && (s.seq == _rows.back().seq || static_cast<double>(s.time_ns) / ns_per_s <= _rows.back().time_s)) return;
  BuiltRow built = build_row(s, host);
  _current = built.sources;
  auto row = adopt(std::move(built));
  const int at = static_cast<int>(_rows.size());
  beginInsertRows({}, at, at);
  _rows.push_back(std::move(row));
  endInsertRows();
  if (_rows.size() > max_rows) {
    beginRemoveRows({}, 0, 0);
    _rows.pop_front();
    endRemoveRows();
    emit reset_rows();
    return;
  }
  emit appended(static_cast<size_t>(at), 1);
}

void IntervalHistory::add_history(std::shared_ptr<const std::vector<stats::Snapshot>> intervals) {
  if (!intervals) return;
  QPointer<IntervalHistory> self(this);
  QThreadPool::globalInstance()->start([self, intervals = std::move(intervals)]() mutable {
    std::vector<BuiltRow> built;
    built.reserve(intervals->size());
    for (const auto& s : *intervals) built.push_back(build_row(s));
    intervals.reset();  // the batch is freed here, not on the UI thread
    for (auto& b : built)
      for (auto& src : b.sources) src.hist = {};  // only names and titles travel back
    QMetaObject::invokeMethod(qApp, [self, built = std::move(built)]() mutable {
      if (self) self->insert_history(std::move(built));
    }, Qt::QueuedConnection);
  });
}

void IntervalHistory::insert_history(std::vector<BuiltRow> built) {
  const double oldest = _rows.empty() ? 1e300 : _rows.front().time_s;
  std::vector<IntervalRow> older;
  for (auto& b : built)
    if (b.row.time_s < oldest) older.push_back(adopt(std::move(b)));
  if (!older.empty()) {
    beginResetModel();
    _rows.insert(_rows.begin(), std::make_move_iterator(older.begin()), std::make_move_iterator(older.end()));
    endResetModel();
    emit reset_rows();
  }
  emit history_added(older.size());
}

void IntervalHistory::clear() {
  beginResetModel();
  _rows.clear();
  _current.clear();
  endResetModel();
  emit reset_rows();
}

std::pair<size_t, size_t> IntervalHistory::rows_between(double from_s, double to_s) const {
  auto lo = std::lower_bound(_rows.begin(), _rows.end(), from_s, [](const IntervalRow& r, double t) { return r.time_s < t; });
  auto hi = std::upper_bound(lo, _rows.end(), to_s, [](double t, const IntervalRow& r) { return t < r.time_s; });
  return {static_cast<size_t>(lo - _rows.begin()), static_cast<size_t>(hi - _rows.begin())};
}

}  // namespace ui
