#include "ui/log_buffer.hpp"

#include <chrono>
#include <ctime>

namespace ui {

namespace {

const char* level_name(engine::LogLevel level) {
  switch (level) {
    case engine::LogLevel::info: return "info";
    case engine::LogLevel::warning: return "warning";
    case engine::LogLevel::error: return "error";
  }
  return "?";
}

std::string clock_time() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

}  // namespace

void LogBuffer::push(engine::LogLevel level, std::string_view text) {
  std::string line = clock_time() + " " + level_name(level) + ": " + std::string(text);
  std::lock_guard lock(_mutex);
  _lines.push_back(std::move(line));
  if (_lines.size() > max_lines) _lines.pop_front();
}

std::vector<std::string> LogBuffer::drain() {
  std::lock_guard lock(_mutex);
  std::vector<std::string> out(std::make_move_iterator(_lines.begin()), std::make_move_iterator(_lines.end()));
  _lines.clear();
  return out;
}

engine::LogSink LogBuffer::sink(std::shared_ptr<LogBuffer> buffer) {
  return [buffer = std::move(buffer)](engine::LogLevel level, std::string_view text) {
    buffer->push(level, text);
  };
}

}  // namespace ui
