#pragma once
// Where and as whom the host connects: one NVMe/TCP subsystem on one listener.
#include <array>
#include <cstdint>
#include <string>

namespace initiator {

struct Target {
  std::string traddr = "127.0.0.1";  // IPv4/IPv6 literal or host name
  uint16_t port = 4420;              // TRSVCID
  std::string subnqn;
  std::string hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000000";
  std::array<uint8_t, 16> hostid{};
  bool hdgst = false;  // request header digests in ICReq
  bool ddgst = false;  // request data digests in ICReq
  uint32_t kato_ms = 0;  // keep-alive timeout sent in the admin Connect; 0 = none
  uint16_t queue_depth = 128;  // I/O queue slots (Connect SQSIZE + 1)
  bool disable_sqflow = false; // Connect CATTR: SQ flow control off (allows C2HData SUCCESS)
  int timeout_ms = 5000;       // connect, handshake and each synchronous admin command
};

}  // namespace initiator
