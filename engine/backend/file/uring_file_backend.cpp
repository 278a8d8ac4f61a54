#include "engine/backend/file/uring_file_backend.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace backend {

namespace {

// Alignment assumed for O_DIRECT when neither statx nor the device reports one: a page is
// accepted by every device we know of, and misaligned I/O only costs a buffered copy.
constexpr uint32_t fallback_dio_align = 4096;
constexpr mode_t created_file_mode = 0644;

// The core checks LBA ranges before an Io exists; this is defence (a write past the end of a
// regular file would silently grow it).
bool in_range(const Io& io, uint64_t size) {
  return io.offset <= size && io.length <= size - io.offset;
}

bool aligned(uint64_t value, uint32_t align) { return value % align == 0; }

// pread until length bytes or an error; reaching EOF early is an error, never short success.
int pread_full(int fd, uint8_t* buf, uint32_t length, uint64_t offset) {
  uint32_t done = 0;
  while (done < length) {
    ssize_t n = pread(fd, buf + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) return -EIO;
    done += static_cast<uint32_t>(n);
  }
  return 0;
}

int pwrite_full(int fd, const uint8_t* buf, uint32_t length, uint64_t offset, int flags) {
  uint32_t done = 0;
  while (done < length) {
    iovec iov{const_cast<uint8_t*>(buf + done), length - done};
    ssize_t n = pwritev2(fd, &iov, 1, static_cast<off_t>(offset + done), flags);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) return -EIO;
    done += static_cast<uint32_t>(n);
  }
  return 0;
}

int result_of(int syscall_ret) { return syscall_ret == 0 ? 0 : -errno; }

int fallocate_mode(IoOp op) {
  // KEEP_SIZE: zeroing the tail of a namespace must never change the file's size.
  return op == IoOp::discard ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
                             : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
}

// Gets an SQE; a full ring is submitted once to make room. nullptr means do it synchronously.
io_uring_sqe* get_sqe(IoContext& ctx, io_uring* ring) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe != nullptr) return sqe;
  ctx.flush_submissions();
  return io_uring_get_sqe(ring);
}

void close_target(const FileTarget& t) {
  if (t.buffered_fd >= 0) close(t.buffered_fd);
  if (t.fd >= 0) close(t.fd);
}

}  // namespace

UringFileBackend::~UringFileBackend() { close_target(_t); }

bool UringFileBackend::submit(IoContext& ctx, Io& io) {
  if (io.op != IoOp::flush && !in_range(io, _t.size_bytes)) {
    io.result = -ERANGE;
    return true;
  }
  // Block devices take both as fallocate too (blkdev_fallocate: ZERO_RANGE, and PUNCH_HOLE as
  // an unmapping zero-out), so they run on the ring instead of an ioctl blocking the worker.
  io_uring* ring = ctx.ring();
  io_uring_sqe* sqe = ring != nullptr ? get_sqe(ctx, ring) : nullptr;
  if (sqe == nullptr) {
    io.result = run_sync(io);
    return true;
  }
  prep(sqe, io);
  io_uring_sqe_set_data(sqe, &io);
  ctx.note_submitted();  // submitted by the queue's flush_submissions(): one syscall per pass
  return false;
}

// O_DIRECT takes only aligned buffers, offsets and lengths; anything else goes through the
// page cache on the second descriptor (same inode, so flushes and reads stay coherent).
int UringFileBackend::fd_for(const Io& io) const {
  if (!_t.direct) return _t.fd;
  bool ok = aligned(reinterpret_cast<uintptr_t>(io.buf), _t.mem_align) &&
            aligned(io.offset, _t.offset_align) && aligned(io.length, _t.offset_align);
  return ok ? _t.fd : _t.buffered_fd;
}

void UringFileBackend::prep(io_uring_sqe* sqe, const Io& io) const {
  switch (io.op) {
    case IoOp::read:
      io_uring_prep_read(sqe, fd_for(io), io.buf, io.length, io.offset);
      break;
    case IoOp::write:
      io_uring_prep_write(sqe, fd_for(io), io.buf, io.length, io.offset);
      if (io.fua) sqe->rw_flags = RWF_DSYNC;  // durable before completion, like FUA
      break;
    case IoOp::flush:
      io_uring_prep_fsync(sqe, _t.fd, IORING_FSYNC_DATASYNC);
      break;
    case IoOp::write_zeroes:
    case IoOp::discard:
      io_uring_prep_fallocate(sqe, _t.fd, fallocate_mode(io.op), static_cast<off_t>(io.offset),
                              io.length);
      break;
  }
}

// The same operations without a ring (io_uring unavailable, or the ring stayed full).
int UringFileBackend::run_sync(const Io& io) const {
  switch (io.op) {
    case IoOp::read:
      return pread_full(fd_for(io), io.buf, io.length, io.offset);
    case IoOp::write:
      return pwrite_full(fd_for(io), io.buf, io.length, io.offset, io.fua ? RWF_DSYNC : 0);
    case IoOp::flush:
      return result_of(fdatasync(_t.fd));
    case IoOp::write_zeroes:
    case IoOp::discard:
      return result_of(
          fallocate(_t.fd, fallocate_mode(io.op), static_cast<off_t>(io.offset), io.length));
  }
  return -EINVAL;
}

