#pragma once
// Waits for a condition with a deadline, polling: a test never depends on a sleep being long enough.
#include <chrono>
#include <thread>

namespace test_support {

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout,
                std::chrono::microseconds poll = std::chrono::milliseconds(1)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return pred();
    std::this_thread::sleep_for(poll);
  }
  return true;
}

}  // namespace test_support
