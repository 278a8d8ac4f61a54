// The GUI against a real engine serving real I/O from the initiator library: the dashboard,
// histograms, heatmaps, markers and the tuning form. Embedded by default; with
// NVMETUNE_UI_TEST_SERVE=/path/to/nvmetune the same tests attach to a separate
// `nvmetune serve --record` process over its control socket. The screenshot test renders the
// views after `--screenshot`'s scripted session and checks the images are not blank.
#include <QComboBox>
#include <QDir>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <memory>
#include <set>

#include <qcustomplot.h>

#include "engine/control/client.hpp"
#include "engine/control/engine.hpp"
#include "support/engine_config.hpp"
#include "ui/builtin_load.hpp"
#include "ui/main_window.hpp"
#include "ui/models/event_model.hpp"
#include "ui/models/interval_history.hpp"
#include "ui/models/tuning_model.hpp"
#include "ui/screenshot.hpp"
#include "ui/views/dashboard_view.hpp"
#include "ui/views/histogram_view.hpp"
#include "ui/views/tuning_view.hpp"

namespace {

using json = nlohmann::json;
constexpr unsigned sample_ms = 200;
constexpr int wait_ms = 20'000;

// "1" from /proc/PID/task/TID/status's Cpus_allowed_list.
std::string cpus_allowed(int pid, int tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 18));
  return "?";
}

}  // namespace

class UiSessionTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void dashboard_gains_a_point_per_interval();
  void histogram_total_equals_engine_count();
  void heatmap_columns_match_intervals();
  void mode_switch_makes_exactly_one_marker();
  void tuning_apply_poll_one_thread_on_cpu1();
  void invalid_mask_refused_on_its_field();
  void screenshot_images_not_blank();
  void history_scrolls_back_from_the_store();

 private:
  json call(const std::string& method, const json& params = nullptr);
  void wait_intervals(size_t n);
  void set_mode(const std::string& mode);

  std::unique_ptr<engine::Engine> _engine;  // embedded
  std::unique_ptr<QProcess> _serve;          // attached
  QTemporaryDir _tmp;
  std::unique_ptr<control::Client> _check;   // the test's own view of the engine
  std::unique_ptr<ui::MainWindow> _window;
  int _pid = 0;
};

json UiSessionTest::call(const std::string& method, const json& params) {
  auto outcome = _check->call(method, params);
  if (outcome.error) qWarning("%s: %s", method.c_str(), outcome.error->message.c_str());
  return outcome.result;
}

void UiSessionTest::initTestCase() {
  const QByteArray serve = qgetenv("NVMETUNE_UI_TEST_SERVE");
  const QString socket = _tmp.filePath("control.sock");
  _window = std::make_unique<ui::MainWindow>();
  if (serve.isEmpty()) {
    auto cfg = test_support::one_namespace_config(control::default_nqn, backend::BackendSpec{"ram", 16u << 20});
    _engine = std::make_unique<engine::Engine>(cfg);
    QVERIFY(_engine->start().empty());
    _engine->set_sample_interval_ms(sample_ms);
    _check = control::make_embedded_client(*_engine, "test");
    _window->attach_embedded(*_engine);
  } else {
    _serve = std::make_unique<QProcess>();
    _serve->start(QString::fromUtf8(serve), {"serve", "--listen", "127.0.0.1:0", "--ram", "16M", "--control-socket",
                                            socket, "--db", _tmp.filePath("run.db"), "--sample-interval",
                                            QString::number(sample_ms)});
    QVERIFY(_serve->waitForStarted());
    QByteArray out;
    QTRY_VERIFY_WITH_TIMEOUT((out += _serve->readAllStandardOutput()).contains("nvmetune: ready"), wait_ms);
    std::string error;
    _check = control::connect_remote_client(socket.toStdString(), error);
    QVERIFY2(_check, error.c_str());
    _window->attach_remote(socket);
  }
  _pid = call("engine.info").value("pid", 0);
  _window->set_window_index(3);
  _window->show();
  QVERIFY(QTest::qWaitForWindowExposed(_window.get()));
  QTRY_VERIFY_WITH_TIMEOUT(!_window->session().status().subnqn.isEmpty(), wait_ms);
  _window->toggle_load();
  QVERIFY(_window->load().running());
  wait_intervals(3);
}

void UiSessionTest::cleanupTestCase() {
  if (_window) {
    _window->load().stop();
    QTRY_VERIFY_WITH_TIMEOUT(!_window->load().running(), wait_ms);
  }
  _window.reset();
  _check.reset();
  if (_engine) _engine->stop();
  if (_serve) {
    _serve->terminate();
    _serve->waitForFinished(wait_ms);
  }
}

void UiSessionTest::wait_intervals(size_t n) {
  const size_t target = _window->history().size() + n;
  QTRY_VERIFY_WITH_TIMEOUT(_window->history().size() >= target, wait_ms);
}

