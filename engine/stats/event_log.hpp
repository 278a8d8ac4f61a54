#pragma once
// stats::EventLog: configuration changes, connects, disconnects... each numbered and timed,
// kept in a bounded ring (the oldest fall off) so plots and `ctl events` can show what
// changed when. Control path only: a mutex, allocation, callbacks.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/stats/snapshot.hpp"

namespace stats {

using EventSink = std::function<void(const Event&)>;

class EventLog {
 public:
  static constexpr size_t default_capacity = 10'000;

  explicit EventLog(size_t capacity = default_capacity);
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Numbers the event (seq 1, 2, ...), stamps it with CLOCK_REALTIME, keeps it and hands it to
  // every subscriber before returning (unless this thread is already delivering events, see
  // subscribe()). Any thread.
  Event append(std::string kind, std::string detail_json);

  // Events with seq > after_seq still kept, oldest first, at most max.
  std::vector<Event> since(uint64_t after_seq, size_t max = 1000) const;
  uint64_t last_seq() const;
  size_t size() const;
  size_t capacity() const { return _capacity; }

  // Subscribers see every event once, in seq order, one event at a time (deliveries are
  // serialized across threads). A subscriber may append(): its event is delivered after the
  // current one has reached every subscriber. After unsubscribe(id) returns the subscriber is
  // never called again; from another thread it waits for a delivery in progress, from inside
  // a subscriber it does not wait. Unknown ids are ignored.
  uint64_t subscribe(EventSink sink);
  void unsubscribe(uint64_t id);
  // Exceptions thrown by subscribers (caught and counted; delivery goes on).
  uint64_t sink_errors() const { return _sink_errors.load(); }

 private:
  struct Sink {
    uint64_t id;
    EventSink fn;
    bool removed = false;  // guarded by _mu
  };
  void deliver();

  const size_t _capacity;
  mutable std::mutex _mu;  // the ring, sequence, subscribers, pending
  std::deque<Event> _ring;
  uint64_t _seq = 0;
  uint64_t _next_sink = 1;
  std::vector<std::shared_ptr<Sink>> _sinks;
  std::deque<Event> _pending;  // appended, not yet delivered

  std::recursive_mutex _deliver_mu;  // held by the thread delivering
  bool _delivering = false;          // guarded by _deliver_mu
  std::atomic<uint64_t> _sink_errors{0};
};

}  // namespace stats
