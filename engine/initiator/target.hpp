#pragma once
// Where and as whom the host connects: one subsystem on one NVMe/TCP or NVMe/RDMA listener.
#include <array>
#include <cstdint>
#include <string>

namespace initiator {

enum class Transport : uint8_t { tcp, rdma };
constexpr const char* transport_name(Transport t) { return t == Transport::rdma ? "rdma" : "tcp"; }

struct Target {
  Transport trtype = Transport::tcp;
  std::string traddr = "127.0.0.1";  // IPv4/IPv6 literal or host name
  uint16_t port = 4420;              // TRSVCID
  std::string subnqn;
  std::string hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000000";
  std::array<uint8_t, 16> hostid{};
  bool hdgst = false;  // request header digests in ICReq (NVMe/TCP only)
  bool ddgst = false;  // request data digests in ICReq (NVMe/TCP only)
  uint32_t kato_ms = 0;  // keep-alive timeout sent in the admin Connect; 0 = none
  uint16_t queue_depth = 128;  // I/O queue slots (Connect SQSIZE + 1)
  bool disable_sqflow = false; // Connect CATTR: SQ flow control off (allows C2HData SUCCESS)
  int timeout_ms = 5000;       // connect (address and route resolution), handshake, each admin command
};

}  // namespace initiator
