#pragma once
// Builds the transport a listener names (trtype "tcp", "rdma") from the configuration: the one
// place that knows every kind, so the engine holds a list of transport::Transport and never
// branches on one. A new transport is one row in the table of transport_factory.cpp.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/transport/limits.hpp"
#include "engine/transport/transport.hpp"

namespace core {
class Target;
}
namespace exec {
class ConnectionCap;
class Executor;
}  // namespace exec
namespace stats {
class Registry;
}

namespace control {

// The engine's parts every transport is built with; each must outlive the transport.
struct TransportContext {
  core::Target& target;
  exec::Executor& executor;       // where new queues run until a live switch moves them
  stats::Registry& registry;      // where each queue's statistics block is registered
  exec::ConnectionCap& cap;       // one connection limit for all transports
  transport::Budgets budgets;
  transport::IoMechanism mechanism;
};

// The trtype names make_transport knows, in the order the config check lists them.
const std::vector<std::string_view>& transport_names();
bool known_transport(std::string_view trtype);

// The limits every transport applies alike. Their keys are in the "tcp" section (where they
// were first, so saved profiles keep them there); every transport reads them from here.
transport::QueueLimits queue_limits_of(const Config& c);
transport::Budgets budgets_of(const BudgetConfig& b);
transport::IoMechanism mechanism_of(const ThreadingConfig& t);

// A transport of kind trtype, not yet listening; nullptr with error for a name not known.
std::unique_ptr<transport::Transport> make_transport(std::string_view trtype, const Config& c,
                                                     const TransportContext& ctx, std::string& error);

}  // namespace control
