// NVM command set: Read, Write, Compare, Flush, Write Zeroes, Dataset Management.
// Each command becomes one backend Io at a time (DSM walks its ranges one after another).
#include <algorithm>
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

void submit(SubmissionQueue& sq, Request& req, IoOp op, uint64_t offset, uint32_t len, uint8_t* buf) {
  backend::Io& io = req.io;
  io.op = op;
  io.offset = offset;
  io.length = len;
  io.buf = buf;
  io.fua = op == IoOp::write && req.sqe.fua();
  io.result = 0;
  io.owner = &req;
  io.submit_ns = exec::monotonic_ns();
  if (req.ns->backend().submit(sq.transport().io_context(), io)) nvm_backend_done(sq, req);
}

// Starts the next piece of the current DSM range (ranges can exceed what one Io length holds),
// then the next range, and completes when none is left.
void dsm_next(SubmissionQueue& sq, Request& req) {
  constexpr uint64_t max_piece = 1ull << 30;
  const uint32_t ranges = (req.sqe.cdw(10) & 0xff) + 1;
  const Namespace& ns = *req.ns;
  while (req.step < ranges) {
    const uint8_t* r = req.buf + dsm_range_size * req.step;
    const uint64_t nlb = nvme::get_le<uint32_t>(r, 4);
    const uint64_t slba = nvme::get_le<uint64_t>(r, 8);
    const auto s = check_range(ns, slba, nlb);
    if (!s.ok()) return sq.complete(req, s);
    const uint64_t len = nlb << ns.lba_shift();
    if (req.step_offset >= len) {
      ++req.step;
      req.step_offset = 0;
      continue;
    }
    const uint64_t piece = std::min(max_piece, len - req.step_offset);
    const uint64_t off = (slba << ns.lba_shift()) + req.step_offset;
    req.step_offset += piece;
    return submit(sq, req, IoOp::discard, off, static_cast<uint32_t>(piece), nullptr);
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
  req.ns = sq.controller()->subsystem().ns(req.sqe.nsid());
  if (!req.ns) return st::invalid_namespace.at(nsid_loc);
  switch (static_cast<NvmOpcode>(req.sqe.opcode())) {
    case NvmOpcode::read: return prepare_rw(sq, req, DataDir::controller_to_host);
    case NvmOpcode::write:
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

void execute_nvm(SubmissionQueue& sq, Request& req) {
  const Namespace& ns = *req.ns;
  const uint64_t off = req.sqe.slba() << ns.lba_shift();
  switch (static_cast<NvmOpcode>(req.sqe.opcode())) {
    case NvmOpcode::read:
      req.response_len = req.transfer_len;
      return submit(sq, req, IoOp::read, off, req.transfer_len, req.buf);
    case NvmOpcode::write: return submit(sq, req, IoOp::write, off, req.transfer_len, req.buf);
    case NvmOpcode::compare:
      // The medium's blocks go to the scratch half of the slot; the host's data stays put.
      return submit(sq, req, IoOp::read, off, req.transfer_len, req.buf + req.buf_cap);
    case NvmOpcode::flush: return submit(sq, req, IoOp::flush, 0, 0, nullptr);
    case NvmOpcode::write_zeroes:
      return submit(sq, req, IoOp::write_zeroes, off, (req.sqe.nlb0() + 1u) << ns.lba_shift(), nullptr);
    case NvmOpcode::dataset_management:
      if (!(req.sqe.cdw(11) & dsm_attr_deallocate)) return sq.complete(req, st::success);
      return dsm_next(sq, req);
  }
  sq.complete(req, st::invalid_opcode.at(0));
}

void nvm_backend_done(SubmissionQueue& sq, Request& req) {
  const backend::Io& io = req.io;
  sq.stats_mut().backend_latency.record(exec::monotonic_ns() - io.submit_ns);
  if (io.result < 0) {
    const bool is_read = io.op == IoOp::read;
    return sq.complete(req, nvme::status_from_errno(-io.result, is_read));
  }
  const auto op = static_cast<NvmOpcode>(req.sqe.opcode());
  if (op == NvmOpcode::dataset_management) return dsm_next(sq, req);
  if (op == NvmOpcode::compare) {
    const bool same = std::memcmp(req.buf, req.buf + req.buf_cap, req.transfer_len) == 0;
    return sq.complete(req, same ? st::success : st::compare_failure);
  }
  count(sq, req);
  sq.complete(req, st::success);
}

}  // namespace core
