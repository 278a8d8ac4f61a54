// Events as markers (event_model.hpp).
#include "ui/models/event_model.hpp"

#include <QDateTime>

#include <nlohmann/json.hpp>

namespace ui {

namespace {

constexpr double ns_per_s = 1e9;
constexpr size_t detail_max = 400;  // characters of detail in a tooltip

// The detail key that names what an event of kind changed.
std::string headline(const std::string& kind, const nlohmann::json& d) {
  if (!d.is_object()) return {};
  for (const char* key : {"mode", "name", "profile", "peer", "nsid", "subnqn"})
    if (auto it = d.find(key); it != d.end())
      return it->is_string() ? it->get<std::string>() : it->dump();
  return kind == "budgets" && d.contains("recv_pdus") ? "recv " + d["recv_pdus"].dump() : std::string();
}

}  // namespace

EventMarker marker_of(const stats::Event& e) {
  const auto detail = nlohmann::json::parse(e.detail_json, nullptr, false);
  EventMarker m{e.seq, static_cast<double>(e.time_ns) / ns_per_s, e.kind, e.kind, {}};
  if (auto h = headline(e.kind, detail); !h.empty()) m.label += ": " + h;
  std::string text = detail.is_discarded() ? e.detail_json : detail.dump(1);
  if (text.size() > detail_max) text = text.substr(0, detail_max) + "...";
  m.tooltip = QDateTime::fromMSecsSinceEpoch(e.time_ns / 1'000'000).toString("hh:mm:ss.zzz").toStdString() + "  " +
              e.kind + "\n" + text;
  return m;
}

EventModel::EventModel(QObject* parent) : QAbstractListModel(parent) {}

int EventModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(_markers.size()); }

QVariant EventModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& m = _markers[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return QString::fromStdString(m.label);
    case Qt::ToolTipRole: return QString::fromStdString(m.tooltip);
    case time_role: return m.time_s;
    case kind_role: return QString::fromStdString(m.kind);
    default: return {};
  }
}

void EventModel::add_events(const std::vector<stats::Event>& events) {
  std::vector<EventMarker> fresh;
  for (const auto& e : events)
    if (_markers.empty() || e.seq > _markers.back().seq) fresh.push_back(marker_of(e));
  if (fresh.empty()) return;
  const int at = rowCount();
  beginInsertRows({}, at, at + static_cast<int>(fresh.size()) - 1);
  _markers.insert(_markers.end(), fresh.begin(), fresh.end());
  endInsertRows();
}

void EventModel::clear() {
  beginResetModel();
  _markers.clear();
  endResetModel();
}

}  // namespace ui
