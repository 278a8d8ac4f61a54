#pragma once
// One check for every epoll-based executor: a readiness event that says the peer shut down
// reaches the task (Task::exec_peer_closed). Edge-triggered, data and the end of stream that
// arrive together are one event, and nothing follows it: a queue that stopped reading at the
// short read of that data never learnt that its host had gone.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/exec/executor.hpp"
#include "support/eventually.hpp"

namespace test_support {

// Task: an exec::Task with send() and shut_peer() on the other end of its socket and a bytes
// count of what io_work read. The task is attached to its executor already.
template <typename Task>
void expect_peer_shutdown_reaches(Task& task) {
  using namespace std::chrono_literals;
  auto wait_for = [](auto pred) { return eventually(pred, 10s, 200us); };
  task.send();
  ASSERT_TRUE(wait_for([&] { return task.bytes.load() == 1; }));
  EXPECT_FALSE(task.exec_peer_closed.load()) << "data alone said the peer shut down";
  task.send();
  task.shut_peer();
  EXPECT_TRUE(wait_for([&] { return task.exec_peer_closed.load(); })) << "the end of stream was not passed on";
  EXPECT_TRUE(wait_for([&] { return task.bytes.load() == 2; }));
}

}  // namespace test_support
