#pragma once
// The one interface every transport implements (DESIGN.md "Seams"), the shape of nvmet's
// nvmet_fabrics_ops and SPDK's spdk_nvmf_transport_ops: listen, start, stop accepting, move
// queues, budgets, I/O mechanism, stats. The engine holds a list of these and never asks which
// kind one is. The table grows as nvmet's did: by appending a virtual with a default that does
// what a transport without the feature should, so an existing transport compiles unchanged.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/transport/budgets.hpp"
#include "engine/transport/io_mechanism.hpp"

namespace exec {
class Executor;
}

namespace transport {

// What the engine sums over its transports; a transport counts what it can (RDMA has no PDUs).
struct Stats {
  uint64_t pdus_rx = 0, pdus_tx = 0;
  uint64_t protocol_errors = 0;  // queues ended with a C2HTermReq
  uint32_t queues = 0;           // connected queues now
};

// What a listener that cannot listen does to the engine's start.
enum class ListenFailure : uint8_t {
  fails_start,      // an error of start(), which then serves nothing
  serves_the_rest,  // logged and an event; the engine serves its other listeners (RDMA on a
                    // host without an RDMA device)
};

class Transport {
 public:
  virtual ~Transport() = default;

  // The config's name ("tcp", "rdma") and the Discovery Log Page TRTYPE.
  virtual std::string_view name() const = 0;
  virtual uint8_t trtype() const = 0;

  // Binds and listens; the bound port, or 0 with error set.
  virtual uint16_t listen(const std::string& traddr, const std::string& trsvcid, std::string& error) = 0;
  // Starts accepting on every address listened on.
  virtual void start() = 0;
  // Stops accepting. Queues are retired by the executor's stop().
  virtual void stop_accepting() = 0;
  // Live switch: new connections go to `to`, and every queue is released by its executor at an
  // io_work boundary and attached to `to`. Returns once all moved (or closed), or an error
  // after timeout_ms.
  virtual std::string move_queues(exec::Executor& to, unsigned timeout_ms) = 0;
  // Live: every queue reads them at its next io_work pass.
  virtual void set_budgets(const Budgets& b) = 0;
  virtual Stats totals() const = 0;

  // --- Optional, appended: the defaults are right for a transport without the feature. ---

  // For connections accepted from now on.
  virtual void set_io_mechanism(IoMechanism) {}
  virtual ListenFailure listen_failure() const { return ListenFailure::fails_start; }
};

}  // namespace transport
