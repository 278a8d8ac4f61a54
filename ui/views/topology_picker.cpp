// Drawing and picking CPUs (topology_picker.hpp).
#include "ui/views/topology_picker.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <climits>
#include <map>
#include <set>

namespace ui {

namespace {

constexpr int title_h = 20;    // a box's title row
constexpr int pad = 6;
constexpr int cell_h = 46;     // one CPU: number, pinned threads, others (+ a steering line)
constexpr int core_min_w = 120;

QString bytes_text(uint64_t b) {
  if (b >= (1u << 20)) return QString("%1 MiB").arg(b >> 20);
  if (b >= 1024) return QString("%1 KiB").arg(b >> 10);
  return b ? QString("%1 B").arg(b) : QString();
}

template <typename Key>
std::map<unsigned, std::vector<sys::CpuPlace>> group(const std::vector<sys::CpuPlace>& cpus, Key key) {
  std::map<unsigned, std::vector<sys::CpuPlace>> out;
  for (const auto& c : cpus) out[key(c)].push_back(c);
  return out;
}

// As many items as fit in width after the text so far, then how many more ("IRQ 24,25 +9");
// left counts the items of every group not yet shown, -1 once elided.
void append_fitting(QString& text, const QStringList& items, int& left, const QFontMetrics& fm, int width) {
  for (const QString& item : items) {
    if (left > 1 && fm.horizontalAdvance(text + item + QString(", +%1").arg(left - 1)) > width) {
      while (text.endsWith(',') || text.endsWith(' ') || text.endsWith(QChar(0xB7))) text.chop(1);
      text += QString(" +%1").arg(left);
      left = -1;
      return;
    }
    text += item + ",";
    --left;
  }
  text.chop(1);
}

QStringList numbers(const std::vector<CpuSteering::Irq>& irqs) {
  QStringList out;
  for (const auto& i : irqs) out << QString::number(i.irq);
  return out;
}

QStringList names(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << QString::fromStdString(s);
  return out;
}

std::vector<unsigned> cpu_numbers(const std::vector<sys::CpuPlace>& places) {
  std::vector<unsigned> out;
  for (const auto& p : places) out.push_back(p.cpu);
  return out;
}

}  // namespace

TopologyPicker::TopologyPicker(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setToolTip("Click a CPU to add or remove it, drag across CPUs, click a title to take a whole core, cache, "
             "node or package. Each CPU lists the engine threads pinned there.");
}

QSize TopologyPicker::sizeHint() const { return {420, std::max(_height, 200)}; }
QSize TopologyPicker::minimumSizeHint() const { return {260, std::max(_height, 120)}; }

void TopologyPicker::set_topology(const std::vector<sys::CpuPlace>& cpus) {
  _cpus = cpus;
  layout_boxes();
  updateGeometry();
  update();
}

void TopologyPicker::set_threads(const std::vector<engine::ThreadInfo>& threads) {
  _threads = threads;
  update();
}

void TopologyPicker::set_steering(const SteeringByCpu& steering) {
  const bool had = !_steering.empty();
  _steering = steering;
  if (had != !_steering.empty()) {  // the cells gain or lose their steering line
    layout_boxes();
    updateGeometry();
  }
  update();
}

void TopologyPicker::select(const std::vector<unsigned>& cpus) {
  _mask = cpus;
  std::sort(_mask.begin(), _mask.end());
  update();
}

void TopologyPicker::set_mask(const std::vector<unsigned>& cpus) {
  _mask = cpus.empty() ? cpu_numbers(_cpus) : cpus;
  std::sort(_mask.begin(), _mask.end());
  update();
}

bool TopologyPicker::selected(unsigned cpu) const { return std::binary_search(_mask.begin(), _mask.end(), cpu); }

void TopologyPicker::set_selected(const std::vector<unsigned>& cpus, bool on) {
  std::set<unsigned> mask(_mask.begin(), _mask.end());
  for (unsigned c : cpus) on ? (void)mask.insert(c) : (void)mask.erase(c);
  std::vector<unsigned> next(mask.begin(), mask.end());
  if (next == _mask) return;
  _mask = std::move(next);
  update();
  emit mask_edited(_mask);
}

QRect TopologyPicker::cpu_cell(unsigned cpu) const {
  for (const auto& c : _cells)
    if (c.cpu == cpu) return c.rect;
  return {};
}

QPoint TopologyPicker::cpu_center(unsigned cpu) const {
  const QRect r = cpu_cell(cpu);
  return r.isEmpty() ? QPoint(-1, -1) : r.center();
}

void TopologyPicker::resizeEvent(QResizeEvent* event) {
  layout_boxes();
  QWidget::resizeEvent(event);
}

// Packages stacked, NUMA nodes side by side, caches stacked, cores in a grid, SMT siblings
// stacked inside their core.
void TopologyPicker::layout_boxes() {
  _boxes.clear();
  _cells.clear();
  int y = 0;
  const int width = std::max(this->width(), core_min_w + 4 * pad);
  for (const auto& [pkg, pkg_cpus] : group(_cpus, [](const sys::CpuPlace& c) { return c.package; })) {
    const int pkg_top = y;
    Box package{{}, QString("Package %1").arg(pkg), cpu_numbers(pkg_cpus), 0};
    const auto nodes = group(pkg_cpus, [](const sys::CpuPlace& c) { return c.numa; });
    const int node_w = (width - 2 * pad) / int(nodes.size());
    int x = pad, tallest = 0;
    for (const auto& [node, node_cpus] : nodes) {
      int ny = pkg_top + title_h;
      const int node_top = ny;
      ny += title_h;
      for (const auto& [cache, cache_cpus] : group(node_cpus, [](const sys::CpuPlace& c) { return c.cache; })) {
        const int cache_top = ny;
        const auto& first = cache_cpus.front();
        QString title = first.cache_level ? QString("L%1 %2").arg(first.cache_level).arg(bytes_text(first.cache_bytes))
                                          : QString("cache %1").arg(cache);
        const auto cores = group(cache_cpus, [](const sys::CpuPlace& c) { return c.core; });
        const int inner_w = node_w - 4 * pad;
        const int cols = std::max(1, std::min(int(cores.size()), inner_w / core_min_w));
        const int core_w = inner_w / cols;
        int i = 0, row_h = 0, cy = cache_top + title_h;
        for (const auto& [core, core_cpus] : cores) {
          const int cx = x + 2 * pad + (i % cols) * core_w;
          if (i > 0 && i % cols == 0) cy += row_h, row_h = 0;
          const int h = title_h + int(core_cpus.size()) * cell_height() + pad;
          _boxes.push_back({QRect(cx, cy, core_w - pad, h), QString("core %1").arg(core), cpu_numbers(core_cpus), 3});
          for (size_t k = 0; k < core_cpus.size(); ++k)
            _cells.push_back({QRect(cx + pad, cy + title_h + int(k) * cell_height(), core_w - 3 * pad, cell_height() - 4), core_cpus[k].cpu});
          row_h = std::max(row_h, h + pad);
          ++i;
        }
        ny = cy + row_h + pad;
        _boxes.push_back({QRect(x + pad, cache_top, node_w - 2 * pad, ny - cache_top), title, cpu_numbers(cache_cpus), 2});
        ny += pad;
      }
      _boxes.push_back({QRect(x, node_top, node_w - pad, ny - node_top), QString("NUMA node %1").arg(node),
                        cpu_numbers(node_cpus), 1});
      tallest = std::max(tallest, ny - pkg_top);
      x += node_w;
    }
    package.rect = QRect(0, pkg_top, width - 1, tallest + pad);
    _boxes.push_back(package);
    y = pkg_top + tallest + 2 * pad;
  }
  std::sort(_boxes.begin(), _boxes.end(), [](const Box& a, const Box& b) { return a.depth < b.depth; });
  _height = y;
}

QFont TopologyPicker::small_font() const {
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  return small;
}

int TopologyPicker::cell_height() const {
  return _steering.empty() ? cell_h : cell_h + QFontMetrics(small_font()).lineSpacing();
}

QString TopologyPicker::threads_text(unsigned cpu) const {
  QStringList pinned;
  int others = 0;
  for (const auto& t : _threads) {
    if (t.cpus.size() == 1 && t.cpus.front() == cpu) pinned << QString::fromStdString(t.name);
    else if (t.cpus.empty() || std::find(t.cpus.begin(), t.cpus.end(), cpu) != t.cpus.end()) ++others;
  }
  QString text = QString("CPU %1").arg(cpu);
  if (!pinned.isEmpty()) text += "\n" + pinned.join(", ");
  if (others) text += QString("\n%1 more engine thread%2 may run here").arg(others).arg(others > 1 ? "s" : "");
  return text;
}

// "IRQ 24,25 · rx0 · tx1", cut to width with a count of what did not fit.
QString TopologyPicker::steering_text(unsigned cpu, int width) const {
  auto it = _steering.find(cpu);
  if (it == _steering.end()) return {};
  const CpuSteering& s = it->second;
  const QFontMetrics fm(small_font());
  int left = int(s.irqs.size() + s.rps.size() + s.xps.size());
  QString text;
  const std::pair<QString, QStringList> groups[] = {{"IRQ ", numbers(s.irqs)}, {"", names(s.rps)}, {"", names(s.xps)}};
  for (const auto& [prefix, items] : groups) {
    if (items.isEmpty() || left < 0) continue;
    text += (text.isEmpty() ? "" : " · ") + prefix;
    append_fitting(text, items, left, fm, width);
  }
  return text.isEmpty() ? "no IRQ line, RPS or XPS queue" : text;
}

QString TopologyPicker::cell_text(unsigned cpu) const {
  const QRect cell = cpu_cell(cpu);
  const QString steering = steering_text(cpu, cell.isEmpty() ? INT_MAX : cell.width() - 8);  // 4 px margins
  return threads_text(cpu) + (steering.isEmpty() ? QString() : "\n" + steering);
}

QString TopologyPicker::cell_tooltip(unsigned cpu) const {
  QString tip = threads_text(cpu);
  auto it = _steering.find(cpu);
  if (it == _steering.end()) return tip;
  const CpuSteering& s = it->second;
  QStringList nic, other;
  for (const auto& i : s.irqs)
    (i.device.empty() ? other : nic) << QString("IRQ %1 %2%3").arg(i.irq).arg(QString::fromStdString(i.name),
                                                                 i.device.empty() ? QString() : " (" + QString::fromStdString(i.device) + ")");
  tip += "\n\nIRQ lines here (effective affinity, else smp_affinity_list):";
  tip += nic.isEmpty() ? QString("\n  none of the interfaces' lines") : "\n  " + nic.join("\n  ");
  for (int i = 0; i < other.size(); i += 4) tip += (i ? ",\n  " : "\n  other lines: ") + other.mid(i, 4).join(", ");
  tip += "\nRPS (RX queues whose packets are processed here): " + (s.rps.empty() ? QString("none") : names(s.rps).join(", "));
  tip += "\nXPS (TX queues that send from here): " + (s.xps.empty() ? QString("none") : names(s.xps).join(", "));
  return tip;
}

bool TopologyPicker::event(QEvent* event) {
  if (event->type() != QEvent::ToolTip) return QWidget::event(event);
  auto* help = static_cast<QHelpEvent*>(event);
  for (const auto& c : _cells)
    if (c.rect.contains(help->pos())) {
      QToolTip::showText(help->globalPos(), cell_tooltip(c.cpu), this, c.rect);
      return true;
    }
  return QWidget::event(event);  // the widget's own help
}

void TopologyPicker::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Window));
  p.setRenderHint(QPainter::Antialiasing);
  for (const auto& b : _boxes) {
    QColor fill = pal.color(QPalette::Base);
    if (b.depth % 2) fill = pal.color(QPalette::AlternateBase);
    p.setPen(QPen(pal.color(QPalette::Mid)));
    p.setBrush(fill);
    p.drawRoundedRect(b.rect, 4, 4);
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(b.rect.adjusted(pad, 2, -pad, 0), Qt::AlignLeft | Qt::AlignTop, b.title);
  }
  const QFont small = small_font();
  for (const auto& c : _cells) {
    const bool on = selected(c.cpu);
    p.setPen(QPen(on ? pal.color(QPalette::Highlight).darker(130) : pal.color(QPalette::Mid), on ? 2 : 1));
    p.setBrush(on ? pal.color(QPalette::Highlight) : pal.color(QPalette::Button));
    p.drawRoundedRect(c.rect, 3, 3);
    p.setPen(on ? pal.color(QPalette::HighlightedText) : pal.color(QPalette::ButtonText));
    p.setFont(small);
    p.drawText(c.rect.adjusted(4, 2, -4, -2), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, cell_text(c.cpu));
  }
}

void TopologyPicker::mousePressEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  for (const auto& c : _cells)
    if (c.rect.contains(pos)) {
      _dragging = true;
      _drag_on = !selected(c.cpu);
      return set_selected({c.cpu}, _drag_on);
    }
  for (auto it = _boxes.rbegin(); it != _boxes.rend(); ++it)  // innermost first
    if (QRect(it->rect.topLeft(), QSize(it->rect.width(), title_h)).contains(pos)) {
      const bool all = std::all_of(it->cpus.begin(), it->cpus.end(), [this](unsigned c) { return selected(c); });
      return set_selected(it->cpus, !all);
    }
}

void TopologyPicker::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  for (const auto& c : _cells)
    if (c.rect.contains(pos)) {
      if (_dragging) set_selected({c.cpu}, _drag_on);
      return;
    }
}

void TopologyPicker::mouseReleaseEvent(QMouseEvent*) { _dragging = false; }

}  // namespace ui
