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

// One block operation, preallocated inside a core request (never allocated per command).
struct Io {
  IoOp op = IoOp::read;
  bool fua = false;        // write must be durable before completion (RWF_DSYNC)
  uint64_t offset = 0;     // bytes
  uint32_t length = 0;     // bytes
  uint8_t* buf = nullptr;  // read/write data
  int result = 0;          // 0 on success, else -errno; set before completion
  uint64_t submit_ns = 0;  // for backend latency statistics
  void* owner = nullptr;   // the core request this Io belongs to
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view kind() const = 0;  // "null", "ram", "file"
  virtual uint64_t size_bytes() const = 0;
  // Whether the medium keeps written data in a volatile cache (Identify VWC; Flush matters).
  virtual bool volatile_cache() const { return false; }
  // Starts io. Returns true when io completed synchronously (io.result is set, no completion
  // will be reaped); false when the completion will come out of ctx.reap().
  // Called only by the thread that currently runs the owning queue's io_work.
  virtual bool submit(IoContext& ctx, Io& io) = 0;
};

struct BackendSpec {
  std::string kind;         // "null" | "ram" | "file"
  uint64_t size_bytes = 0;  // null, ram; for file: 0 = the file's or device's size
  std::string path;         // file/block device
  bool create = false;      // file: create and size it if absent
  bool direct = true;       // file: O_DIRECT where the file system allows it
};

// Opens the backend described by spec. On failure returns nullptr and sets error.
std::unique_ptr<Backend> open_backend(const BackendSpec& spec, std::string& error);

}  // namespace backend
