// The GUI entry point (only built with NVMETUNE_GUI): QApplication, the engine, the window.
#include <sys/signalfd.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <QApplication>
#include <QMessageBox>
#include <QSocketNotifier>

#include "app/exit_code.hpp"
#include "app/gui.hpp"
#include "app/serve.hpp"
#include "ui/main_window.hpp"
#include "ui/screenshot.hpp"

namespace app {

namespace {

constexpr uint64_t screenshot_namespace_bytes = 64ull << 20;

// Start-up errors as one message for a dialog.
QString error_text(const std::vector<control::ConfigError>& errors) {
  QStringList lines;
  for (const auto& e : errors) lines << QString::fromStdString(e.path + ": " + e.message);
  return lines.join('\n');
}

// Both sinks get every line: the terminal keeps a record, the window shows it.
engine::LogSink tee(engine::LogSink a, engine::LogSink b) {
  return [a = std::move(a), b = std::move(b)](engine::LogLevel level, std::string_view text) {
    a(level, text);
    b(level, text);
  };
}

}  // namespace

int run_gui(const control::Config& cfg) {
  // SIGINT/SIGTERM arrive through a signalfd watched by the event loop: a clean quit, no work
  // in a signal handler.
  const sigset_t stop = block_stop_signals();
  std::signal(SIGPIPE, SIG_IGN);
  const int sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);

  static int argc = 1;
  static char name[] = "nvmetune";
  static char* argv[] = {name, nullptr};
  QApplication qapp(argc, argv);
  QApplication::setApplicationName("nvmetune");
  QApplication::setOrganizationName("nvmetune");

  engine::Engine engine(cfg);
  ui::MainWindow window;
  engine.set_log_sink(tee(stderr_log_sink(), window.log_sink()));
  if (auto errors = engine.start(); !errors.empty()) {
    print_errors(errors);
    QMessageBox::critical(nullptr, "nvmetune", "The engine could not start:\n\n" + error_text(errors));
    if (sfd >= 0) close(sfd);
    return exit_failure;
  }

  QSocketNotifier* notifier = nullptr;
  if (sfd >= 0) {
    notifier = new QSocketNotifier(sfd, QSocketNotifier::Read, &qapp);
    QObject::connect(notifier, &QSocketNotifier::activated, &qapp, [sfd] {
      signalfd_siginfo info;
      if (read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) QApplication::quit();
    });
  }
  window.attach_embedded(engine);
  window.show();
  const int rc = QApplication::exec();
  engine.stop();
  delete notifier;
  if (sfd >= 0) close(sfd);
  return rc == 0 ? exit_ok : exit_failure;
}

int run_screenshot(const std::string& dir) {
  static int argc = 1;
  static char name[] = "nvmetune";
  static char* argv[] = {name, nullptr};
  QApplication qapp(argc, argv);
  QApplication::setApplicationName("nvmetune-screenshot");  // its own QSettings: not the user's layout
  QApplication::setOrganizationName("nvmetune");
  std::signal(SIGPIPE, SIG_IGN);
  auto cfg = control::default_config();
  cfg.listeners = {control::ListenerConfig{"tcp", "127.0.0.1", "0"}};  // any free port: 4420 may be taken
  cfg.subsystems.front().namespaces.front().backend.size_bytes = screenshot_namespace_bytes;
  ui::ScreenshotOptions opts;
  opts.dir = QString::fromStdString(dir);
  QString error;
  const QStringList files = ui::take_screenshots(cfg, opts, error);
  for (const auto& f : files) std::printf("%s\n", f.toUtf8().constData());
  if (!error.isEmpty()) {
    std::fprintf(stderr, "nvmetune: --screenshot: %s\n", error.toUtf8().constData());
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace app
