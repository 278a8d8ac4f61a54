#pragma once
// ui::ProbeModel: the eBPF probes beside the engine shown (probes.list through the session, so
// embedded and remote alike), one row each. start()/stop() call probes.start/probes.stop and
// list again; a refusal stays on its probe's row in the engine's words.
// Columns: name, status ("running", "stopped", "unavailable"), filter, measures (the probe
// catalog's one line, probes::ProbeKind::summary, as probes.list carries it), detail (why a
// probe cannot run, or a refusal). Roles: Qt::DisplayRole text, Qt::ToolTipRole both.
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace control {
struct RpcOutcome;
}

namespace ui {

class EngineSession;

struct ProbeRow {
  std::string name, summary, reason, filter;
  bool available = false, running = false;
  QString refusal;  // the engine's words when the last start was refused
  QString status() const;
  QString detail() const;
};

class ProbeModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { name_column, status_column, filter_column, measures_column, detail_column, action_column, column_count };

  explicit ProbeModel(EngineSession& session, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  const std::vector<ProbeRow>& rows() const { return _rows; }
  const ProbeRow* find(const std::string& name) const;
  // Why the engine shown serves no probes at all (an engine without probes.list); "" otherwise.
  const QString& unavailable() const { return _unavailable; }
  bool busy() const { return !_pending.empty(); }

 public slots:
  void refresh();
  void start(const QString& name, const QString& filter = {});
  void stop(const QString& name);

 signals:
  void refreshed();
  void message(const QString& text, bool error);

 private:
  void on_call(quint64 ticket, const QString& method, const control::RpcOutcome& outcome);
  void on_list(const control::RpcOutcome& outcome);

  EngineSession& _session;
  std::vector<ProbeRow> _rows;
  std::map<quint64, std::string> _pending;  // ticket -> probe name ("" for a list)
  QString _unavailable;
  std::map<std::string, QString> _refusals;  // the last start's refusal per probe, kept across lists
};

}  // namespace ui
