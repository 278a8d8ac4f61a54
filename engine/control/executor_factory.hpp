#pragma once
// Turns a ThreadingConfig into a running executor of the chosen model, or changes a running
// one in place when only its placement knobs differ (CPUs, priority, idle period).
#include <memory>
#include <string>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/exec/executor.hpp"
#include "engine/stats/registry.hpp"

namespace control {


// Semantic checks of a threading configuration against this machine; every error with its path.
std::vector<ConfigError> check_threading(const ThreadingConfig& t, const std::string& path = "$.threading");

// registry: where worker statistics blocks are published (may be null).
std::unique_ptr<exec::Executor> make_executor(const ThreadingConfig& t, std::string& error,
                                              stats::Registry* registry = nullptr);

// Applies t to exec without moving queues when the model and its thread count allow it.
// Returns false when a switch (new executor) is needed; error set when re-pinning failed.
bool reconfigure_in_place(exec::Executor& exec, const ThreadingConfig& current, const ThreadingConfig& t,
                          std::string& error);

}  // namespace control
