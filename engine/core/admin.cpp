// Admin command set of an I/O controller: Identify, Get Log Page, Get/Set Features,
// Keep Alive, Asynchronous Event Request, Abort.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/handlers.hpp"
#include "engine/core/identify.hpp"
#include "engine/core/log_page.hpp"
#include "engine/core/submission_queue.hpp"
#include "engine/core/target.hpp"

namespace core {
namespace {

using nvme::AdminOpcode;
namespace st = nvme::status;

constexpr uint16_t cdw10_loc = 40, cdw11_loc = 44, nsid_loc = 4;
constexpr uint32_t nsid_broadcast = 0xffffffff;

uint8_t cns_of(const Request& r) { return r.sqe.cdw(10) & 0xff; }
uint8_t fid_of(const Request& r) { return r.sqe.cdw(10) & 0xff; }

nvme::Status prepare_identify(SubmissionQueue& sq, Request& req) {
  const Subsystem& s = sq.controller()->subsystem();
  const uint32_t nsid = req.sqe.nsid();
  switch (static_cast<nvme::Cns>(cns_of(req))) {
    case nvme::Cns::namespace_:
      if (nsid == 0 || (nsid > s.nn() && nsid != nsid_broadcast)) return st::invalid_namespace.at(nsid_loc);
      break;
    case nvme::Cns::namespace_id_descriptors:
      if (!s.namespaces().active(nsid)) return st::invalid_namespace.at(nsid_loc);
      break;
    case nvme::Cns::active_namespace_list:
      if (nsid >= 0xfffffffe) return st::invalid_namespace.at(nsid_loc);
      break;
    case nvme::Cns::controller:
      break;
    default:
      return st::invalid_field.at(cdw10_loc);
  }
  req.dir = DataDir::controller_to_host;
  req.transfer_len = identify_size;
  return st::success;
}

void execute_identify(SubmissionQueue& sq, Request& req) {
  const Subsystem& s = sq.controller()->subsystem();
  uint8_t* out = req.buf;
  switch (static_cast<nvme::Cns>(cns_of(req))) {
    case nvme::Cns::namespace_:
      // An inactive NSID in range returns a zeroed structure (NVMe base spec).
      if (NsRef ns(s.namespaces(), req.sqe.nsid()); ns) ns->fill_identify(out);
      else std::memset(out, 0, identify_size);
      break;
    case nvme::Cns::controller: fill_identify_controller(sq, out); break;
    case nvme::Cns::active_namespace_list: fill_active_ns_list(s, req.sqe.nsid(), out); break;
    case nvme::Cns::namespace_id_descriptors:
      if (NsRef ns(s.namespaces(), req.sqe.nsid()); ns) fill_ns_descriptors(*ns, out);
      else return sq.complete(req, st::invalid_namespace.at(nsid_loc));
      break;
  }
  req.response_len = identify_size;
  sq.complete(req, st::success);
}

// Set/Get Features (the four this controller implements).
void execute_set_features(SubmissionQueue& sq, Request& req) {
  Controller& c = *sq.controller();
  const uint32_t v = req.sqe.cdw(11);
  if (req.sqe.cdw(10) & (1u << 31)) return sq.complete(req, st::feature_not_saveable.at(cdw10_loc));
  switch (static_cast<nvme::FeatureId>(fid_of(req))) {
    case nvme::FeatureId::number_of_queues: {
      if ((v & 0xffff) == 0xffff || (v >> 16) == 0xffff) return sq.complete(req, st::invalid_field.at(cdw11_loc));
      const uint32_t max = sq.target().limits().max_io_queues;
      const uint32_t want = std::max(v & 0xffff, v >> 16) + 1;
      c.set_io_queues_allowed(static_cast<uint16_t>(std::min(want, max)));
      const uint32_t n = std::min(want, max) - 1;
      req.cqe.dw0 = n | (n << 16);
      break;
    }
    case nvme::FeatureId::keep_alive_timer: c.set_kato_ms(v); break;
    case nvme::FeatureId::async_event_config: c.set_async_event_config(v); break;
    case nvme::FeatureId::volatile_write_cache: c.set_volatile_write_cache(v & 1); break;
    default: return sq.complete(req, st::invalid_field.at(cdw10_loc));
  }
  sq.complete(req, st::success);
}

void execute_get_features(SubmissionQueue& sq, Request& req) {
  const Controller& c = *sq.controller();
  switch (static_cast<nvme::FeatureId>(fid_of(req))) {
    case nvme::FeatureId::number_of_queues: {
      const uint32_t n = c.io_queues_allowed() - 1u;
      req.cqe.dw0 = n | (n << 16);
      break;
    }
    case nvme::FeatureId::keep_alive_timer: req.cqe.dw0 = c.kato_ms(); break;
    case nvme::FeatureId::async_event_config: req.cqe.dw0 = c.async_event_config(); break;
    case nvme::FeatureId::volatile_write_cache: req.cqe.dw0 = c.volatile_write_cache() ? 1 : 0; break;
    default: return sq.complete(req, st::invalid_field.at(cdw10_loc));
  }
  sq.complete(req, st::success);
}

}  // namespace

nvme::Status prepare_admin(SubmissionQueue& sq, Request& req) {
  switch (static_cast<AdminOpcode>(req.sqe.opcode())) {
    case AdminOpcode::identify: return prepare_identify(sq, req);
    case AdminOpcode::get_log_page: return prepare_log_page(sq, req);
    case AdminOpcode::set_features:
    case AdminOpcode::get_features:
    case AdminOpcode::keep_alive:
    case AdminOpcode::async_event_request:
    case AdminOpcode::abort:
      return st::success;
    default:
      return st::invalid_opcode.at(0);
  }
}

void execute_admin(SubmissionQueue& sq, Request& req) {
  switch (static_cast<AdminOpcode>(req.sqe.opcode())) {
    case AdminOpcode::identify: return execute_identify(sq, req);
    case AdminOpcode::get_log_page: return execute_log_page(sq, req);
    case AdminOpcode::set_features: return execute_set_features(sq, req);
    case AdminOpcode::get_features: return execute_get_features(sq, req);
    case AdminOpcode::keep_alive:
      sq.controller()->keep_alive();
      return sq.complete(req, st::success);
    case AdminOpcode::async_event_request:
      // Completed later by poll_events() when an event happens.
      if (!sq.park_aer(req)) return sq.complete(req, st::async_event_limit_exceeded);
      sq.poll_events();  // an event may already be waiting for this request
      return;
    case AdminOpcode::abort:
      req.cqe.dw0 = 1;  // bit 0 set: command not aborted (commands here finish quickly)
      return sq.complete(req, st::success);
    default:
      return sq.complete(req, st::invalid_opcode.at(0));
  }
}

void reply_data(Request& req, const void* data, uint32_t len) {
  const uint32_t n = std::min(len, req.transfer_len);
  std::memcpy(req.buf, data, n);
  if (n < req.transfer_len) std::memset(req.buf + n, 0, req.transfer_len - n);
  req.response_len = req.transfer_len;
}

}  // namespace core
