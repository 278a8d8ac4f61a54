// Rendering the main views after a short scripted session (screenshot.hpp).
#include "ui/screenshot.hpp"

#include <QApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <QTabWidget>
#include <QThread>

#include "engine/control/engine.hpp"
#include "ui/builtin_load.hpp"
#include "ui/main_window.hpp"
#include "ui/models/settings_description.hpp"
#include "ui/models/tuning_model.hpp"
#include "ui/views/histogram_view.hpp"
#include "ui/views/tuning_view.hpp"

namespace ui {

namespace {

constexpr int window_w = 1280, window_h = 800;
constexpr int attach_timeout_ms = 10'000;

// Runs the event loop until done() or the timeout; false on timeout.
template <typename Done>
bool wait_for(Done done, int timeout_ms) {
  QDeadlineTimer deadline(timeout_ms);
  while (!done()) {
    if (deadline.hasExpired()) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(5);
  }
  return true;
}

void run_for(double seconds) {
  wait_for([] { return false; }, static_cast<int>(seconds * 1000));
}

const SettingField& field(const std::string& path) {
  for (const auto& f : settings_description())
    if (f.path() == path) return f;
  throw std::logic_error("no setting " + path);
}

bool render_views(MainWindow& window, const QString& dir, const QString& suffix, QStringList& written) {
  const char* names[] = {"dashboard", "histograms", "tuning"};
  for (int i = 0; i < 3; ++i) {
    window.tabs()->setCurrentIndex(i);
    run_for(0.3);  // queued replots and layouts
    const QString path = QDir(dir).filePath(QString(names[i]) + suffix + ".png");
    if (!window.grab().save(path)) return false;
    written << path;
  }
  return true;
}

}  // namespace

void apply_palette(bool dark) {
  QApplication::setStyle(QStyleFactory::create("Fusion"));
  if (!dark) return QApplication::setPalette(QApplication::style()->standardPalette());
  QPalette p;
  p.setColor(QPalette::Window, QColor(37, 37, 38));
  p.setColor(QPalette::WindowText, QColor(230, 230, 230));
  p.setColor(QPalette::Base, QColor(24, 24, 24));
  p.setColor(QPalette::AlternateBase, QColor(45, 45, 48));
  p.setColor(QPalette::Text, QColor(230, 230, 230));
  p.setColor(QPalette::Button, QColor(55, 55, 58));
  p.setColor(QPalette::ButtonText, QColor(230, 230, 230));
  p.setColor(QPalette::Highlight, QColor(42, 130, 218));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::ToolTipBase, QColor(55, 55, 58));
  p.setColor(QPalette::ToolTipText, QColor(230, 230, 230));
  p.setColor(QPalette::Mid, QColor(90, 90, 90));
  p.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
  QApplication::setPalette(p);
}

QStringList take_screenshots(const control::Config& cfg, const ScreenshotOptions& opts, QString& error) {
  QStringList written;
  if (!QDir().mkpath(opts.dir)) return error = "cannot create " + opts.dir, written;
  apply_palette(false);
  engine::Engine engine(cfg);
  if (auto errors = engine.start(); !errors.empty())
    return error = QString::fromStdString("the engine could not start: " + errors.front().path + ": " + errors.front().message), written;
  engine.set_sample_interval_ms(opts.sample_ms);
  {
    MainWindow window;
    window.resize(window_w, window_h);
    window.set_window_index(3);  // the whole (short) run fills the plots
    window.attach_embedded(engine);
    window.show();
    if (!wait_for([&] { return !window.session().status().traddr.isEmpty() && !window.session().status().subnqn.isEmpty(); },
                  attach_timeout_ms))
      return error = "the window did not attach to the engine", written;
    window.toggle_load();
    run_for(opts.load_s);
    auto& tuning = window.tuning()->model();
    tuning.set_value(field("threading.mode"), opts.switch_to);
    tuning.set_value(field("threading.threads"), 1);
    tuning.apply();
    run_for(opts.load_s);
    window.histograms()->set_source("read_latency");
    const bool ok = render_views(window, opts.dir, "", written);
    apply_palette(true);
    const bool dark_ok = ok && render_views(window, opts.dir, "-dark", written);
    apply_palette(false);
    window.load().stop();
    wait_for([&] { return !window.load().running(); }, attach_timeout_ms);
    if (!dark_ok) error = "cannot write the images to " + opts.dir;
  }
  engine.stop();
  return written;
}

}  // namespace ui
