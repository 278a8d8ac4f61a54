#pragma once
// ui::EventModel: the engine's events (configuration changes, connects, profiles applied...)
// as a list, oldest first; the dashboard draws each as a labelled vertical marker.
// Roles:
//   Qt::DisplayRole  the marker's label ("threading: poll")
//   Qt::ToolTipRole  time, kind and the event's detail
//   time_role        double, CLOCK_REALTIME seconds
//   kind_role        QString
#include <QAbstractListModel>

#include <string>
#include <vector>

#include "engine/stats/snapshot.hpp"

namespace ui {

struct EventMarker {
  uint64_t seq = 0;
  double time_s = 0;
  std::string kind;
  std::string label;
  std::string tooltip;
};

// The short text drawn on the plot: the kind and the detail that matters most.
EventMarker marker_of(const stats::Event& e);

class EventModel : public QAbstractListModel {
  Q_OBJECT

 public:
  enum Role { time_role = Qt::UserRole + 1, kind_role };

  explicit EventModel(QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

  const std::vector<EventMarker>& markers() const { return _markers; }

 public slots:
  void add_events(const std::vector<stats::Event>& events);  // seqs already held are ignored
  void clear();

 private:
  std::vector<EventMarker> _markers;
};

}  // namespace ui
