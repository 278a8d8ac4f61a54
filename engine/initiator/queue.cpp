#include "engine/initiator/queue.hpp"

#include "engine/initiator/commands.hpp"
#include "engine/initiator/sync.hpp"

namespace initiator {

void deliver(Completion& c, uint16_t cid, uint32_t bytes, uint64_t submit_ns, Callback cb) {
  c.cid = cid;
  c.bytes = bytes;
  c.submit_ns = submit_ns;
  c.complete_ns = monotonic_ns();
  c.ctx = cb.ctx;
  if (cb.fn) cb.fn(cb.ctx, c);
}

std::optional<BuiltCommand> build_command(const Io& io) {
  switch (io.op) {
    case Op::read: return BuiltCommand{cmd::read(io.nsid, io.slba, io.nlb0, io.fua), Dir::ctrl_to_host};
    case Op::write: return BuiltCommand{cmd::write(io.nsid, io.slba, io.nlb0, io.fua), Dir::host_to_ctrl};
    case Op::compare: return BuiltCommand{cmd::compare(io.nsid, io.slba, io.nlb0), Dir::host_to_ctrl};
    case Op::write_zeroes: return BuiltCommand{cmd::write_zeroes(io.nsid, io.slba, io.nlb0, io.fua), Dir::none};
    case Op::flush: return BuiltCommand{cmd::flush(io.nsid), Dir::none};
    case Op::dsm:
      if (io.buf.size() < 16 || io.buf.size() % 16 != 0 || io.buf.size() > 256 * 16) return std::nullopt;
      return BuiltCommand{cmd::dataset_management(io.nsid, static_cast<uint32_t>(io.buf.size() / 16)),
                          Dir::host_to_ctrl};
  }
  return std::nullopt;
}

Result<Ok> Queue::disconnect(int timeout_ms) {
  if (state() != State::live) return Error::usage("queue is not live");
  if (qid() == 0) {
    close();
    return Ok{};
  }
  auto r = sync_raw(*this, RawCommand{cmd::disconnect()}, timeout_ms);
  close();
  if (r) return Ok{};
  // Targets without Fabrics Disconnect (Linux nvmet up to at least 6.1) answer Invalid Opcode;
  // closing the connection is what ends the queue there, and it is closed now.
  if (r.error().kind == Error::Kind::nvme && r.error().status == nvme::status::invalid_opcode) return Ok{};
  return r.error();
}

}  // namespace initiator
