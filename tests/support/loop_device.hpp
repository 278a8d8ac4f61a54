#pragma once
// A loop block device over a temporary file, for tests that need real block I/O (biolat, wqlat:
// the loop driver runs each request as a work item on its "loopN" workqueue). Root only.
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace test_support {

class LoopDevice {
 public:
  // A loop device over a new sparse file of `bytes`; ok() false (and error()) if not possible.
  explicit LoopDevice(off_t bytes) {
    char path[] = "/tmp/nvmetune-loop-XXXXXX";
    const int backing = mkstemp(path);
    if (backing < 0) {
      _error = "mkstemp failed";
      return;
    }
    unlink(path);
    _error = attach(backing, bytes);
    close(backing);  // the loop device holds its own reference
  }
  ~LoopDevice() {
    if (_fd >= 0) {
      ioctl(_fd, LOOP_CLR_FD, 0);
      close(_fd);
    }
  }
  LoopDevice(const LoopDevice&) = delete;
  LoopDevice& operator=(const LoopDevice&) = delete;

  bool ok() const { return _error.empty(); }
  const std::string& error() const { return _error; }
  const std::string& name() const { return _name; }  // "loop3"
  std::string path() const { return "/dev/" + _name; }

 private:
  std::string attach(int backing, off_t bytes) {
    if (ftruncate(backing, bytes) != 0) return "ftruncate failed";
    const int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0) return "cannot open /dev/loop-control";
    const int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    close(ctl);
    if (n < 0) return "LOOP_CTL_GET_FREE failed";
    _name = "loop" + std::to_string(n);
    _fd = open(path().c_str(), O_RDWR | O_CLOEXEC);
    if (_fd < 0) return "cannot open " + path();
    if (ioctl(_fd, LOOP_SET_FD, backing) != 0) return "LOOP_SET_FD on " + path() + " failed";
    return {};
  }

  int _fd = -1;
  std::string _name;
  std::string _error;
};

}  // namespace test_support