void UiSessionTest::set_mode(const std::string& mode) {
  auto* box = qobject_cast<QComboBox*>(_window->tuning()->field("threading.mode"));
  QVERIFY(box);
  box->setCurrentText(QString::fromStdString(mode));
  QTest::mouseClick(_window->tuning()->apply_button(), Qt::LeftButton);
  QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(call("threading.get").value("mode", std::string())),
                            QString::fromStdString(mode), wait_ms);
}

void UiSessionTest::dashboard_gains_a_point_per_interval() {
  auto& history = _window->history();
  QCPGraph* read = _window->dashboard()->graph("read IOPS");
  QVERIFY(read);
  const int before = read->data()->size();
  const size_t rows_before = history.size();
  wait_intervals(4);
  QCOMPARE(read->data()->size() - before, int(history.size() - rows_before));
  // Every interval of the engine arrived once, in order: no gap in the sequence numbers.
  for (size_t i = rows_before; i < history.size(); ++i) QCOMPARE(history.row(i).seq, history.row(i - 1).seq + 1);
  QVERIFY(history.row(history.size() - 1).read_iops > 0);  // real I/O from the initiator
  QVERIFY(_window->dashboard()->graph("p99")->data()->size() > 0);
}

void UiSessionTest::histogram_total_equals_engine_count() {
  _window->tabs()->setCurrentWidget(_window->histograms());
  _window->histograms()->set_source("read_latency");
  // The engine's own report of one interval, and the bars the view drew for the same interval.
  for (int attempt = 0; attempt < 20; ++attempt) {
    const json s = call("stats.get");
    wait_intervals(1);
    const auto& history = _window->history();
    for (size_t i = 0; i < history.size(); ++i) {
      if (history.row(i).seq != s.value("seq", uint64_t{0})) continue;
      const uint64_t engine_count = s["total"]["read_latency"]["count"].get<uint64_t>();
      uint64_t row_total = 0;
      for (uint64_t c : history.row(i).log2[size_t(history.source_index("read_latency"))]) row_total += c;
      QCOMPARE(row_total, engine_count);
      QVERIFY(engine_count > 0);
      if (i + 1 != history.size()) continue;  // the bars show the newest interval only
    }
    double bars = 0;
    for (auto it = _window->histograms()->bars()->data()->constBegin(); it != _window->histograms()->bars()->data()->constEnd(); ++it)
      bars += it->value;
    const auto& current = _window->history().current();
    for (const auto& src : current)
      if (src.name == "read_latency" && src.hist.count == uint64_t(bars) && bars > 0) return;
  }
  QFAIL("no interval whose bars matched the engine's count");
}

void UiSessionTest::heatmap_columns_match_intervals() {
  auto* view = _window->histograms();
  view->set_window_s(0);
  QCOMPARE(view->heatmap()->data()->keySize(), int(_window->history().size()));
  view->set_window_s(1.0);  // a window of 1 s: the intervals of the last second
  const auto [from, to] = view->heatmap_rows();
  QCOMPARE(view->heatmap()->data()->keySize(), int(to - from));
  QVERIFY(to - from >= 4 && to - from <= 6);  // 1 s of 200 ms intervals, either end inclusive
  view->set_window_s(0);
}

void UiSessionTest::mode_switch_makes_exactly_one_marker() {
  _window->tabs()->setCurrentWidget(_window->tuning());
  auto count = [this](const char* kind) {
    int n = 0;
    for (const auto& m : _window->events().markers()) n += m.kind == kind;
    return n;
  };
  const int markers = _window->dashboard()->marker_count(ui::DashboardView::latency_panel);
  const int threading = count("threading");
  const std::string next = call("threading.get").value("mode", std::string()) == "unbound" ? "bound" : "unbound";
  set_mode(next);
  QTRY_COMPARE_WITH_TIMEOUT(count("threading"), threading + 1, wait_ms);
  wait_intervals(2);  // nothing else arrives later
  QCOMPARE(count("threading"), threading + 1);
  for (int p = 0; p < ui::DashboardView::panel_count; ++p)
    QCOMPARE(_window->dashboard()->marker_count(ui::DashboardView::Panel(p)), markers + 1);
}

