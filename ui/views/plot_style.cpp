// Plot colours and export (plot_style.hpp).
#include "ui/views/plot_style.hpp"

#include <QFile>
#include <QFileDialog>
#include <QMenu>
#include <QMessageBox>
#include <QTextStream>

#include <qcustomplot.h>

namespace ui {

namespace {

constexpr int export_width = 1600;  // pixels of an exported PNG (the on-screen aspect ratio)

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                          static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                          static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

void style_axis(QCPAxis* axis, const QPalette& p) {
  const QColor text = p.color(QPalette::WindowText);
  const QColor grid = mix(p.color(QPalette::Base), text, 0.15);
  axis->setBasePen(QPen(mix(p.color(QPalette::Base), text, 0.5)));
  axis->setTickPen(QPen(mix(p.color(QPalette::Base), text, 0.5)));
  axis->setSubTickPen(QPen(mix(p.color(QPalette::Base), text, 0.35)));
  axis->setTickLabelColor(text);
  axis->setLabelColor(text);
  axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
  axis->grid()->setSubGridVisible(false);
}

}  // namespace

QColor series_color(int i) {
  // Tableau 10: mid lightness, distinct hues; all keep a 3:1 contrast on white and on #202020.
  static const QColor colors[] = {QColor(31, 119, 180),  QColor(255, 127, 14), QColor(44, 160, 44),
                                  QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                                  QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34),
                                  QColor(23, 190, 207)};
  return colors[static_cast<size_t>(i) % std::size(colors)];
}

QColor marker_color() { return QColor(200, 60, 200); }

void style_axis_rect(QCPAxisRect* rect, const QPalette& p) {
  for (auto* axis : rect->axes()) style_axis(axis, p);
  rect->setBackground(p.color(QPalette::Base));
  if (auto* legend = qobject_cast<QCPLegend*>(rect->insetLayout()->elementCount() ? rect->insetLayout()->elementAt(0) : nullptr)) {
    QColor bg = p.color(QPalette::Base);
    bg.setAlpha(200);
    legend->setBrush(bg);
    legend->setBorderPen(QPen(mix(p.color(QPalette::Base), p.color(QPalette::WindowText), 0.3)));
    legend->setTextColor(p.color(QPalette::WindowText));
  }
}

void style_plot(QCustomPlot* plot) {
  const QPalette p = plot->palette();
  plot->setBackground(p.color(QPalette::Window));
  for (auto* rect : plot->axisRects()) style_axis_rect(rect, p);
  for (auto* element : plot->plotLayout()->elements(true)) {
    if (auto* title = qobject_cast<QCPTextElement*>(element)) title->setTextColor(p.color(QPalette::WindowText));
    // A colour scale's axis is not among axisRects(): without this its title and ticks stay
    // black on a dark background.
    if (auto* scale = qobject_cast<QCPColorScale*>(element)) style_axis(scale->axis(), p);
  }
  if (plot->legend) {
    plot->legend->setBrush(p.color(QPalette::Base));
    plot->legend->setTextColor(p.color(QPalette::WindowText));
  }
}

void write_plot_csv(QCustomPlot* plot, QTextStream& out) {
  out << "plot,series,x,y,value\n";
  const QString name = plot->objectName();
  for (int g = 0; g < plot->graphCount(); ++g) {
    QCPGraph* graph = plot->graph(g);
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
      out << name << ',' << graph->name() << ',' << QString::number(it->key, 'f', 3) << ",," << it->value << '\n';
  }
  for (int i = 0; i < plot->plottableCount(); ++i) {
    if (auto* bars = qobject_cast<QCPBars*>(plot->plottable(i))) {
      for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
        out << name << ',' << bars->name() << ',' << it->key << ",," << it->value << '\n';
    } else if (auto* map = qobject_cast<QCPColorMap*>(plot->plottable(i))) {
      auto* d = map->data();
      for (int x = 0; x < d->keySize(); ++x)
        for (int y = 0; y < d->valueSize(); ++y) {
          double key = 0, value = 0;
          d->cellToCoord(x, y, &key, &value);
          const double cell = d->cell(x, y);
          if (!std::isnan(cell)) out << name << ',' << map->name() << ',' << QString::number(key, 'f', 3) << ',' << value << ',' << cell << '\n';
        }
    }
  }
}

bool save_plot(QCustomPlot* plot, const QString& path, QString& error) {
  const double aspect = plot->width() > 0 ? double(plot->height()) / plot->width() : 0.6;
  const int w = export_width, h = static_cast<int>(export_width * aspect);
  bool ok = false;
  if (path.endsWith(".png", Qt::CaseInsensitive)) {
    ok = plot->savePng(path, w, h);
  } else if (path.endsWith(".pdf", Qt::CaseInsensitive)) {
    ok = plot->savePdf(path, w, h);
  } else if (path.endsWith(".csv", Qt::CaseInsensitive)) {
    QFile f(path);
    ok = f.open(QIODevice::WriteOnly | QIODevice::Truncate);
    if (ok) {
      QTextStream out(&f);
      write_plot_csv(plot, out);
      ok = out.status() == QTextStream::Ok;
    }
  } else {
    error = "unknown file type (use .png, .pdf or .csv): " + path;
    return false;
  }
  if (!ok) error = "cannot write " + path;
  return ok;
}

void add_export_menu(QCustomPlot* plot) {
  plot->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot](const QPoint& pos) {
    QMenu menu(plot);
    auto save = [plot](const QString& filter) {
      const QString path = QFileDialog::getSaveFileName(plot, "Export", plot->objectName(), filter);
      QString error;
      if (!path.isEmpty() && !save_plot(plot, path, error)) QMessageBox::warning(plot, "Export", error);
    };
    menu.addAction("Export image (PNG/PDF)...", [save] { save("PNG image (*.png);;PDF document (*.pdf)"); });
    menu.addAction("Export data (CSV)...", [save] { save("CSV (*.csv)"); });
    menu.exec(plot->mapToGlobal(pos));
  });
}

}  // namespace ui
