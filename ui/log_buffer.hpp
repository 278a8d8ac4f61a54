#pragma once
// Engine log lines on their way to the GUI. The engine calls its LogSink from its own threads;
// the window drains the buffer from the GUI thread on its refresh timer. The sink holds a
// shared_ptr, so it stays safe to call even after the window is gone.
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/control/engine.hpp"

namespace ui {

class LogBuffer {
 public:
  static constexpr size_t max_lines = 1000;  // older lines are dropped when nobody drains

  void push(engine::LogLevel level, std::string_view text);
  std::vector<std::string> drain();

  // A sink that appends to `buffer` (thread-safe).
  static engine::LogSink sink(std::shared_ptr<LogBuffer> buffer);

 private:
  std::mutex _mutex;
  std::deque<std::string> _lines;
};

}  // namespace ui
