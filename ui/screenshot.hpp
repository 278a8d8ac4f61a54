#pragma once
// `nvmetune --screenshot DIR`: a short built-in load against an embedded engine whose worker is
// bound to the last CPU; a CPU hog on that CPU (the target's and the host's p99 rise, the
// scheduling stage grows); then one switch through the tuning form that moves the worker off
// it; then every main view rendered to DIR/<view>.png (1280x800),
// DIR/<view>-dark.png in the dark palette and DIR/<view>-4k.png (3840x2160 at 200 %, a 4K
// screen). Views: dashboard, histograms, tuning, probes, steering (a dry run), and histograms-probe (a probe's
// histogram, when the probe could start). For the README, CI and humans checking layout.
#include <QString>
#include <QStringList>

#include "engine/config/config.hpp"

namespace ui {

struct ScreenshotOptions {
  QString dir;
  double load_s = 4;          // each phase: load alone, with the hog, after the switch
  unsigned sample_ms = 250;   // sampler interval: enough intervals in a few seconds
  unsigned hog_load_pct = 80;  // of the worker's CPU in the second phase, at nice -10 as root (0: none)
  std::string switch_to = "bound";  // the mode after the switch, on every CPU but the hog's
  std::string probe = "runqlat";  // started before the load; its histogram is pictured when it runs
  bool hidpi = true;              // also DIR/<view>-4k.png: 3840x2160 at 200 % scale
};

// Needs a QApplication. Returns the files written; error set (and a partial list) on failure.
QStringList take_screenshots(const control::Config& cfg, const ScreenshotOptions& opts, QString& error);

// The Fusion style with a dark or light palette (the app's --palette option).
void apply_palette(bool dark);

}  // namespace ui
