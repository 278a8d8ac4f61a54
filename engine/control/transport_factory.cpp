// The transport registry: one row per trtype, each turning the configuration into its transport.
#include "engine/control/transport_factory.hpp"

#include <algorithm>
#include <array>

#include "engine/rdma/listener.hpp"
#include "engine/tcp/listener.hpp"

namespace control {
namespace {

using Make = std::unique_ptr<transport::Transport> (*)(const Config&, const TransportContext&);

std::unique_ptr<transport::Transport> make_tcp(const Config& c, const TransportContext& ctx) {
  const auto q = queue_limits_of(c);
  const tcp::QueueLimits limits{q.queue_depth,        q.io_icd_size, c.tcp.maxh2cdata, q.mdts_bytes,
                                q.connect_timeout_ms, c.tcp.arrival_stamps};
  auto t = std::make_unique<tcp::TcpTransport>(ctx.target, ctx.executor, limits, ctx.budgets, ctx.registry, ctx.cap);
  t->set_io_mechanism(ctx.mechanism);
  t->set_socket_options({c.tcp.so_priority, c.tcp.busy_poll_us, c.tcp.prefer_busy_poll, c.tcp.socket_buffer_bytes});
  return t;
}

std::unique_ptr<transport::Transport> make_rdma(const Config& c, const TransportContext& ctx) {
  const auto q = queue_limits_of(c);
  const rdma::QueueLimits limits{q.queue_depth, q.io_icd_size, q.mdts_bytes, static_cast<uint16_t>(q.max_io_queues),
                                 q.connect_timeout_ms};
  const rdma::RdmaOptions options{c.rdma.data_pool_bytes, c.rdma.use_srq, c.rdma.srq_size, c.rdma.comp_vector};
  return std::make_unique<rdma::RdmaTransport>(ctx.target, ctx.executor, limits, ctx.budgets, ctx.registry, ctx.cap,
                                               options);
}

struct Row {
  std::string_view name;
  Make make;
};

constexpr std::array<Row, 2> registry{{{"tcp", make_tcp}, {"rdma", make_rdma}}};

}  // namespace

const std::vector<std::string_view>& transport_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> n;
    for (const auto& r : registry) n.push_back(r.name);
    return n;
  }();
  return names;
}

bool known_transport(std::string_view trtype) {
  return std::any_of(registry.begin(), registry.end(), [&](const Row& r) { return r.name == trtype; });
}

transport::QueueLimits queue_limits_of(const Config& c) {
  return {c.tcp.queue_depth, c.tcp.in_capsule_data_size, c.tcp.mdts_bytes, c.tcp.max_io_queues,
          c.tcp.connect_timeout_ms};
}

transport::Budgets budgets_of(const BudgetConfig& b) {
  return {b.recv_pdus, b.send_pdus, b.ops_per_pass, b.reap_batch, b.bytes_per_pass, b.deadline_us};
}

transport::IoMechanism mechanism_of(const ThreadingConfig& t) {
  return t.io_mechanism == "io_uring" ? transport::IoMechanism::io_uring : transport::IoMechanism::epoll;
}

std::unique_ptr<transport::Transport> make_transport(std::string_view trtype, const Config& c,
                                                     const TransportContext& ctx, std::string& error) {
  for (const auto& r : registry)
    if (r.name == trtype) return r.make(c, ctx);
  error = "unsupported transport \"" + std::string(trtype) + "\"";
  return nullptr;
}

}  // namespace control
