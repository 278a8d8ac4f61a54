#pragma once
// One look for every plot: colours from the widget palette (readable in dark and light
// themes), series colours that keep their contrast on both, and the context menu that exports
// a plot as PNG/PDF and its data as CSV.
#include <QColor>
#include <QPalette>
#include <QString>

class QCustomPlot;
class QCPAxisRect;
class QTextStream;

namespace ui {

// Series colour i: a set chosen to stay distinguishable on white and on near-black.
QColor series_color(int i);
QColor marker_color();

// Background, axes, grid and text from plot's palette; call again when the palette changes.
void style_plot(QCustomPlot* plot);
void style_axis_rect(QCPAxisRect* rect, const QPalette& palette);

// Every graph (and colour map) of plot as CSV: one block per graph, "plot,series,x,y".
void write_plot_csv(QCustomPlot* plot, QTextStream& out);
// Saves by the file's extension: .png, .pdf or .csv. False with error set on failure.
bool save_plot(QCustomPlot* plot, const QString& path, QString& error);
// Right-click menu on plot: "Export image (PNG/PDF)..." and "Export data (CSV)...".
void add_export_menu(QCustomPlot* plot);

}  // namespace ui
