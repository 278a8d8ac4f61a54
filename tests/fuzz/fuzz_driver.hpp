#pragma once
// Drives one tcp::TcpQueue with a byte stream, the way fuzz_tcp_receive does for each input.
// Shared by the fuzzer and by make_corpus (which replays its seeds through the very same code
// to learn the transfer tags the target hands out, see make_corpus.cpp).
//
// Input format of fuzz_tcp_receive: byte 0 chooses how the rest (the host->controller byte
// stream) is cut into chunks, so PDU boundaries fall anywhere, and how chunks reach the queue:
//   bit 7 clear: bits 2..0 pick a fixed pattern (see Split): whole stream, PDU by PDU (using
//                each PDU's own PLEN), or fixed chunks of 1, 8, 72, 100, 4095, 4097 bytes;
//   bit 7 set:   pseudo-random chunk sizes in [1, 2^(1 + bits 3..0)], seeded by byte 0;
//   bit 6 clear: each chunk goes to TcpQueue::feed();
//   bit 6 set:   each chunk is written to the socket and io_work() runs until it is idle (the
//                production path: recv() into the staging buffer, budgets, compaction);
//   bit 5 set:   a slow host: it reads nothing the controller sends until the stream ends, so
//                the socket fills up (EAGAIN, partial sends, responses held in the send ring).
// Bits 4..3 are ignored by the fixed patterns, bit 4 by the random one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace fuzz {

enum class Split : uint8_t {
  whole = 0,
  per_pdu = 1,
  bytes_1 = 2,
  bytes_8 = 3,
  bytes_72 = 4,
  bytes_100 = 5,
  bytes_4095 = 6,
  bytes_4097 = 7,
};
inline constexpr uint8_t split_random = 0x80;  // | (log2 of max chunk - 1), 0..15
inline constexpr uint8_t split_socket = 0x40;  // deliver through the socket and io_work()
inline constexpr uint8_t split_slow_host = 0x20;  // the host does not read until the end

// Everything the controller sent back (drained from the socket after each feed()).
using OutputFn = std::function<void(std::span<const uint8_t>)>;

// Runs one input (split byte + stream) on a fresh queue; the queue is then closed the way a
// host disconnect closes it (peer closed, io_work until it reports closed) and destroyed.
// Aborts if the queue does not close. out, when set, sees the controller's bytes.
void run_input(const uint8_t* data, size_t size, const OutputFn* out = nullptr);

// The chunk sizes run_input uses for this split byte over this stream (for tools and tests).
void for_each_chunk(uint8_t split, std::span<const uint8_t> stream,
                    const std::function<bool(std::span<const uint8_t>)>& fn);

}  // namespace fuzz
