// An "rdma" listener on a host without an RDMA device (these build machines: no RDMA NIC, no
// RDMA kernel stack): the engine starts, reports "no RDMA device" for that listener in its log
// and as a listener_error event, and its TCP listener serves I/O. The RDMA data path itself
// needs a device and is exercised in the interop guest (soft-RoCE), not here.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/config/config.hpp"
#include "engine/control/engine.hpp"
#include "engine/initiator/initiator.hpp"
#include "engine/rdma/device.hpp"

namespace {

constexpr const char* test_nqn = "nqn.2026-12.io.nvmetune:rdma-listener";
constexpr const char* host_nqn = "nqn.2014-08.org.nvmexpress:uuid:cccccccc-0000-4000-8000-000000000003";

control::Config config_with_rdma() {
  control::Config c;
  c.listeners.push_back(control::ListenerConfig{"rdma", "127.0.0.1", "4420"});
  c.listeners.push_back(control::ListenerConfig{"tcp", "127.0.0.1", "0"});
  control::SubsystemConfig s;
  s.nqn = test_nqn;
  s.allow_any_host = true;
  control::NamespaceConfig ns;
  ns.nsid = 1;
  ns.backend.kind = "ram";
  ns.backend.size_bytes = 8 << 20;
  ns.block_size = 512;
  s.namespaces.push_back(ns);
  c.subsystems.push_back(s);
  c.threading.mode = "bound";
  return c;
}

TEST(RdmaConfig, ListenersAcceptRdma) {
  auto c = config_with_rdma();
  // The same address and port on both transports is no conflict: they are separate port spaces.
  c.listeners[1].trsvcid = "4420";
  EXPECT_TRUE(control::validate(c).empty());
  c.listeners[0].trtype = "roce";
  const auto errs = control::validate(c);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].path, "$.listeners[0].trtype");
  EXPECT_NE(errs[0].message.find("\"rdma\""), std::string::npos) << errs[0].message;
}

TEST(RdmaListener, NoDeviceIsReportedAndTcpKeepsServing) {
  if (rdma::rdma_unavailable().empty()) GTEST_SKIP() << "this host has an RDMA device";
  engine::Engine eng(config_with_rdma());
  std::mutex mu;
  std::vector<std::string> errors;
  eng.set_log_sink([&](engine::LogLevel lvl, std::string_view msg) {
    std::lock_guard lk(mu);
    if (lvl == engine::LogLevel::error) errors.emplace_back(msg);
  });
  const auto errs = eng.start();
  for (const auto& e : errs) ADD_FAILURE() << e.path << ": " << e.message;
  ASSERT_TRUE(errs.empty());

  {
    std::lock_guard lk(mu);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("$.listeners[0] rdma 127.0.0.1:4420: no RDMA device"), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("rdma link add"), std::string::npos) << "the fix is named: " << errors[0];
  }
  bool reported = false;
  for (const auto& ev : eng.events())
    if (ev.kind == "listener_error") {
      reported = true;
      EXPECT_NE(ev.detail_json.find("\"trtype\":\"rdma\""), std::string::npos) << ev.detail_json;
      EXPECT_NE(ev.detail_json.find("no RDMA device"), std::string::npos) << ev.detail_json;
    }
  EXPECT_TRUE(reported) << "no listener_error event";

  const auto ls = eng.listeners();
  ASSERT_EQ(ls.size(), 1u) << "only the TCP listener is up";
  EXPECT_EQ(ls[0].trtype, "tcp");

  // The TCP listener serves: connect, and write then read back a block.
  initiator::Target t;
  t.traddr = "127.0.0.1";
  t.port = ls[0].port;
  t.subnqn = test_nqn;
  t.hostnqn = host_nqn;
  auto ctrl = initiator::Controller::connect(t);
  ASSERT_TRUE(ctrl) << ctrl.error().to_string();
  auto q = (*ctrl)->create_io_queue();
  ASSERT_TRUE(q) << q.error().to_string();
  std::vector<uint8_t> w(4096, 0x5a), r(4096, 0);
  auto wr = initiator::sync_io(**q, initiator::Io{initiator::Op::write, 1, 8, 7, w}, 10000);
  ASSERT_TRUE(wr) << wr.error().to_string();
  auto rd = initiator::sync_io(**q, initiator::Io{initiator::Op::read, 1, 8, 7, r}, 10000);
  ASSERT_TRUE(rd) << rd.error().to_string();
  EXPECT_EQ(w, r);
  eng.stop();
}

}  // namespace
