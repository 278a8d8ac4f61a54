// libFuzzer target over the NVMe/TCP receive state machine (engine/tcp/receive.cpp) and what
// it drives: capsule parsing, SGL checks, R2T/H2CData, digests, TermReq handling, and behind it
// core/ (fabrics, admin, discovery, NVM command handling) on RAM namespaces.
//
// Each input is byte 0 (how the stream is cut into feed() calls, see fuzz_driver.hpp) followed
// by the bytes a host would send on one connection. A fresh tcp::TcpQueue on a socketpair takes
// them through TcpQueue::feed() or through the socket and io_work(); what it sends back is
// drained and discarded; then the "host" disconnects and the queue must close. A controller that stays connected and enabled for the
// whole run (fuzz_driver.cpp) lets an input connect an I/O queue (Connect QID>0, CNTLID 1,
// host nqn.2026-12.io.nvmetune:fuzz-host) and reach Read/Write/Compare/DSM; an input can also
// connect its own admin queue to nqn.2026-12.io.nvmetune:fuzz or the discovery subsystem.
//
// Seeds: tests/fuzz/corpus/ (written by make_corpus). How to run: tests/fuzz/README.md.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_driver.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run_input(data, size);
  return 0;
}
