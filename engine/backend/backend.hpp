#pragma once
// Block backends behind one interface (DESIGN.md: "a backend serves blocks, not commands").
// A backend never sees an NVMe command: core/ turns commands into Io operations.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/backend/io_context.hpp"

namespace backend {

enum class IoOp : uint8_t { read, write, flush, write_zeroes, discard };

// Layout of the kernel's __kernel_timespec (checked in io_context.cpp), so this header needs
// no kernel or liburing include.
struct IoTimespec {
  int64_t tv_sec = 0;
  int64_t tv_nsec = 0;
};

// One block operation, preallocated inside a core request (never allocated per command).
struct Io {
  IoOp op = IoOp::read;
  bool fua = false;        // write must be durable before completion (RWF_DSYNC)
  uint64_t offset = 0;     // bytes
  uint32_t length = 0;     // bytes
  uint8_t* buf = nullptr;  // read/write data
  // read: the caller can send the data from the backend's own memory. A backend that holds
  // the blocks in memory (RAM) then points lent at them instead of copying them into buf.
  bool may_lend = false;
  const uint8_t* lent = nullptr;
  int result = 0;          // 0 on success, else -errno; set before completion
  uint64_t submit_ns = 0;  // for backend latency statistics
  void* owner = nullptr;   // the core request this Io belongs to
  // IoContext::complete_after(): the timer's relative timeout. The kernel reads it when the
  // SQE is submitted, which is later (one io_uring_enter per io_work pass), so it must live
  // as long as the Io is in flight: here, not on a stack.
  IoTimespec delay{};
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view kind() const = 0;  // "null", "ram", "file"
  virtual uint64_t size_bytes() const = 0;
  // Whether the medium keeps written data in a volatile cache (Identify VWC; Flush matters).
  virtual bool volatile_cache() const { return false; }
  // Whether discarded (deallocated) and zeroed blocks read back as zeroes: Identify
  // Namespace DLFEAT promises it only then.
  virtual bool reads_zeroes_after_deallocate() const { return true; }
  // Starts io. Returns true when io completed synchronously (io.result is set, no completion
  // will be reaped); false when the completion will come out of ctx.reap().
  // Called only by the thread that currently runs the owning queue's io_work.
  virtual bool submit(IoContext& ctx, Io& io) = 0;
  // Where a write of [offset, offset + length) may be received straight from the network: the
  // backend's own memory (RAM), nullptr when it has none. A write whose Io.buf is this address
  // then has nothing left to copy. The range is the caller's to check (core does, at prepare).
  virtual uint8_t* write_target(uint64_t offset, uint32_t length) {
    (void)offset;
    (void)length;
    return nullptr;
  }
};

struct BackendSpec {
  std::string kind;         // "null" | "ram" | "file"
  uint64_t size_bytes = 0;  // null, ram; for file: 0 = the file's or device's size
  std::string path;         // file/block device
  bool create = false;      // file: create and size it if absent
  bool direct = true;       // file: O_DIRECT where the file system allows it
  // null, ram: every operation completes this long after submission (0 = at once), through
  // the queue's io_uring like file I/O; a known latency for tests and histogram checks.
  uint32_t delay_us = 0;
  // ram: fault every page in at creation (and again after Write Zeroes/Deallocate), so reads
  // never hit the shared zero page and writes never fault: what a benchmark must measure.
  bool populate = false;
};

// Opens the backend described by spec. On failure returns nullptr and sets error.
std::unique_ptr<Backend> open_backend(const BackendSpec& spec, std::string& error);

}  // namespace backend
