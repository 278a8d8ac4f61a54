#pragma once
// ui::IntervalHistory: one row per sampler interval the session delivered (live, or read back
// from the store), oldest first; what the dashboard's time plots and the heatmaps draw.
//
// Columns (Column enum): time, mode, read/write IOPS, read/write MiB/s, target latency
// p50/p99/p99.9 (reads and writes, us), host latency p50/p99/p99.9 (the app's own load, us),
// queue-wait p99 (us), connected queues.
// Roles:
//   Qt::DisplayRole  formatted text
//   value_role       the raw number (double; time in seconds since the epoch)
// Per-worker CPU and per-source log2 rows are read through row() (they vary in width).
#include <QAbstractTableModel>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "engine/stats/snapshot.hpp"
#include "ui/models/histogram_sources.hpp"

namespace ui {

struct WorkerCpu {
  std::string name;      // the thread's name (nvmt-poll-0, ...)
  double busy_pct = 0;   // of one CPU over the interval
  double idle_poll_pct = 0;
  double sleep_pct = 0;
};

struct IntervalRow {
  uint64_t seq = 0;
  double time_s = 0;     // interval end, CLOCK_REALTIME seconds (QCustomPlot's date-time unit)
  double length_s = 0;
  std::string mode;
  double read_iops = 0, write_iops = 0, read_mib_s = 0, write_mib_s = 0;
  // Target latency (stats::latency_sources: kernel arrival stamp -> response handed to the
  // socket) of reads and writes together: what the host's reads and writes are compared with.
  double p50_us = 0, p99_us = 0, p999_us = 0;
  uint64_t target_commands = 0;  // reads and writes with a target latency (0: no latency figures)
  // The app's own load as its initiator saw it over the interval (host_latency.hpp).
  double host_p50_us = 0, host_p99_us = 0, host_p999_us = 0;
  uint64_t host_ios = 0;  // 0: no load of the app's own, no host figures
  // Where the target's time went (stats::stage_breakdown): per stage, in latency_sources' order,
  // its mean share per command and its p99; the shares add up to target_mean_us.
  double target_mean_us = 0;
  std::vector<double> stage_share_us, stage_p99_us;
  double queue_wait_p99_us = 0;
  int queues = 0;
  uint64_t commands = 0;
  std::vector<WorkerCpu> workers;
  // Per running eBPF probe: the events of its total histogram per second (runqlat: wake-ups,
  // biolat: block requests, ...), beside the engine's own series on one time axis.
  std::vector<std::pair<std::string, double>> probe_rates;
  // While irqload runs: hard IRQs and softirqs per second on each CPU ("cpu0 hardirq/s").
  std::vector<std::pair<std::string, double>> cpu_irq_rates;
  std::vector<std::vector<uint64_t>> log2;  // per source (source_names() order): log2_us_rows
};

// A row as built away from the model (any thread): sources by name, not yet by index.
struct BuiltRow {
  IntervalRow row;
  std::vector<HistogramSource> sources;  // histograms cleared of counts: names and titles
  std::vector<std::vector<uint64_t>> log2;
};
// host: the app's own load over the same interval (nullptr: none, as for stored intervals).
BuiltRow build_row(const stats::Snapshot& s, const HostInterval* host = nullptr);

class IntervalHistory : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    time_column, mode_column, read_iops_column, write_iops_column, read_mib_column, write_mib_column,
    p50_column, p99_column, p999_column, host_p50_column, host_p99_column, host_p999_column, queue_wait_column,
    queues_column, column_count
  };
  enum Role { value_role = Qt::UserRole + 1 };
  static constexpr size_t max_rows = 7 * 24 * 3600;  // a week of 1 s intervals

  explicit IntervalHistory(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  const IntervalRow& row(size_t i) const { return _rows[i]; }
  size_t size() const { return _rows.size(); }
  const std::vector<std::string>& source_names() const { return _sources; }
  const std::vector<std::string>& source_titles() const { return _titles; }
  int source_index(const std::string& name) const;
  // The newest interval's full histograms (percentiles and exact buckets for the bars).
  const std::vector<HistogramSource>& current() const { return _current; }

  // Rows inside [from_s, to_s] (seconds): first index and one past the last.
  std::pair<size_t, size_t> rows_between(double from_s, double to_s) const;


 public slots:
  // A live interval, with the app's own load's view of it when given: appended (an interval
  // already held, by seq and time, is ignored).
  void add_snapshot(const stats::Snapshot& s, const ui::HostInterval* host = nullptr);
  // Intervals read back from the store: those older than the oldest row are put in front.
  // The rows are built on a pool thread (an hour of intervals is a lot of percentiles); only
  // the insertion runs on this object's thread. history_added() follows.
  void add_history(std::shared_ptr<const std::vector<stats::Snapshot>> intervals);
  void clear();

 signals:
  void appended(size_t first, size_t count);  // after rows were appended at the end
  void reset_rows();                          // after rows were put in front or cleared
  void history_added(size_t rows);

 private:
  IntervalRow adopt(BuiltRow built);  // maps the row's sources onto the model's indices
  void insert_history(std::vector<BuiltRow> built);

  std::deque<IntervalRow> _rows;
  std::vector<std::string> _sources, _titles;
  std::vector<HistogramSource> _current;
};

}  // namespace ui
