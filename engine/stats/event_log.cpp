#include "engine/stats/event_log.hpp"

#include <time.h>

#include <algorithm>

namespace stats {

namespace {

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

EventLog::EventLog(size_t capacity) : _capacity(std::max<size_t>(capacity, 1)) {}

Event EventLog::append(std::string kind, std::string detail_json) {
  Event e;
  {
    std::lock_guard lock(_mu);
    e.seq = ++_seq;
    e.time_ns = realtime_ns();  // under the lock: time order follows seq order
    e.kind = std::move(kind);
    e.detail_json = std::move(detail_json);
    _ring.push_back(e);
    if (_ring.size() > _capacity) _ring.pop_front();
    if (!_sinks.empty()) _pending.push_back(e);
  }
  deliver();
  return e;
}

// Whoever holds _deliver_mu drains _pending in order. A thread that finds another delivering
// waits for the lock, by then its event has been delivered and it finds nothing left to do;
// a subscriber appending (same thread, recursive lock) leaves its event to the loop above it.
void EventLog::deliver() {
  std::lock_guard delivering(_deliver_mu);
  if (_delivering) return;
  _delivering = true;
  for (;;) {
    Event e;
    std::vector<std::shared_ptr<Sink>> sinks;
    {
      std::lock_guard lock(_mu);
      if (_pending.empty()) break;
      e = std::move(_pending.front());
      _pending.pop_front();
      sinks = _sinks;
    }
    for (const auto& sink : sinks) {
      {
        std::lock_guard lock(_mu);
        if (sink->removed) continue;
      }
      try {
        sink->fn(e);
      } catch (...) {
        _sink_errors.fetch_add(1);  // one subscriber's failure is not the others' problem
      }
    }
  }
  _delivering = false;
}

std::vector<Event> EventLog::since(uint64_t after_seq, size_t max) const {
  std::lock_guard lock(_mu);
  std::vector<Event> out;
  if (_ring.empty()) return out;
  // seq numbers in the ring are consecutive: index directly.
  uint64_t first = _ring.front().seq;
  size_t start = after_seq < first ? 0 : static_cast<size_t>(after_seq - first + 1);
  for (size_t i = start; i < _ring.size() && out.size() < max; ++i) out.push_back(_ring[i]);
  return out;
}

uint64_t EventLog::last_seq() const {
  std::lock_guard lock(_mu);
  return _seq;
}

size_t EventLog::size() const {
  std::lock_guard lock(_mu);
  return _ring.size();
}

uint64_t EventLog::subscribe(EventSink sink) {
  std::lock_guard lock(_mu);
  uint64_t id = _next_sink++;
  _sinks.push_back(std::make_shared<Sink>(Sink{id, std::move(sink)}));
  return id;
}

void EventLog::unsubscribe(uint64_t id) {
  {
    std::lock_guard lock(_mu);
    auto it = std::find_if(_sinks.begin(), _sinks.end(), [id](const auto& s) { return s->id == id; });
    if (it == _sinks.end()) return;
    (*it)->removed = true;
    _sinks.erase(it);
  }
  // Waits out a delivery on another thread; recursive, so free from inside a subscriber.
  std::lock_guard wait(_deliver_mu);
}

}  // namespace stats
