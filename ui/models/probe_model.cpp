// The probes table (probe_model.hpp).
#include "ui/models/probe_model.hpp"

#include <QColor>

#include "engine/control/client.hpp"
#include "ui/engine_session.hpp"

namespace ui {

namespace {

using json = nlohmann::json;
const char* headers[ProbeModel::column_count] = {"Probe", "Status", "Filter", "Measures", "Detail", ""};

}  // namespace

QString ProbeRow::status() const {
  if (running) return "running";
  return available ? "stopped" : "unavailable";
}

QString ProbeRow::detail() const {
  if (!refusal.isEmpty()) return "refused: " + refusal;
  if (!available && !reason.empty()) return QString::fromStdString(reason);
  return {};
}

ProbeModel::ProbeModel(EngineSession& session, QObject* parent) : QAbstractTableModel(parent), _session(session) {
  connect(&_session, &EngineSession::call_finished, this, &ProbeModel::on_call);
  connect(&_session, &EngineSession::attached, this, &ProbeModel::refresh);
}

int ProbeModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(_rows.size()); }
int ProbeModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : column_count; }

QVariant ProbeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || size_t(index.row()) >= _rows.size()) return {};
  const ProbeRow& r = _rows[size_t(index.row())];
  if (role == Qt::ToolTipRole) return QString::fromStdString(r.name + ": " + r.summary) + (r.detail().isEmpty() ? "" : "\n" + r.detail());
  if (role == Qt::ForegroundRole && index.column() == status_column) {
    if (r.running) return QColor(40, 160, 40);  // readable on light and dark bases
    if (!r.available || !r.refusal.isEmpty()) return QColor(208, 48, 48);
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case name_column: return QString::fromStdString(r.name);
    case status_column: return r.status();
    case filter_column: return QString::fromStdString(r.filter);
    case measures_column: return QString::fromStdString(r.summary);
    case detail_column: return r.detail();
    default: return {};
  }
}

QVariant ProbeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= column_count) return {};
  return QString(headers[section]);
}

const ProbeRow* ProbeModel::find(const std::string& name) const {
  for (const auto& r : _rows)
    if (r.name == name) return &r;
  return nullptr;
}

void ProbeModel::refresh() { _pending[_session.call("probes.list", json::object())] = ""; }

void ProbeModel::start(const QString& name, const QString& filter) {
  json params = {{"name", name.toStdString()}};
  if (!filter.isEmpty()) params["filter"] = filter.toStdString();
  _pending[_session.call("probes.start", params)] = name.toStdString();
}

void ProbeModel::stop(const QString& name) {
  _pending[_session.call("probes.stop", {{"name", name.toStdString()}})] = name.toStdString();
}

void ProbeModel::on_call(quint64 ticket, const QString& method, const control::RpcOutcome& outcome) {
  auto it = _pending.find(ticket);
  if (it == _pending.end()) return;
  const std::string name = it->second;
  _pending.erase(it);
  if (method == "probes.list") return on_list(outcome);
  QString refusal;
  if (outcome.error) {
    refusal = QString::fromStdString(control::describe(*outcome.error));
    emit message(QString::fromStdString(name) + ": " + refusal, true);
  } else {
    emit message(QString::fromStdString(name) + (method == "probes.start" ? ": started" : ": stopped"), false);
  }
  _refusals[name] = refusal;
  refresh();  // the engine's word on what runs now; the list puts the refusal on its row
}

void ProbeModel::on_list(const control::RpcOutcome& outcome) {
  beginResetModel();
  _rows.clear();
  _unavailable.clear();
  if (outcome.error) {
    _unavailable = outcome.error->code == control::rpc_code::method_not_found
                       ? "this engine serves no eBPF probes (it has no probes.list method)"
                       : QString::fromStdString(outcome.error->message);
  } else {
    for (const auto& p : outcome.result.value("probes", json::array())) {
      ProbeRow r{p.value("name", ""), p.value("summary", ""), p.value("reason", ""), p.value("filter", ""),
                 p.value("available", false), p.value("running", false), {}};
      if (auto f = _refusals.find(r.name); f != _refusals.end() && !r.running) r.refusal = f->second;
      _rows.push_back(std::move(r));
    }
  }
  endResetModel();
  emit refreshed();
}

}  // namespace ui