// --- opening ---------------------------------------------------------------------------------

namespace {

std::string errno_text() { return std::generic_category().message(errno); }

// Opens with O_DIRECT when asked; a file system that refuses it (EINVAL) gets a plain open.
// Returns a target with fd (-1 on failure, errno set) and direct filled in.
FileTarget open_target(const BackendSpec& spec) {
  int flags = O_RDWR | O_CLOEXEC | (spec.create ? O_CREAT : 0);
  FileTarget t;
  if (spec.direct) {
    t.fd = open(spec.path.c_str(), flags | O_DIRECT, created_file_mode);
    t.direct = true;
    if (t.fd >= 0 || errno != EINVAL) return t;
    t.direct = false;
  }
  t.fd = open(spec.path.c_str(), flags, created_file_mode);
  return t;
}

// The size the namespace exposes: spec.size_bytes if given (a created file is grown to it),
// else the whole file or device. Returns false and sets error when that is impossible.
bool resolve_size(const BackendSpec& spec, const struct stat& st, FileTarget& t,
                  std::string& error) {
  uint64_t actual = static_cast<uint64_t>(st.st_size);
  if (t.block_device && ioctl(t.fd, BLKGETSIZE64, &actual) != 0) {
    error = "file backend: cannot get the size of " + spec.path + ": " + errno_text();
    return false;
  }
  if (spec.create && !t.block_device && spec.size_bytes > actual) {
    if (ftruncate(t.fd, static_cast<off_t>(spec.size_bytes)) != 0) {
      error = "file backend: cannot size " + spec.path + ": " + errno_text();
      return false;
    }
    actual = spec.size_bytes;
  }
  if (spec.size_bytes > actual) {
    error = "file backend: " + spec.path + " has " + std::to_string(actual) +
            " bytes, fewer than the requested " + std::to_string(spec.size_bytes);
    return false;
  }
  t.size_bytes = spec.size_bytes != 0 ? spec.size_bytes : actual;
  if (t.size_bytes == 0) {
    error = "file backend: " + spec.path + " is empty (give a size to create it)";
    return false;
  }
  return true;
}

// O_DIRECT alignment: statx (Linux 6.1+) knows it for most file systems and devices; an
// older block device reports its logical block size; otherwise assume a page.
void probe_dio_alignment(FileTarget& t) {
  struct statx sx {};
  if (statx(t.fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
      (sx.stx_mask & STATX_DIOALIGN) != 0 && sx.stx_dio_offset_align != 0) {
    t.mem_align = sx.stx_dio_mem_align;
    t.offset_align = sx.stx_dio_offset_align;
    return;
  }
  int lbs = 0;
  bool device_knows = t.block_device && ioctl(t.fd, BLKSSZGET, &lbs) == 0 && lbs > 0;
  t.mem_align = t.offset_align = device_knows ? static_cast<uint32_t>(lbs) : fallback_dio_align;
}

// The second, buffered descriptor for I/O that O_DIRECT cannot take. Opened by path, so it
// is checked to be the same inode.
bool open_buffered_twin(const BackendSpec& spec, const struct stat& st, FileTarget& t,
                        std::string& error) {
  t.buffered_fd = open(spec.path.c_str(), O_RDWR | O_CLOEXEC);
  struct stat twin {};
  if (t.buffered_fd < 0 || fstat(t.buffered_fd, &twin) != 0) {
    error = "file backend: cannot reopen " + spec.path + " without O_DIRECT: " + errno_text();
    return false;
  }
  if (twin.st_dev != st.st_dev || twin.st_ino != st.st_ino) {
    error = "file backend: " + spec.path + " was replaced while opening";
    return false;
  }
  return true;
}

bool describe_target(const BackendSpec& spec, FileTarget& t, std::string& error) {
  struct stat st {};
  if (fstat(t.fd, &st) != 0) {
    error = "file backend: cannot stat " + spec.path + ": " + errno_text();
    return false;
  }
  t.block_device = S_ISBLK(st.st_mode);
  if (!t.block_device && !S_ISREG(st.st_mode)) {
    error = "file backend: " + spec.path + " is neither a regular file nor a block device";
    return false;
  }
  if (!resolve_size(spec, st, t, error)) return false;
  if (!t.direct) return true;
  probe_dio_alignment(t);
  return open_buffered_twin(spec, st, t, error);
}

}  // namespace

std::unique_ptr<UringFileBackend> open_file_backend(const BackendSpec& spec, std::string& error) {
  if (spec.path.empty()) {
    error = "file backend: no path given";
    return nullptr;
  }
  FileTarget t = open_target(spec);
  if (t.fd < 0) {
    error = "file backend: cannot open " + spec.path + ": " + errno_text();
    return nullptr;
  }
  if (!describe_target(spec, t, error)) {
    close_target(t);
    return nullptr;
  }
  return std::make_unique<UringFileBackend>(t);
}

}  // namespace backend
