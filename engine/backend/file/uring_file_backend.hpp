#pragma once
// The file backend: a regular file or a block device served through the queue's io_uring.
// Reads and writes go out asynchronously and are batched by the queue (one io_uring_submit per
// io_work pass); they complete through IoContext::reap(). Without a ring every operation is
// done synchronously instead.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend/backend.hpp"

struct io_uring_sqe;

namespace backend {

// What open_file_backend() found out about the file; owned fds are closed by the backend.
struct FileTarget {
  int fd = -1;           // O_DIRECT when direct
  int buffered_fd = -1;  // same file without O_DIRECT, for I/O O_DIRECT cannot take; -1 if !direct
  uint64_t size_bytes = 0;
  bool direct = false;
  bool block_device = false;
  uint32_t mem_align = 1;     // O_DIRECT buffer alignment
  uint32_t offset_align = 1;  // O_DIRECT offset and length alignment
};

class UringFileBackend final : public Backend {
 public:
  explicit UringFileBackend(const FileTarget& target) : _t(target) {}
  ~UringFileBackend() override;
  UringFileBackend(const UringFileBackend&) = delete;
  UringFileBackend& operator=(const UringFileBackend&) = delete;

  std::string_view kind() const override { return "file"; }
  uint64_t size_bytes() const override { return _t.size_bytes; }
  // A file or a device may cache writes: Flush (fdatasync) matters.
  bool volatile_cache() const override { return true; }
  bool submit(IoContext& ctx, Io& io) override;

  // Whether the file was opened with O_DIRECT (the file system may refuse it).
  bool direct() const { return _t.direct; }
  bool block_device() const { return _t.block_device; }

 private:
  int fd_for(const Io& io) const;
  void prep(io_uring_sqe* sqe, const Io& io) const;
  int run_sync(const Io& io) const;

  FileTarget _t;
};

// Opens spec.path (creating and sizing it when spec.create). On failure returns nullptr and
// sets error, e.g. "file backend: cannot open /x: Permission denied".
std::unique_ptr<UringFileBackend> open_file_backend(const BackendSpec& spec, std::string& error);

}  // namespace backend
