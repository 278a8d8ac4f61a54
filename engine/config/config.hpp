#pragma once
// The engine's configuration: what nvmetune serves and how. Parsed from JSON with every
// error reported with its JSON path (nothing is applied unless all of it is valid).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend.hpp"
#include "engine/json/config_error.hpp"
#include "engine/config/config_cpumask.hpp"
#include "engine/config/size_text.hpp"
#include "engine/transport/budgets.hpp"

namespace control {

struct ListenerConfig {
  std::string trtype = "tcp";
  std::string traddr = "127.0.0.1";
  std::string trsvcid = "4420";  // "0" = any free port (tests)
};

struct NamespaceConfig {
  uint32_t nsid = 1;
  backend::BackendSpec backend;  // kind, size_bytes, path, create, direct
  uint32_t block_size = 512;     // 512 or 4096
  std::string uuid;              // optional; derived from subsystem NQN + nsid when empty
};

struct SubsystemConfig {
  std::string nqn;
  std::string serial;            // derived from the NQN when empty
  std::string model = "nvmetune";
  bool allow_any_host = false;
  std::vector<std::string> hosts;  // allowed host NQNs
  std::vector<NamespaceConfig> namespaces;
};

struct TcpConfig {
  uint32_t in_capsule_data_size = 8192;  // I/O queues; admin queues always take 8 KiB
  uint32_t maxh2cdata = 128 * 1024;
  uint32_t queue_depth = 128;             // MQES + 1
  uint32_t max_io_queues = 64;            // per controller
  uint32_t mdts_bytes = 1024 * 1024;      // largest transfer per command
  // Socket options on the listening and every accepted socket (nvmet-tcp's so_priority;
  // busy polling of the NIC queue a socket's packets arrive on). -1 / 0 / false = not set.
  int so_priority = -1;                   // SO_PRIORITY 0..6 (higher needs CAP_NET_ADMIN)
  uint32_t busy_poll_us = 0;              // SO_BUSY_POLL
  bool prefer_busy_poll = false;          // SO_PREFER_BUSY_POLL
  // SO_SNDBUF and SO_RCVBUF of every socket (the kernel doubles it for its bookkeeping); 0 = the
  // kernel's autotuning. SPDK's posix sockets ask for 2 MiB each way too: a fixed, large buffer
  // measured +1.3..4.5 % IOPS at 4k randread qd32 over autotuning (bound and poll, A B x3).
  uint64_t socket_buffer_bytes = 2ull << 20;
  // Both transports (as queue depth, in-capsule size and MDTS): TCP and RDMA connections served
  // at once, together (more are closed at accept or rejected), and accept (RDMA: established)
  // to Connect: a connection that has not connected this long is closed.
  uint32_t max_connections = 4096;
  uint32_t connect_timeout_ms = 10000;
  // KATO of a discovery controller whose host sent 0 (core::default_discovery_kato_ms says why).
  uint32_t discovery_kato_ms = 120000;
  // The kernel stamps every received segment (SO_TIMESTAMPING): the target latency starts at the
  // capsule's arrival. Off, it starts when the engine saw the queue ready (no wake-up delay).
  bool arrival_stamps = true;
};

// The NVMe/RDMA transport's own settings (queue depth, in-capsule size and MDTS come from "tcp",
// which both transports share). Applied at start.
struct RdmaConfig {
  uint64_t data_pool_bytes = 32ull << 20;  // command data buffers per RDMA device, registered once
  bool use_srq = false;                    // one shared receive queue per device (nvmet-rdma's use_srq)
  uint32_t srq_size = 1024;                // its receive buffers (nvmet-rdma's srq_size)
  int comp_vector = -1;                    // -1: spread queues over the device's vectors by qid; n: all on n
};

// The execution model (DESIGN.md "Execution models"); every field can change live.
struct ThreadingConfig {
  std::string mode = "bound";      // bound | unbound | poll | inline
  std::vector<unsigned> cpus;      // worker cpumask as CPU numbers; empty = every CPU this process may run on
  unsigned threads = 0;            // unbound/poll/inline workers; 0 = one per CPU of the mask (bound: always)
  std::string queue_cpu = "incoming";   // bound: incoming (SO_INCOMING_CPU) | round_robin
  std::string affinity_scope = "cache"; // unbound: cpu | smt | cache | numa | system
  bool strict = false;             // unbound: workers never leave their pod's CPUs
  int first_core = -1;             // poll: thread i pinned to first_core + i; -1 = free over cpus
  unsigned idle_poll_us = 1000;    // poll: busy-poll this long without work, then sleep
  // bound: poll up to this long after the last work before sleeping (nvmet-tcp's
  // idle_poll_period_usecs); 0 sleeps at once, as the kernel's bound workqueue does. 50 µs covers
  // a host's round trip on loopback and a fast network; the adaptive window spends it only where
  // commands come that close together.
  unsigned idle_poll_period_us = 50;
  // bound: the poll window follows the gaps between commands, up to idle_poll_period_us: open
  // while they come closer than that, shut after a longer one (exec/event/idle_poll_window.hpp)
  bool idle_poll_adaptive = true;
  std::string priority = "normal"; // poll: normal | nice (-20) | fifo (SCHED_FIFO)
  unsigned inline_budget = 8;      // inline: PDUs handled in the notification context
  std::string io_mechanism = "epoll";  // epoll | io_uring
};

// The budgets section; the defaults (and why they are what they are) are transport::Budgets'.
struct BudgetConfig {
  unsigned recv_pdus = transport::Budgets{}.recv_pdus;
  unsigned send_pdus = transport::Budgets{}.send_pdus;
  unsigned ops_per_pass = transport::Budgets{}.ops_per_pass;
  uint32_t bytes_per_pass = transport::Budgets{}.bytes_per_pass;  // 0 = unlimited
  unsigned deadline_us = transport::Budgets{}.deadline_us;        // 0 = none
  unsigned reap_batch = transport::Budgets{}.reap_batch;
};

struct Config {
  std::vector<ListenerConfig> listeners;
  std::vector<SubsystemConfig> subsystems;
  TcpConfig tcp;
  RdmaConfig rdma;
  ThreadingConfig threading;
  BudgetConfig budgets;
};

struct ParseResult {
  Config config;
  std::vector<ConfigError> errors;  // empty = valid
};

// Parses and validates a whole configuration document in one pass.
ParseResult parse_config(std::string_view json_text);

// Semantic checks shared by parse_config and callers that build a Config in code
// (duplicate NQNs/NSIDs, ranges, missing backends).
std::vector<ConfigError> validate(const Config& c);

// The embedded default: a 1 GiB RAM namespace in nqn.2026-12.io.nvmetune:default on
// 127.0.0.1:4420, any host allowed.
Config default_config();

inline constexpr const char* default_nqn = "nqn.2026-12.io.nvmetune:default";

}  // namespace control
