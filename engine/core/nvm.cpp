// NVM command set: Read, Write, Compare, Flush, Write Zeroes, Dataset Management.
// Each command becomes one backend Io at a time (DSM and Write Zeroes walk their ranges in
// pieces, one after another).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/core/handlers.hpp"
#include "engine/core/submission_queue.hpp"
#include "engine/core/target.hpp"
#include "engine/exec/executor.hpp"

namespace core {
namespace {

using nvme::NvmOpcode;
using backend::IoOp;
namespace st = nvme::status;

constexpr uint16_t nsid_loc = 4, slba_loc = 40, cdw12_loc = 48;
constexpr uint32_t dsm_range_size = 16;
constexpr uint32_t dsm_attr_deallocate = 1u << 2;

nvme::Status check_range(const Namespace& ns, uint64_t slba, uint64_t nlb) {
  if (slba + nlb < slba || slba + nlb > ns.nsze()) return st::lba_out_of_range.at(slba_loc);
  return st::success;
}

nvme::Status prepare_rw(const SubmissionQueue& sq, Request& req, DataDir dir) {
  const uint64_t nlb = uint64_t{req.sqe.nlb0()} + 1;
  const auto s = check_range(*req.ns, req.sqe.slba(), nlb);
  if (!s.ok()) return s;
  const uint64_t len = nlb << req.ns->lba_shift();
  if (len > sq.target().limits().mdts_bytes) return st::invalid_field.at(cdw12_loc);
  req.dir = dir;
  req.transfer_len = static_cast<uint32_t>(len);
  return st::success;
}

// Starts one backend Io. True when the backend completed it at once (io.result is set).
bool start_io(SubmissionQueue& sq, Request& req, IoOp op, uint64_t offset, uint32_t len, uint8_t* buf,
              uint64_t now_ns) {
  backend::Io& io = req.io;
  io.op = op;
  io.offset = offset;
  io.length = len;
  io.buf = buf;
  // Only the plain read's data goes straight to the host (Compare reads to compare).
  io.may_lend = op == IoOp::read && buf == req.buf && sq.transport().sends_lent_data();
  io.lent = nullptr;
  io.fua = op == IoOp::write && req.sqe.fua();
  io.result = 0;
  io.owner = &req;
  io.submit_ns = now_ns;
  return req.ns->backend().submit(sq.transport().io_context(), io);
}

void submit(SubmissionQueue& sq, Request& req, IoOp op, uint64_t offset, uint32_t len, uint8_t* buf,
            uint64_t now_ns) {
  if (start_io(sq, req, op, offset, len, buf, now_ns)) nvm_backend_done(sq, req);
}

// Range commands (DSM deallocate, Write Zeroes) walk their ranges in pieces of at most
// max_piece bytes (one Io's length), in a loop: a backend that completes at once never makes
// this recurse. After pieces_per_pass pieces the command yields to the queue's next pass, so
// 256 ranges of 1 TiB never hold a worker for more than one pass's share.
constexpr uint64_t max_piece = 1ull << 30;
constexpr unsigned pieces_per_pass = 64;

struct Range {
  uint64_t slba = 0, nlb = 0;
};

bool is_dsm(const Request& req) { return req.sqe.opcode() == static_cast<uint8_t>(NvmOpcode::dataset_management); }
uint32_t range_count(const Request& req) { return is_dsm(req) ? (req.sqe.cdw(10) & 0xff) + 1 : 1; }

Range range_at(const Request& req, uint32_t i) {
  if (!is_dsm(req)) return {req.sqe.slba(), uint64_t{req.sqe.nlb0()} + 1};
  const uint8_t* r = req.buf + dsm_range_size * i;
  return {nvme::get_le<uint64_t>(r, 8), nvme::get_le<uint32_t>(r, 4)};
}

void range_next(SubmissionQueue& sq, Request& req) {
  const Namespace& ns = *req.ns;
  const IoOp op = is_dsm(req) ? IoOp::discard : IoOp::write_zeroes;
  const uint32_t ranges = range_count(req);
  for (unsigned pieces = 0; req.step < ranges;) {
    const Range r = range_at(req, req.step);
    const auto s = check_range(ns, r.slba, r.nlb);
    if (!s.ok()) return sq.complete(req, s);
    const uint64_t len = r.nlb << ns.lba_shift();
    if (req.step_offset >= len) {
      ++req.step;
      req.step_offset = 0;
      continue;
    }
    if (pieces == pieces_per_pass && sq.transport().defer(req)) return;
    const uint64_t piece = std::min(max_piece, len - req.step_offset);
    const uint64_t off = (r.slba << ns.lba_shift()) + req.step_offset;
    req.step_offset += piece;
    ++pieces;
    if (!start_io(sq, req, op, off, static_cast<uint32_t>(piece), nullptr, exec::monotonic_ns()))
      return;  // reaped later
    if (auto* lat = sq.latency()) lat->backend_latency.record(exec::monotonic_ns() - req.io.submit_ns);
    if (req.io.result < 0) return sq.complete(req, nvme::status_from_errno(-req.io.result, false));
  }
  sq.complete(req, st::success);
}

void count(SubmissionQueue& sq, const Request& req) {
  auto& c = sq.counters_mut();
  auto& s = sq.stats_mut();
  if (req.io.op == IoOp::read && req.sqe.opcode() == static_cast<uint8_t>(NvmOpcode::read)) {
    c.read_commands.add();
    s.read_bytes.add(req.transfer_len);
  } else if (req.io.op == IoOp::write) {
    c.write_commands.add();
    s.write_bytes.add(req.transfer_len);
  }
}

}  // namespace

nvme::Status prepare_nvm(SubmissionQueue& sq, Request& req) {
  req.ns = sq.controller()->subsystem().namespaces().acquire(req.sqe.nsid(), req.ns_hold);
  if (!req.ns) return st::invalid_namespace.at(nsid_loc);
  switch (static_cast<NvmOpcode>(req.sqe.opcode())) {
    case NvmOpcode::read: return prepare_rw(sq, req, DataDir::controller_to_host);
    case NvmOpcode::write: {
      const auto s = prepare_rw(sq, req, DataDir::host_to_controller);
      if (s.ok() && sq.transport().receives_in_place()) {
        req.write_dst = req.ns->backend().write_target(req.sqe.slba() << req.ns->lba_shift(), req.transfer_len);
        req.write_unit = req.ns->block_size();
      }
      return s;
    }
    case NvmOpcode::compare: return prepare_rw(sq, req, DataDir::host_to_controller);
    case NvmOpcode::flush: return st::success;
    case NvmOpcode::write_zeroes: {
      const auto s = check_range(*req.ns, req.sqe.slba(), uint64_t{req.sqe.nlb0()} + 1);
      return s;
    }
    case NvmOpcode::dataset_management:
      req.dir = DataDir::host_to_controller;
      req.transfer_len = ((req.sqe.cdw(10) & 0xff) + 1) * dsm_range_size;
      return st::success;
    default:
      return st::invalid_opcode.at(0);
  }
}

void execute_nvm(SubmissionQueue& sq, Request& req, uint64_t now_ns) {
  const Namespace& ns = *req.ns;
  const uint64_t off = req.sqe.slba() << ns.lba_shift();
  switch (static_cast<NvmOpcode>(req.sqe.opcode())) {
    case NvmOpcode::read:
      req.response_len = req.transfer_len;
      return submit(sq, req, IoOp::read, off, req.transfer_len, req.buf, now_ns);
    case NvmOpcode::write: return submit(sq, req, IoOp::write, off, req.transfer_len, req.data_in(), now_ns);
    case NvmOpcode::compare:
      // The medium's blocks go to the scratch half of the slot; the host's data stays put.
      return submit(sq, req, IoOp::read, off, req.transfer_len, req.buf + req.buf_cap, now_ns);
    case NvmOpcode::flush: return submit(sq, req, IoOp::flush, 0, 0, nullptr, now_ns);
    case NvmOpcode::write_zeroes:
      return range_next(sq, req);
    case NvmOpcode::dataset_management:
      if (!(req.sqe.cdw(11) & dsm_attr_deallocate)) return sq.complete(req, st::success);
      return range_next(sq, req);
  }
  sq.complete(req, st::invalid_opcode.at(0));
}

void nvm_resume(SubmissionQueue& sq, Request& req) { range_next(sq, req); }

void nvm_backend_done(SubmissionQueue& sq, Request& req) {
  const backend::Io& io = req.io;
  req.done_ns = exec::monotonic_ns();
  if (auto* lat = sq.latency()) lat->backend_latency.record(req.done_ns - io.submit_ns);
  // A block device that cannot unmap and zero (PUNCH_HOLE: EOPNOTSUPP) still zeroes, so
  // DLFEAT's promise holds.
  if (io.result == -EOPNOTSUPP && io.op == IoOp::discard) {
    if (start_io(sq, req, IoOp::write_zeroes, io.offset, io.length, nullptr, req.done_ns))
      nvm_backend_done(sq, req);
    return;
  }
  if (io.result < 0) {
    const bool is_read = io.op == IoOp::read;
    return sq.complete(req, nvme::status_from_errno(-io.result, is_read));
  }
  const auto op = static_cast<NvmOpcode>(req.sqe.opcode());
  if (op == NvmOpcode::dataset_management || op == NvmOpcode::write_zeroes) return range_next(sq, req);
  if (op == NvmOpcode::compare) {
    const bool same = std::memcmp(req.buf, req.buf + req.buf_cap, req.transfer_len) == 0;
    return sq.complete(req, same ? st::success : st::compare_failure);
  }
  count(sq, req);
  sq.complete(req, st::success);
}

}  // namespace core
