#pragma once
// `serve --db PATH` / `--record`: one store run per serve, fed by the engine's sampler and
// event log. The data path never waits: snapshots go through data::Writer's bounded queue.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "app/serve.hpp"
#include "data/store/store.hpp"
#include "data/store/store_methods.hpp"
#include "data/store/writer.hpp"

namespace CLI {
class App;
}

namespace app {

// --db, --record, --sample-interval, --note.
void add_record_options(CLI::App& cmd, RecordOptions& opts);

class Recorder {
 public:
  // Opens the store, creates the run (engine version, host, configuration snapshot) and
  // subscribes to the sampler. nullptr with error set when the database cannot be used.
  static std::unique_ptr<Recorder> start(engine::Engine& engine, const RecordOptions& opts, std::string& error);
  // Unsubscribes, copies the last events, commits what is queued and closes the run.
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void print_banner() const;  // "nvmetune: recording run N to PATH" (stdout)
  // The store's control methods over this run (store.runs, store.history).
  control::RpcMethodTable methods() { return data::make_store_methods(*_store, _run, *_writer); }

 private:
  Recorder(engine::Engine& engine, std::unique_ptr<data::Store> store, int64_t run);
  void copy_events();  // engine.events() after the last seen seq into the writer

  engine::Engine& _engine;
  std::unique_ptr<data::Store> _store;
  int64_t _run;
  std::unique_ptr<data::Writer> _writer;
  uint64_t _subscription = 0;
  std::mutex _events_mu;  // _last_event: the sampler thread and the destructor
  uint64_t _last_event = 0;
};

}  // namespace app
