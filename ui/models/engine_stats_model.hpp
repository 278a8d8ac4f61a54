#pragma once
// EngineStats as a table: one row per counter, refreshed by whoever owns the model (the main
// window's timer, so data is sampled only while a view is shown).
//
// Columns: name_column (what), value_column (the counter now), rate_column (change per second
// over the last refresh interval; empty for gauges such as "queues").
// Roles:
//   Qt::DisplayRole  formatted text (bytes as KiB/MiB/…, rates with "/s")
//   Qt::ToolTipRole  what the counter means
//   value_role       the raw number: qulonglong in value_column, double in rate_column
//   Qt::TextAlignmentRole  numbers right-aligned
#include <QAbstractTableModel>
#include <QElapsedTimer>

#include <array>
#include <cstdint>
#include <functional>

#include "engine/control/engine.hpp"

namespace ui {

class EngineStatsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { name_column, value_column, rate_column, column_count };
  enum Role { value_role = Qt::UserRole + 1 };
  // Row order; row(counter) == static_cast<int>(counter).
  enum class Counter {
    commands, read_bytes, write_bytes, pdus_rx, pdus_tx,
    connects, disconnects, protocol_errors, queues, controllers,
    count
  };
  static constexpr int counter_count = static_cast<int>(Counter::count);

  using Source = std::function<engine::EngineStats()>;

  // source is called on every refresh(), from the GUI thread.
  explicit EngineStatsModel(Source source, QObject* parent = nullptr);
  // Convenience: a model over engine.stats(); engine must outlive the model.
  explicit EngineStatsModel(const engine::Engine& engine, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Samples the source and updates values and rates (rates are 0 after the first sample).
  void refresh();
  // The same with an explicit sample and interval, for tests and replays.
  void update(const engine::EngineStats& sample, double interval_seconds);

  static QString name(Counter c);
  uint64_t value(Counter c) const { return _values[slot(c)]; }
  double rate(Counter c) const { return _rates[slot(c)]; }

 private:
  static size_t slot(Counter c) { return static_cast<size_t>(c); }

  Source _source;
  QElapsedTimer _since_last;
  bool _have_sample = false;
  std::array<uint64_t, counter_count> _values{};
  std::array<double, counter_count> _rates{};
};

}  // namespace ui
