#pragma once
// The event executor's remote list: tasks kicked from other threads, intrusive through
// Task::exec_next (engine/exec/mpsc_stack.hpp).
#include "engine/exec/executor.hpp"
#include "engine/exec/mpsc_stack.hpp"

namespace exec::event {

using TaskMpsc = MpscStack<Task, &Task::exec_next>;

}  // namespace exec::event
