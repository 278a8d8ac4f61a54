#pragma once
// The CPU topology picker: packages, NUMA nodes, last-level caches and cores as nested boxes
// (from hwloc through topology.get), each CPU a cell showing the engine threads pinned there
// now and how many others may run there, and (once steering.get answered) the IRQ lines and
// RPS/XPS queues steered to it: short in the cell, in full in the cell's tooltip. Click a CPU to toggle it, drag across CPUs to add or
// remove them all, click a box's title to toggle the whole package, node, cache or core.
// Selected CPUs are the mask; mask_edited() tells the form (the Tuning panel's worker mask, the
// Steering panel's CPU chooser).
#include <QWidget>

#include <vector>

#include "engine/control/engine.hpp"
#include "engine/system/topology.hpp"
#include "ui/models/steering_model.hpp"

namespace ui {

class TopologyPicker : public QWidget {
  Q_OBJECT

 public:
  explicit TopologyPicker(QWidget* parent = nullptr);

  const std::vector<unsigned>& mask() const { return _mask; }  // sorted; empty = none picked
  // The CPU cell's centre, for tests that click (nullopt-like: (-1,-1) when unknown).
  QPoint cpu_center(unsigned cpu) const;
  QRect cpu_cell(unsigned cpu) const;  // empty when unknown
  QFont small_font() const;            // the cells' text
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  // What a CPU's cell says (its width elides the steering line) and its tooltip (all of it).
  QString cell_text(unsigned cpu) const;
  QString cell_tooltip(unsigned cpu) const;

 public slots:
  void set_topology(const std::vector<sys::CpuPlace>& cpus);
  void set_threads(const std::vector<engine::ThreadInfo>& threads);
  void set_mask(const std::vector<unsigned>& cpus);  // empty = every CPU (the engine's "all")
  void select(const std::vector<unsigned>& cpus);    // exactly these (empty = none), no signal
  // IRQ lines and queues per CPU; empty (steering not read, or refused) shows nothing of it.
  void set_steering(const ui::SteeringByCpu& steering);

 signals:
  void mask_edited(const std::vector<unsigned>& cpus);

 protected:
  bool event(QEvent* event) override;
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
  QString threads_text(unsigned cpu) const;
  QString steering_text(unsigned cpu, int width) const;
  int cell_height() const;

  std::vector<sys::CpuPlace> _cpus;
  std::vector<engine::ThreadInfo> _threads;
  std::vector<unsigned> _mask;
  SteeringByCpu _steering;
  std::vector<Box> _boxes;
  std::vector<Cell> _cells;
  int _height = 0;
  bool _dragging = false;
  bool _drag_on = true;
};

}  // namespace ui
