// ui::MainWindow and ui::EngineStatsModel over a real engine listening on a free port.
#include <QFileInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTableView>
#include <QtTest>

#include <memory>

#include <qcustomplot.h>

#include "engine/control/engine.hpp"
#include "ui/log_buffer.hpp"
#include "ui/main_window.hpp"
#include "ui/models/engine_stats_model.hpp"

using Counter = ui::EngineStatsModel::Counter;

class MainWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void listener_label_shows_bound_port();
  void stats_model_has_a_row_per_counter();
  void timer_refreshes_plot_while_shown();
  void log_sink_reaches_the_window();
  void model_computes_rates();
  void render_to_png();

 private:
  std::unique_ptr<engine::Engine> _engine;
  std::unique_ptr<ui::MainWindow> _window;
};

void MainWindowTest::initTestCase() {
  auto cfg = control::default_config();
  // Port 0: any free port. (Built whole: assigning "0" to the string trips GCC 12's -Wrestrict
  // false positive, PR 105329.)
  cfg.listeners = {control::ListenerConfig{"tcp", "127.0.0.1", "0"}};
  cfg.subsystems.front().namespaces.front().backend.size_bytes = 16u << 20;  // 16 MiB
  cfg.threading.threads = 1;
  _engine = std::make_unique<engine::Engine>(cfg);
  const auto errors = _engine->start();
  for (const auto& e : errors) qWarning("%s: %s", e.path.c_str(), e.message.c_str());
  QVERIFY(errors.empty());
  QCOMPARE(_engine->listeners().size(), size_t{1});
  QVERIFY(_engine->listeners().front().port != 0);

  _window = std::make_unique<ui::MainWindow>(*_engine);
  _window->show();
  QVERIFY(QTest::qWaitForWindowExposed(_window.get()));
}

void MainWindowTest::cleanupTestCase() {
  _window.reset();
  if (_engine) _engine->stop();
}

void MainWindowTest::listener_label_shows_bound_port() {
  auto* label = _window->findChild<QLabel*>("listeners");
  QVERIFY(label);
  const auto port = _engine->listeners().front().port;
  const QString text = label->text();
  QVERIFY2(text.contains(QString("Listening on tcp 127.0.0.1:%1").arg(port)), qPrintable(text));
  QVERIFY2(text.contains(QString::fromLatin1(control::default_nqn)), qPrintable(text));
  QVERIFY2(text.contains(QString("nvme connect -t tcp -a 127.0.0.1 -s %1 -n %2").arg(port).arg(control::default_nqn)),
           qPrintable(text));
}

void MainWindowTest::stats_model_has_a_row_per_counter() {
  auto* table = _window->findChild<QTableView*>("stats_table");
  QVERIFY(table);
  QAbstractItemModel* model = table->model();
  QCOMPARE(model, static_cast<QAbstractItemModel*>(_window->stats_model()));
  const QStringList expected = {"commands", "read bytes", "write bytes", "PDUs received", "PDUs sent",
                                "connects", "disconnects", "protocol errors", "queues", "controllers"};
  QCOMPARE(model->rowCount(), expected.size());
  QCOMPARE(model->columnCount(), int{ui::EngineStatsModel::column_count});
  for (int row = 0; row < expected.size(); ++row) {
    QCOMPARE(model->index(row, ui::EngineStatsModel::name_column).data().toString(), expected[row]);
    QVERIFY(!model->index(row, 0).data(Qt::ToolTipRole).toString().isEmpty());
  }
  // Nobody connected: the counters the model shows are the engine's.
  const auto stats = _engine->stats();
  const auto raw = [&](Counter c) {
    return model->index(static_cast<int>(c), ui::EngineStatsModel::value_column)
        .data(ui::EngineStatsModel::value_role).toULongLong();
  };
  QCOMPARE(raw(Counter::connects), stats.connects);
  QCOMPARE(raw(Counter::queues), qulonglong{stats.queues});
  QCOMPARE(raw(Counter::controllers), qulonglong{0});
  // Gauges have no rate.
  QVERIFY(!model->index(static_cast<int>(Counter::queues), ui::EngineStatsModel::rate_column).data().isValid());
}

void MainWindowTest::timer_refreshes_plot_while_shown() {
  auto* plot = _window->findChild<QCustomPlot*>("iops_plot");
  QVERIFY(plot);
  const int before = plot->graph(0)->dataCount();
  QTRY_VERIFY_WITH_TIMEOUT(plot->graph(0)->dataCount() > before, 3000);
  QVERIFY(plot->xAxis->range().size() >= ui::MainWindow::plot_window_seconds - 0.001);
}

void MainWindowTest::log_sink_reaches_the_window() {
  auto sink = _window->log_sink();
  sink(engine::LogLevel::info, "host nqn.test connected");
  auto* log = _window->findChild<QPlainTextEdit*>("log");
  QVERIFY(log);
  _window->refresh();
  QVERIFY2(log->toPlainText().contains("info: host nqn.test connected"), qPrintable(log->toPlainText()));
}

void MainWindowTest::model_computes_rates() {
  ui::EngineStatsModel model([] { return engine::EngineStats{}; });
  engine::EngineStats s;
  s.commands = 100;
  s.read_bytes = 1u << 20;
  s.queues = 3;
  model.update(s, 0.0);  // first sample: no rate yet
  QCOMPARE(model.rate(Counter::commands), 0.0);
  s.commands = 300;
  s.read_bytes = 3u << 20;
  model.update(s, 2.0);
  QCOMPARE(model.value(Counter::commands), uint64_t{300});
  QCOMPARE(model.rate(Counter::commands), 100.0);
  QCOMPARE(model.rate(Counter::read_bytes), double(1u << 20));
  QCOMPARE(model.value(Counter::queues), uint64_t{3});
  const QModelIndex rate = model.index(static_cast<int>(Counter::read_bytes), ui::EngineStatsModel::rate_column);
  QVERIFY2(rate.data().toString().endsWith("/s"), qPrintable(rate.data().toString()));
  QCOMPARE(rate.data(ui::EngineStatsModel::value_role).toDouble(), double(1u << 20));
}

void MainWindowTest::render_to_png() {
  _window->refresh();
  const QString path = QStringLiteral(NVMETUNE_TEST_ARTIFACT_DIR "/main_window.png");
  const QPixmap shot = _window->grab();
  QVERIFY(!shot.isNull());
  QVERIFY(shot.save(path));
  QVERIFY(QFileInfo(path).size() > 0);
  qInfo("window rendered to %s", qPrintable(path));
}

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
