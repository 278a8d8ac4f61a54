#pragma once
// A preallocated command slot of a TcpQueue (private to engine/tcp/).
#include "engine/tcp/queue.hpp"

namespace tcp {

// Room for a data PDU header with header digest and the largest HPDA padding (128 bytes).
inline constexpr size_t pdu_hdr_room = 160;

struct TcpQueue::Command {
  core::Request req;
  CmdState state = CmdState::free;
  uint16_t index = 0;
  uint32_t h2c_next = 0;    // next expected DATAO of H2CData
  bool digest_error = false;
  nvme::Status early;       // status decided before the data arrived (completed after it)
  std::array<uint8_t, pdu_hdr_room> c2h_hdr{};
  std::array<uint8_t, pdu_hdr_room> resp_hdr{};
  std::array<uint8_t, pdu_hdr_room> r2t_hdr{};
  std::array<uint8_t, digest_len> ddgst{};
};

}  // namespace tcp
