#pragma once
// Placing and prioritising engine threads: the knobs every execution model shares.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/exec/executor.hpp"

namespace exec {

int current_tid();
// Restricts thread tid to cpus (empty = every CPU). Returns an error message, empty on success.
std::string pin_thread(int tid, const std::vector<unsigned>& cpus);
// normal: nice 0, SCHED_OTHER; nice: nice -20; fifo: SCHED_FIFO priority 1.
std::string set_thread_priority(int tid, Priority p);
// The kernel's view: Cpus_allowed_list of /proc/self/task/TID/status, parsed.
std::vector<unsigned> thread_cpus_allowed(int tid);

}  // namespace exec
