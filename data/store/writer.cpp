// The writer thread: drain, commit, retry on failure; drop-oldest accounting in submit().
#include "data/store/writer.hpp"

#include <pthread.h>

#include <algorithm>

namespace data {

Writer::Writer(Store& store, int64_t run, WriterOptions opts) : _store(store), _run(run), _opts(std::move(opts)) {
  _thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "nvmt-dbwriter");
    this->run();
  });
}

Writer::~Writer() { stop(); }

void Writer::submit(stats::Snapshot s) {
  std::vector<stats::Snapshot> dropped;  // freed after the lock: a snapshot is many vectors
  {
    std::lock_guard lock(_mu);
    ++_stats.submitted;
    if (_stop) {
      ++_stats.dropped;
      return;
    }
    while (_queue.size() >= std::max<size_t>(_opts.queue_capacity, 1)) {
      dropped.push_back(std::move(_queue.front()));
      _queue.pop_front();
      ++_stats.dropped;
    }
    _queue.push_back(std::move(s));
  }
  _cv.notify_one();
}

void Writer::submit_event(stats::Event e) {
  {
    std::lock_guard lock(_mu);
    if (_stop) {
      ++_stats.events_dropped;
      return;
    }
    while (_events.size() >= std::max<size_t>(_opts.event_capacity, 1)) {
      _events.pop_front();
      ++_stats.events_dropped;
    }
    _events.push_back(std::move(e));
  }
  _cv.notify_one();
}

WriterStats Writer::stats() const {
  std::lock_guard lock(_mu);
  WriterStats s = _stats;
  s.queued = _queue.size() + _in_flight;
  return s;
}

void Writer::pause(bool paused) {
  {
    std::lock_guard lock(_mu);
    _paused = paused;
  }
  _cv.notify_all();
}

bool Writer::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(_mu);
  return _idle_cv.wait_for(lock, timeout, [this] { return _queue.empty() && _events.empty() && _in_flight == 0; });
}

void Writer::stop() {
  {
    std::lock_guard lock(_mu);
    if (_stop && !_thread.joinable()) return;
    _stop = true;
    _paused = false;
  }
  _cv.notify_all();
  if (_thread.joinable()) _thread.join();
  std::lock_guard lock(_mu);
  _store.end_run(_run, 0, _stats.dropped);
}

// Failed batches go back to the front of the queue (the disk may come back), but never past
// the capacity: what does not fit is the oldest data and is dropped, counted.
void Writer::run() {
  std::unique_lock lock(_mu);
  for (;;) {
    _cv.wait(lock, [this] { return _stop || (!_paused && (!_queue.empty() || !_events.empty())); });
    if (_queue.empty() && _events.empty()) return;  // stopping, nothing left
    const size_t n = std::min(_queue.size(), std::max<size_t>(_opts.max_batch, 1));
    std::vector<stats::Snapshot> snaps(std::make_move_iterator(_queue.begin()),
                                       std::make_move_iterator(_queue.begin() + static_cast<ptrdiff_t>(n)));
    _queue.erase(_queue.begin(), _queue.begin() + static_cast<ptrdiff_t>(n));
    std::vector<stats::Event> events(std::make_move_iterator(_events.begin()), std::make_move_iterator(_events.end()));
    _events.clear();
    _in_flight = snaps.size() + events.size();
    const bool stopping = _stop;
    lock.unlock();
    const bool ok = commit(snaps, events);
    lock.lock();
    _in_flight = 0;
    if (!ok) {
      if (stopping) return;  // one last try was all; the rest is lost, counted
      for (auto it = snaps.rbegin(); it != snaps.rend(); ++it) _queue.push_front(std::move(*it));
      for (auto it = events.rbegin(); it != events.rend(); ++it) _events.push_front(std::move(*it));
      while (_queue.size() > std::max<size_t>(_opts.queue_capacity, 1)) {
        _queue.pop_front();
        ++_stats.dropped;
      }
      _cv.wait_for(lock, _opts.retry_pause, [this] { return _stop; });
    }
    _idle_cv.notify_all();
  }
}

bool Writer::commit(std::vector<stats::Snapshot>& snaps, std::vector<stats::Event>& events) {
  Store::WriteOptions wo;
  wo.per_queue_histograms = _opts.per_queue_histograms;
  {
    std::lock_guard lock(_mu);
    wo.dropped_total = _stats.dropped;
  }
  std::string error;
  const bool ok = _store.write_batch(_run, snaps, events, wo, error);
  uint64_t last = 0;
  {
    std::lock_guard lock(_mu);
    if (!ok) {
      ++_stats.write_errors;
      _stats.last_error = error;
      _stats.failing = true;
      return false;
    }
    ++_stats.batches;
    _stats.written += snaps.size();
    _stats.events_written += events.size();
    for (const auto& s : snaps) _stats.last_committed_seq = std::max(_stats.last_committed_seq, s.seq);
    _stats.failing = false;
    last = _stats.last_committed_seq;
  }
  if (_opts.on_commit) _opts.on_commit(last);
  return true;
}

}  // namespace data