void UiSessionTest::tuning_apply_poll_one_thread_on_cpu1() {
  if (call("topology.get")["cpus"].size() < 2) QSKIP("needs CPU 1");
  _window->tabs()->setCurrentWidget(_window->tuning());
  auto* tuning = _window->tuning();
  qobject_cast<QComboBox*>(tuning->field("threading.mode"))->setCurrentText("poll");
  qobject_cast<QSpinBox*>(tuning->field("threading.threads"))->setValue(1);
  auto* mask = qobject_cast<QLineEdit*>(tuning->field("threading.cpumask"));
  mask->clear();
  QTest::keyClicks(mask, "1");
  QTest::mouseClick(tuning->apply_button(), Qt::LeftButton);
  QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(call("threading.get").value("mode", std::string())), QString("poll"), wait_ms);
  const json t = call("threading.get");
  QCOMPARE(t.value("threads", 0), 1);
  QCOMPARE(QString::fromStdString(t.value("cpumask", std::string())), QString("1"));
  int pollers = 0;  // the engine's workers now: one poll thread, on CPU 1 as the kernel applies it
  const json threads = call("threads.get");
  for (const auto& th : threads["threads"]) {
    if (th.value("role", std::string()) != "worker") continue;
    ++pollers;
    QVERIFY(th.value("name", std::string()).find("poll") != std::string::npos);
    QCOMPARE(QString::fromStdString(cpus_allowed(_pid, th.value("tid", 0))), QString("1"));
  }
  QCOMPARE(pollers, 1);
  QTRY_VERIFY_WITH_TIMEOUT(!tuning->model().dirty(), wait_ms);
}

void UiSessionTest::invalid_mask_refused_on_its_field() {
  _window->tabs()->setCurrentWidget(_window->tuning());
  auto* tuning = _window->tuning();
  QTRY_VERIFY_WITH_TIMEOUT(!tuning->model().busy(), wait_ms);
  const json before = call("threading.get");
  auto* mask = qobject_cast<QLineEdit*>(tuning->field("threading.cpumask"));
  mask->clear();
  QTest::keyClicks(mask, "0-4095");
  QTest::mouseClick(tuning->apply_button(), Qt::LeftButton);
  QLabel* error = tuning->field_error("threading.cpumask");
  QTRY_VERIFY_WITH_TIMEOUT(error->isVisible(), wait_ms);
  // The engine's own words and the JSON path, on the field.
  QVERIFY2(error->text().contains("params.cpumask"), qPrintable(error->text()));
  QVERIFY2(error->text().contains("not online"), qPrintable(error->text()));
  QCOMPARE(call("threading.get"), before);
  QCOMPARE(_window->tuning()->field("threading.cpumask")->property("invalid").toBool(), true);
  tuning->model().revert();
  QTRY_VERIFY_WITH_TIMEOUT(!error->isVisible(), wait_ms);
}

void UiSessionTest::screenshot_images_not_blank() {
  if (_serve) QSKIP("the screenshot runs its own embedded engine");
  QTemporaryDir dir;
  auto cfg = test_support::one_namespace_config(control::default_nqn, backend::BackendSpec{"ram", 16u << 20});
  ui::ScreenshotOptions opts;
  opts.dir = dir.path();
  opts.load_s = 2;
  QString error;
  const QStringList files = ui::take_screenshots(cfg, opts, error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  QCOMPARE(files.size(), 6);
  for (const auto& f : files) {
    const QImage img(f);
    QVERIFY2(!img.isNull(), qPrintable(f));
    QCOMPARE(img.size(), QSize(1280, 800));
    // The plot area (below menus and toolbar): many colours, and most rows not one flat colour.
    std::set<QRgb> colours;
    const QRgb background = img.pixel(img.width() / 2, img.height() - 40);
    int different = 0;
    for (int y = 120; y < img.height() - 60; y += 3)
      for (int x = 40; x < img.width() - 40; x += 3) {
        colours.insert(img.pixel(x, y));
        different += img.pixel(x, y) != background;
      }
    QVERIFY2(colours.size() >= 8, qPrintable(f + ": " + QString::number(colours.size()) + " colours"));
    QVERIFY2(different > 2000, qPrintable(f + ": " + QString::number(different) + " non-background pixels"));
  }
}

// Attached to `serve --db`: the status bar reports the recording, and the dashboard can be
// rebuilt from the stored intervals alone (store.history on the session's thread).
void UiSessionTest::history_scrolls_back_from_the_store() {
  if (!_serve) QSKIP("the embedded engine of this test records nothing");
  QTRY_VERIFY_WITH_TIMEOUT(_window->session().status().recording, wait_ms);
  QCOMPARE(_window->session().status().dropped_intervals, uint64_t{0});
  const size_t live = _window->history().size();
  const uint64_t newest = _window->history().row(live - 1).seq;
  _window->history().clear();
  QSignalSpy added(&_window->history(), &ui::IntervalHistory::history_added);
  _window->session().request_history(0, 0);
  QVERIFY(added.wait(wait_ms));
  auto& history = _window->history();
  QVERIFY2(history.size() + 5 >= live, qPrintable(QString("%1 stored of %2 seen").arg(history.size()).arg(live)));
  for (size_t i = 1; i < history.size(); ++i) QCOMPARE(history.row(i).seq, history.row(i - 1).seq + 1);
  QVERIFY(history.row(history.size() - 1).seq + 5 >= newest);
  QCOMPARE(_window->dashboard()->graph("read IOPS")->data()->size(), int(history.size()));
}

QTEST_MAIN(UiSessionTest)
#include "ui_session_test.moc"
