// Fabrics commands: Connect, Property Get/Set, Disconnect; authentication is not supported.
#include <cstring>

#include "engine/core/handlers.hpp"
#include "engine/core/submission_queue.hpp"
#include "engine/core/target.hpp"
#include "engine/core/wire_text.hpp"

namespace core {
namespace {

using nvme::FabricsType;
namespace st = nvme::status;

namespace connect_sqe {  // Connect command SQE byte offsets
inline constexpr size_t recfmt = 40, qid = 42, sqsize = 44, cattr = 46, kato = 48;
inline constexpr uint8_t cattr_disable_sqflow = 1u << 2;
}  // namespace connect_sqe

inline constexpr uint16_t dynamic_cntlid = 0xffff;

namespace property_sqe {
inline constexpr size_t attrib = 40, offset = 44, value = 48;
}

// Connect response DW0 for Connect Invalid Parameters: bit 16 set = offset into the data.
constexpr uint32_t invalid_in_data(size_t off) { return (1u << 16) | static_cast<uint32_t>(off); }
constexpr uint32_t invalid_in_sqe(size_t off) { return static_cast<uint32_t>(off); }

// The host NQN exactly as the Connect data carried it, quoted, so that an empty one (a host
// that sent none) reads as "" and not as a gap in the line.
std::string host_text(const std::string& hostnqn) {
  return "host " + json_string(hostnqn) + (hostnqn.empty() ? " (empty host NQN)" : "");
}

// Why the NQN field at `off` of a Connect's data is not an NQN, or nullptr. What a host writes
// there reaches logs, events and the control socket's JSON: text that is not UTF-8, or holds
// a newline or a terminal escape, is refused here rather than carried along.
const char* nqn_fault(const uint8_t* data, size_t off) {
  const std::string_view nqn = nvme::get_cstr(data, off, nvme::connect_data::nqn_width);
  if (nqn.size() == nvme::connect_data::nqn_width) return "is not null-terminated";
  if (nqn.size() > nvme::nqn_max_bytes) return "is longer than 223 bytes";
  if (!is_display_safe(nqn)) return "is not UTF-8 text without control characters";
  return nullptr;
}

void fail_connect(SubmissionQueue& sq, Request& req, nvme::Status s, uint32_t ipo) {
  req.cqe.dw0 = ipo;
  sq.complete(req, s);
}

void connect_admin(SubmissionQueue& sq, Request& req, std::shared_ptr<Subsystem> subsys,
                   const std::string& hostnqn, uint16_t sqsize, bool no_sqflow) {
  std::array<uint8_t, 16> hostid{};
  std::memcpy(hostid.data(), req.buf + nvme::connect_data::hostid, 16);
  const uint32_t kato = nvme::get_le<uint32_t>(req.sqe.b.data(), connect_sqe::kato);
  auto ctrl = std::make_shared<Controller>(sq.target(), subsys, hostnqn, hostid, kato);
  const uint16_t cntlid = subsys->register_controller(ctrl);
  if (cntlid == 0) return sq.complete(req, st::connect_controller_busy);
  ctrl->set_cntlid(cntlid);
  ctrl->attach_queue(0, &sq);
  sq.bind(ctrl, 0, sqsize, no_sqflow);
  sq.target().counters().connects.fetch_add(1);
  sq.target().log(EventLevel::info, "connect: " + host_text(hostnqn) + " -> " + subsys->nqn() + " cntlid " +
                                        std::to_string(cntlid) + " kato " + std::to_string(ctrl->kato_ms()) +
                                        " ms (" + sq.transport().peer() + ")");
  sq.target().event("connect", "{\"hostnqn\":" + json_string(hostnqn) + ",\"subnqn\":" +
                                    json_string(subsys->nqn()) + ",\"cntlid\":" + std::to_string(cntlid) +
                                    ",\"peer\":" + json_string(sq.transport().peer()) + "}");
  req.cqe.dw0 = cntlid;
  sq.complete(req, st::success);
}

void connect_io(SubmissionQueue& sq, Request& req, std::shared_ptr<Subsystem> subsys,
                const std::string& hostnqn, uint16_t qid, uint16_t sqsize, bool no_sqflow) {
  const uint16_t cntlid = nvme::get_le<uint16_t>(req.buf, nvme::connect_data::cntlid);
  auto ctrl = subsys->find_controller(cntlid);
  if (!ctrl || ctrl->dead() || ctrl->hostnqn() != hostnqn)
    return fail_connect(sq, req, st::connect_invalid_parameters,
                        invalid_in_data(nvme::connect_data::cntlid));
  if (!ctrl->enabled())
    return fail_connect(sq, req, st::connect_invalid_parameters,
                        invalid_in_data(nvme::connect_data::cntlid));
  if (qid > ctrl->io_queues_allowed() || !ctrl->attach_queue(qid, &sq))
    return fail_connect(sq, req, st::connect_invalid_parameters, invalid_in_sqe(connect_sqe::qid));
  sq.bind(ctrl, qid, sqsize, no_sqflow);
  req.cqe.dw0 = cntlid;
  sq.complete(req, st::success);
}

void execute_connect(SubmissionQueue& sq, Request& req) {
  const auto* d = req.buf;
  for (const size_t off : {nvme::connect_data::subnqn, nvme::connect_data::hostnqn}) {
    if (const char* fault = nqn_fault(d, off)) {
      const char* which = off == nvme::connect_data::subnqn ? "subsystem" : "host";
      // What the host sent, escaped (\xNN) and cut short, so an operator can tell which host it was.
      const std::string sent = display_text(nvme::get_cstr(d, off, nvme::connect_data::nqn_width).substr(0, 96));
      sq.target().log(EventLevel::warning, std::string("connect refused: the ") + which + " NQN \"" + sent + "\" " +
                                               fault + " (" + sq.transport().peer() + ")");
      return fail_connect(sq, req, st::connect_invalid_parameters, invalid_in_data(off));
    }
  }
  const std::string subnqn(nvme::get_cstr(d, nvme::connect_data::subnqn, nvme::connect_data::nqn_width));
  const std::string hostnqn(nvme::get_cstr(d, nvme::connect_data::hostnqn, nvme::connect_data::nqn_width));
  const uint16_t qid = nvme::get_le<uint16_t>(req.sqe.b.data(), connect_sqe::qid);
  const uint16_t sqsize0 = nvme::get_le<uint16_t>(req.sqe.b.data(), connect_sqe::sqsize);
  const bool no_sqflow = req.sqe.b[connect_sqe::cattr] & connect_sqe::cattr_disable_sqflow;

  auto subsys = sq.target().find(subnqn);
  if (!subsys) {
    sq.target().log(EventLevel::warning, "connect refused: unknown subsystem " + json_string(subnqn) + " from " + host_text(hostnqn));
    return fail_connect(sq, req, st::connect_invalid_parameters,
                        invalid_in_data(nvme::connect_data::subnqn));
  }
  if (!subsys->host_allowed(hostnqn)) {
    sq.target().log(EventLevel::warning, "connect refused: " + host_text(hostnqn) + " not allowed on " + json_string(subnqn));
    return fail_connect(sq, req, st::connect_invalid_host, invalid_in_data(nvme::connect_data::hostnqn));
  }
  const uint32_t mqes = sq.target().limits().queue_depth - 1;
  if (sqsize0 == 0 || sqsize0 > mqes || (subsys->is_discovery() && qid != 0))
    return fail_connect(sq, req, st::connect_invalid_parameters,
                        invalid_in_sqe(subsys->is_discovery() ? connect_sqe::qid : connect_sqe::sqsize));
  const uint16_t entries = static_cast<uint16_t>(sqsize0 + 1);
  if (!sq.transport().size_for(entries)) {
    sq.target().log(EventLevel::warning, std::string("connect refused: no memory for ") + std::to_string(entries) +
                                             " command slots (" + sq.transport().peer() + ")");
    return sq.complete(req, st::internal_error);
  }
  // The dynamic controller model: an admin Connect asks for "any controller" (FFFFh).
  if (qid == 0 && nvme::get_le<uint16_t>(req.buf, nvme::connect_data::cntlid) != dynamic_cntlid)
    return fail_connect(sq, req, st::connect_invalid_parameters, invalid_in_data(nvme::connect_data::cntlid));
  if (qid == 0) return connect_admin(sq, req, subsys, hostnqn, entries, no_sqflow);
  connect_io(sq, req, subsys, hostnqn, qid, entries, no_sqflow);
}

bool read_property(const Controller& c, uint32_t offset, bool eight, uint64_t& out) {
  switch (static_cast<nvme::Property>(offset)) {
    case nvme::Property::cap: out = c.cap(); return eight;
    case nvme::Property::vs: out = nvme::version_1_3; return !eight;
    case nvme::Property::cc: out = c.cc(); return !eight;
    case nvme::Property::csts: out = c.csts(); return !eight;
    default: return false;
  }
}

}  // namespace

nvme::Status prepare_fabrics(SubmissionQueue& sq, Request& req) {
  switch (static_cast<FabricsType>(req.sqe.fctype())) {
    case FabricsType::connect:
      if (sq.connected()) return st::command_sequence_error;
      if (nvme::get_le<uint16_t>(req.sqe.b.data(), connect_sqe::recfmt) != 0)
        return st::connect_incompatible_format.at(connect_sqe::recfmt);
      req.dir = DataDir::host_to_controller;
      req.transfer_len = nvme::connect_data::size;
      return st::success;
    case FabricsType::property_get:
    case FabricsType::property_set:
      if (sq.qid() != 0) return st::invalid_field.at(4);
      return st::success;
    case FabricsType::disconnect:
      // Disconnect deletes the I/O queue it arrives on; the admin queue ends with the
      // association (CC.SHN, or closing the connection).
      if (sq.qid() == 0) return st::invalid_queue_type;
      return st::success;
    default:  // Authentication Send/Receive and anything newer: not supported
      return st::invalid_opcode.at(4);
  }
}

void execute_fabrics(SubmissionQueue& sq, Request& req) {
  auto* c = sq.controller();
  const auto* b = req.sqe.b.data();
  switch (static_cast<FabricsType>(req.sqe.fctype())) {
    case FabricsType::connect:
      return execute_connect(sq, req);
    case FabricsType::property_get: {
      uint64_t v = 0;
      const bool eight = b[property_sqe::attrib] & 1;
      if (!read_property(*c, nvme::get_le<uint32_t>(b, property_sqe::offset), eight, v))
        return sq.complete(req, st::invalid_field.at(property_sqe::offset));
      req.cqe.dw0 = static_cast<uint32_t>(v);
      req.cqe.dw1 = static_cast<uint32_t>(v >> 32);
      return sq.complete(req, st::success);
    }
    case FabricsType::property_set: {
      const uint32_t off = nvme::get_le<uint32_t>(b, property_sqe::offset);
      if (off != static_cast<uint32_t>(nvme::Property::cc) || (b[property_sqe::attrib] & 1))
        return sq.complete(req, st::invalid_field.at(property_sqe::offset));
      c->write_cc(nvme::get_le<uint32_t>(b, property_sqe::value));
      return sq.complete(req, st::success);
    }
    case FabricsType::disconnect:
      sq.complete(req, st::success);
      return sq.disconnect_requested();
    default:
      return sq.complete(req, st::success);
  }
}

}  // namespace core
