#pragma once
// The CPU topology picker: packages, NUMA nodes, last-level caches and cores as nested boxes
// (from hwloc through topology.get), each CPU a cell showing the engine threads pinned there
// now and how many others may run there. Click a CPU to toggle it, drag across CPUs to add or
// remove them all, click a box's title to toggle the whole package, node, cache or core.
// Selected CPUs are the mask; mask_edited() tells the form (and later the contention view).
#include <QWidget>

#include <vector>

#include "engine/control/engine.hpp"
#include "engine/system/topology.hpp"

namespace ui {

class TopologyPicker : public QWidget {
  Q_OBJECT

 public:
  explicit TopologyPicker(QWidget* parent = nullptr);

  const std::vector<unsigned>& mask() const { return _mask; }  // sorted; empty = none picked
  // The CPU cell's centre, for tests that click (nullopt-like: (-1,-1) when unknown).
  QPoint cpu_center(unsigned cpu) const;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 public slots:
  void set_topology(const std::vector<sys::CpuPlace>& cpus);
  void set_threads(const std::vector<engine::ThreadInfo>& threads);
  void set_mask(const std::vector<unsigned>& cpus);  // empty = every CPU (the engine's "all")

 signals:
  void mask_edited(const std::vector<unsigned>& cpus);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Box {
    QRect rect;
    QString title;
    std::vector<unsigned> cpus;
    int depth = 0;   // 0 package, 1 NUMA, 2 cache, 3 core
  };
  struct Cell {
    QRect rect;
    unsigned cpu = 0;
  };
  void layout_boxes();
  bool selected(unsigned cpu) const;
  void set_selected(const std::vector<unsigned>& cpus, bool on);
  QString cell_text(unsigned cpu) const;

  std::vector<sys::CpuPlace> _cpus;
  std::vector<engine::ThreadInfo> _threads;
  std::vector<unsigned> _mask;
  std::vector<Box> _boxes;
  std::vector<Cell> _cells;
  int _height = 0;
  bool _dragging = false;
  bool _drag_on = true;
};

}  // namespace ui
