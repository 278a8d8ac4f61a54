// The discovery controller: a subset of the admin command set (Identify Controller, the
// discovery log page, features, keep alive, AER).
#include "engine/core/handlers.hpp"
#include "engine/core/submission_queue.hpp"

namespace core {

nvme::Status prepare_discovery(SubmissionQueue& sq, Request& req) {
  switch (static_cast<nvme::AdminOpcode>(req.sqe.opcode())) {
    case nvme::AdminOpcode::identify:
      if ((req.sqe.cdw(10) & 0xff) != static_cast<uint8_t>(nvme::Cns::controller))
        return nvme::status::invalid_field.at(40);
      return prepare_admin(sq, req);
    case nvme::AdminOpcode::get_log_page:
    case nvme::AdminOpcode::set_features:
    case nvme::AdminOpcode::get_features:
    case nvme::AdminOpcode::keep_alive:
    case nvme::AdminOpcode::async_event_request:
      return prepare_admin(sq, req);
    default:
      return nvme::status::invalid_opcode.at(0);
  }
}

void execute_discovery(SubmissionQueue& sq, Request& req) { execute_admin(sq, req); }

}  // namespace core
