#include "app/serve_record.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "engine/config/config_json.hpp"

namespace app {

namespace {

constexpr size_t events_per_poll = 1000;

}  // namespace

void add_record_options(CLI::App& cmd, RecordOptions& opts) {
  auto* db = cmd.add_option("--db", opts.db_path,
                            "Record statistics and events into this SQLite database (one run\n"
                            "per serve; created if missing). Read it with `nvmetune db`.")
                 ->type_name("PATH");
  cmd.add_flag_callback("--record", [&opts] { opts.db_path = data::default_db_path(); },
                        "Record into the default database, " + data::default_db_path() + ".")
      ->excludes(db);
  cmd.add_option("--sample-interval", opts.sample_interval_ms, "Statistics interval in ms (1000).")
      ->type_name("MS")
      ->check(CLI::Range(1u, 3'600'000u));
  cmd.add_option("--note", opts.note, "A note stored on the recorded run.")->type_name("TEXT");
}

std::unique_ptr<Recorder> Recorder::start(engine::Engine& engine, const RecordOptions& opts, std::string& error) {
  auto store = data::Store::open(opts.db_path, error);
  if (!store) return nullptr;
  data::RunInfo info;
  info.engine_version = NVMETUNE_VERSION;
  info.profile_json = control::to_json(engine.config()).dump();
  info.note = opts.note;
  const int64_t run = store->begin_run(info, error);
  if (!run) return nullptr;
  std::unique_ptr<Recorder> r(new Recorder(engine, std::move(store), run));
  // Events logged before the first interval (the engine's start) belong to the run too.
  r->copy_events();
  r->_subscription = engine.subscribe([rec = r.get()](const stats::Snapshot& s) {
    rec->_writer->submit(s);
    rec->copy_events();
  });
  return r;
}

Recorder::Recorder(engine::Engine& engine, std::unique_ptr<data::Store> store, int64_t run)
    : _engine(engine), _store(std::move(store)), _run(run), _writer(std::make_unique<data::Writer>(*_store, run)) {}

Recorder::~Recorder() {
  _engine.unsubscribe(_subscription);
  copy_events();
  _writer->stop();
  const auto st = _writer->stats();
  std::fprintf(stderr, "nvmetune: recorded run %lld: %llu intervals, %llu events (%llu intervals dropped) in %s\n",
               static_cast<long long>(_run), static_cast<unsigned long long>(st.written),
               static_cast<unsigned long long>(st.events_written), static_cast<unsigned long long>(st.dropped),
               _store->path().c_str());
  if (!st.last_error.empty()) std::fprintf(stderr, "nvmetune: last database error: %s\n", st.last_error.c_str());
}

void Recorder::print_banner() const {
  std::printf("nvmetune: recording run %lld to %s\n", static_cast<long long>(_run), _store->path().c_str());
  std::printf("  nvmetune db --db %s show %lld\n", _store->path().c_str(), static_cast<long long>(_run));
}

void Recorder::copy_events() {
  std::lock_guard lock(_events_mu);
  for (;;) {
    auto batch = _engine.events(_last_event, events_per_poll);
    for (auto& e : batch) {
      _last_event = std::max(_last_event, e.seq);
      _writer->submit_event(std::move(e));
    }
    if (batch.size() < events_per_poll) return;
  }
}

}  // namespace app
