// Rendering the main views after a short scripted session (screenshot.hpp).
#include "ui/screenshot.hpp"

#include <QApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <QComboBox>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPushButton>
#include <QTabWidget>
#include <QThread>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include "engine/control/engine.hpp"
#include "engine/system/cpu_hog.hpp"
#include "engine/system/topology.hpp"
#include "ui/builtin_load.hpp"
#include "ui/main_window.hpp"
#include "engine/config/settings_schema.hpp"
#include "ui/models/tuning_model.hpp"
#include "ui/models/histogram_sources.hpp"
#include "ui/models/probe_model.hpp"
#include "ui/models/steering_model.hpp"
#include "ui/views/dashboard_view.hpp"
#include "ui/views/histogram_view.hpp"
#include "ui/views/probes_view.hpp"
#include "ui/views/steering_view.hpp"
#include "ui/views/topology_picker.hpp"
#include "ui/views/tuning_view.hpp"

namespace ui {

namespace {

constexpr int window_w = 1280, window_h = 800;
constexpr int hidpi_w = 3840, hidpi_h = 2160, hidpi_scale = 2;
constexpr int attach_timeout_ms = 10'000;
constexpr int hog_nice = -10;

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

// A left click as a user makes it (press and release) on a CPU of a topology picker.
void click_cpu(TopologyPicker* picker, unsigned cpu) {
  const QPointF at = picker->cpu_center(cpu), global = picker->mapToGlobal(at);
  for (auto type : {QEvent::MouseButtonPress, QEvent::MouseButtonRelease}) {
    QMouseEvent e(type, at, global, Qt::LeftButton, type == QEvent::MouseButtonPress ? Qt::LeftButton : Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(picker, &e);
  }
}

void run_for(double seconds) {
  wait_for([] { return false; }, static_cast<int>(seconds * 1000));
}

const control::Setting& field(const std::string& path) {
  if (const auto* f = control::find_setting(path)) return *f;
  throw std::logic_error("no setting " + path);
}

// The online CPUs but cpu, as the tuning form's mask field takes them ("0,1,2").
std::string other_cpus(const std::vector<unsigned>& online, unsigned cpu) {
  std::string out;
  for (unsigned c : online)
    if (c != cpu) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

struct View {
  const char* file;
  QWidget* (*widget)(MainWindow&);
  std::string source;  // histograms: the source shown ("" = keep)
};

std::vector<View> views(const std::string& probe_source) {
  std::vector<View> out = {
      {"dashboard", [](MainWindow& w) -> QWidget* { return w.dashboard(); }, ""},
      {"histograms", [](MainWindow& w) -> QWidget* { return w.histograms(); }, "target_read_latency"},
      {"tuning", [](MainWindow& w) -> QWidget* { return w.tuning(); }, ""},
      {"probes", [](MainWindow& w) -> QWidget* { return w.probes(); }, ""},
      {"steering", [](MainWindow& w) -> QWidget* { return w.steering(); }, ""},
  };
  if (!probe_source.empty())
    out.push_back({"histograms-probe", [](MainWindow& w) -> QWidget* { return w.histograms(); }, probe_source});
  return out;
}

// scale > 1: rendered as a HiDPI screen shows it (window.size() logical pixels, scale times as
// many device pixels), plots included.
bool render_views(MainWindow& window, const std::vector<View>& list, const QString& dir, const QString& suffix, double scale,
                  QStringList& written) {
  for (auto* plot : window.findChildren<QCustomPlot*>()) plot->setBufferDevicePixelRatio(scale);
  for (const auto& v : list) {
    if (!v.source.empty()) window.histograms()->set_source(v.source);
    window.tabs()->setCurrentWidget(v.widget(window));
    run_for(0.3);  // queued replots and layouts
    for (auto* plot : window.findChildren<QCustomPlot*>()) plot->replot();
    QPixmap image(window.size() * scale);
    image.setDevicePixelRatio(scale);
    window.render(&image);
    const QString path = QDir(dir).filePath(QString(v.file) + suffix + ".png");
    if (!image.save(path)) return false;
    written << path;
  }
  for (auto* plot : window.findChildren<QCustomPlot*>()) plot->setBufferDevicePixelRatio(plot->devicePixelRatioF());
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
  // A disabled button must look disabled (Apply with nothing to apply, Revert with nothing changed).
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) p.setColor(QPalette::Disabled, role, QColor(120, 120, 120));
  QApplication::setPalette(p);
}

QStringList take_screenshots(const control::Config& cfg, const ScreenshotOptions& opts, QString& error) {
  QStringList written;
  if (!QDir().mkpath(opts.dir)) return error = "cannot create " + opts.dir, written;
  apply_palette(false);
  // The worker on the last CPU, where the hog comes; the switch moves it to the others.
  const auto online = sys::online_cpus();
  const bool hog_phase = opts.hog_load_pct > 0 && online.size() > 1;
  const unsigned hog_cpu = online.back();
  auto run_cfg = cfg;
  if (hog_phase) run_cfg.threading.cpus = {hog_cpu};
  engine::Engine engine(run_cfg);
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
    // One eBPF probe, so a probe's histogram is on the pictures (or, without BPF permission,
    // the Probes view's explanation).
    auto& probes = window.probes()->model();
    probes.start(QString::fromStdString(opts.probe));
    // Its first interval comes after the first probes.list has judged every probe (seconds on a
    // loaded machine): wait for the start's answer, so the probe runs through the whole load.
    wait_for([&] { return !probes.busy() && probes.find(opts.probe); }, attach_timeout_ms);
    window.toggle_load();
    run_for(opts.load_s);
    sys::CpuHog hog;
    // Above the machine's other work where allowed (a busy machine hides a hog of its weight).
    const int nice = geteuid() == 0 ? hog_nice : 0;
    if (hog_phase && hog.start({.cpus = {hog_cpu}, .load_pct = opts.hog_load_pct, .nice = nice}).empty()) {
      const nlohmann::json detail = {{"name", "CPU " + std::to_string(hog_cpu) + " at " + std::to_string(opts.hog_load_pct) + " %"},
                                     {"cpus", {hog_cpu}}, {"load_pct", opts.hog_load_pct}, {"nice", nice}};
      engine.record_event("hog", detail.dump());  // a marker on the plots
      run_for(opts.load_s);
    }
    auto& tuning = window.tuning()->model();
    tuning.set_value(field("threading.mode"), opts.switch_to);
    tuning.set_value(field("threading.threads"), 1);
    if (hog_phase) tuning.set_value(field("threading.cpumask"), other_cpus(online, hog_cpu));
    tuning.apply();
    run_for(opts.load_s);
    hog.stop();
    // The panels that answer once (probes.list loads every probe to judge it; steering.get reads
    // /proc and /sys): pictured with their answer, also on a loaded machine.
    wait_for([&] { return !probes.busy() && (!probes.rows().empty() || !probes.unavailable().isEmpty()); }, attach_timeout_ms);
    const std::string probe = probe_source_name(opts.probe, "");
    if (const auto* row = probes.find(opts.probe); row && row->running)
      wait_for([&] { return window.histograms()->has_source(probe); }, attach_timeout_ms);
    auto* steering = window.steering();
    wait_for([&] { return !steering->model().busy() && steering->model().state().contains("interfaces"); }, attach_timeout_ms);
    // A dry run on the listener's interface (loopback here): RPS on every CPU typed, and rx-0's
    // CPUs picked on the chooser (clicks on its last CPU). Nothing is written.
    if (steering->device_box()->count() > 0) {
      window.tabs()->setCurrentWidget(steering);
      steering->cpus_edit("rps")->setText("all");
      run_for(0.3);  // laid out: the chooser's cells have their places
      if (steering->set_target("rps", 0)) click_cpu(steering->cpu_chooser(), sys::online_cpus().back());
      wait_for([&] { return !steering->model().busy() && steering->model().planned_request().dump().find("queue") != std::string::npos; },
               attach_timeout_ms);
    }
    const auto list = views(window.histograms()->has_source(probe) ? probe : std::string());
    bool ok = render_views(window, list, opts.dir, "", 1, written);
    apply_palette(true);
    ok = ok && render_views(window, list, opts.dir, "-dark", 1, written);
    apply_palette(false);
    if (opts.hidpi) {  // a 4K screen at 200 %: the same logical layout, every pixel doubled
      window.resize(hidpi_w / hidpi_scale, hidpi_h / hidpi_scale);
      ok = ok && render_views(window, list, opts.dir, "-4k", hidpi_scale, written);
      window.resize(window_w, window_h);
    }
    const bool dark_ok = ok;
    apply_palette(false);
    window.load().stop();
    wait_for([&] { return !window.load().running(); }, attach_timeout_ms);
    if (!dark_ok) error = "cannot write the images to " + opts.dir;
  }
  engine.stop();
  return written;
}

}  // namespace ui
