// The transport seam (engine/transport/, engine/control/transport_factory.hpp; issue 35): every
// trtype a listener may name is one row of the registry, built from the configuration, and
// driven through transport::Transport alone. The rules that keep it a seam are checked on the
// sources: the engine names no transport, RDMA takes nothing from TCP, core/ includes none.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/control/transport_factory.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/connection_cap.hpp"
#include "engine/stats/registry.hpp"
#include "support/source_dir.hpp"
#include "support/tcp_queue_harness.hpp"

namespace {

struct Parts {
  core::Target target{core::Limits{}};
  test_support::PassiveExecutor executor;
  stats::Registry registry;
  exec::ConnectionCap cap{8};
  control::TransportContext context() {
    return {target, executor, registry, cap, transport::Budgets{}, transport::IoMechanism::epoll};
  }
};

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(TransportRegistry, KnowsTcpAndRdmaAndNothingElse) {
  ASSERT_EQ(control::transport_names().size(), 2u);
  EXPECT_EQ(control::transport_names()[0], "tcp");
  EXPECT_EQ(control::transport_names()[1], "rdma");
  EXPECT_TRUE(control::known_transport("tcp"));
  EXPECT_TRUE(control::known_transport("rdma"));
  EXPECT_FALSE(control::known_transport("fc"));
  Parts parts;
  std::string err;
  EXPECT_EQ(control::make_transport("fc", control::Config{}, parts.context(), err), nullptr);
  EXPECT_NE(err.find("\"fc\""), std::string::npos) << err;
}

TEST(TransportRegistry, TcpListensAndCountsThroughTheInterface) {
  Parts parts;
  std::string err;
  auto t = control::make_transport("tcp", control::Config{}, parts.context(), err);
  ASSERT_NE(t, nullptr) << err;
  EXPECT_EQ(t->name(), "tcp");
  EXPECT_EQ(t->trtype(), core::trtype_tcp);
  EXPECT_EQ(t->listen_failure(), transport::ListenFailure::fails_start);
  ASSERT_NE(t->listen("127.0.0.1", "0", err), 0) << err;
  t->start();
  t->set_budgets(transport::Budgets{.recv_pdus = 4});
  t->set_io_mechanism(transport::IoMechanism::io_uring);
  EXPECT_EQ(t->totals().queues, 0u);
  t->stop_accepting();
}

TEST(TransportRegistry, RdmaIsATransportWhoseListenerMayFailAlone) {
  Parts parts;
  std::string err;
  auto t = control::make_transport("rdma", control::Config{}, parts.context(), err);
  ASSERT_NE(t, nullptr) << err;
  EXPECT_EQ(t->name(), "rdma");
  EXPECT_EQ(t->trtype(), core::trtype_rdma);
  EXPECT_EQ(t->listen_failure(), transport::ListenFailure::serves_the_rest);
  EXPECT_EQ(t->totals().queues, 0u);
}

// The keys stay where saved profiles have them ("tcp"); both transports read them from here.
TEST(TransportRegistry, SharedLimitsComeFromTheirKeys) {
  control::Config c;
  c.tcp.queue_depth = 64;
  c.tcp.in_capsule_data_size = 4096;
  c.tcp.mdts_bytes = 2 << 20;
  c.tcp.max_io_queues = 8;
  c.tcp.connect_timeout_ms = 500;
  const auto q = control::queue_limits_of(c);
  EXPECT_EQ(q.queue_depth, 64u);
  EXPECT_EQ(q.io_icd_size, 4096u);
  EXPECT_EQ(q.mdts_bytes, 2u << 20);
  EXPECT_EQ(q.max_io_queues, 8u);
  EXPECT_EQ(q.connect_timeout_ms, 500u);
  control::ThreadingConfig th;
  th.io_mechanism = "io_uring";
  EXPECT_EQ(control::mechanism_of(th), transport::IoMechanism::io_uring);
  control::BudgetConfig b;
  b.recv_pdus = 5;
  b.reap_batch = 7;
  EXPECT_EQ(control::budgets_of(b).recv_pdus, 5u);
  EXPECT_EQ(control::budgets_of(b).reap_batch, 7u);
}

TEST(TransportSeam, TheSourcesKeepIt) {
  const auto root = test_support::source_dir();
  if (root.empty()) GTEST_SKIP() << "NVMETUNE_SOURCE_DIR is not set (CTest sets it)";
  const auto engine = read_text(root / "engine/control/engine.cpp");
  ASSERT_FALSE(engine.empty());
  for (const char* kind : {"tcp::", "rdma::", "engine/tcp/", "engine/rdma/", "\"rdma\"", "\"tcp\""})
    EXPECT_EQ(engine.find(kind), std::string::npos) << "engine.cpp names a transport: " << kind;
  for (const auto& dir : {"engine/rdma", "engine/core", "engine/transport"})
    for (const auto& f : std::filesystem::directory_iterator(root / dir)) {
      const auto text = read_text(f.path());
      EXPECT_EQ(text.find("#include \"engine/tcp/"), std::string::npos) << f.path() << " includes TCP";
      if (std::string(dir) != "engine/rdma") {
        EXPECT_EQ(text.find("#include \"engine/rdma/"), std::string::npos) << f.path() << " includes RDMA";
      }
      if (std::string(dir) == "engine/core") {
        EXPECT_EQ(text.find("#include \"engine/transport/"), std::string::npos) << f.path() << " includes a transport";
      }
    }
}
