#pragma once
// Reading and writing kernel files (/proc, /sys) through a root directory, so tests can point
// the steering code at a fake tree and the real machine uses "/". Every failure is a value that
// names the file and the errno.
#include <string>
#include <string_view>
#include <vector>

namespace sys {

struct FileResult {
  std::string text;  // the whole content as read (trailing newline kept)
  int err = 0;       // errno; 0 on success
  bool ok() const { return err == 0; }
};

class SysRoot {
 public:
  // root: the directory that stands for "/" ("" or "/" = the real machine).
  explicit SysRoot(std::string root = "/");

  const std::string& root() const { return _root; }
  bool real() const { return _root.empty(); }
  // path is absolute as on the machine ("/proc/irq/5/smp_affinity_list").
  std::string host_path(std::string_view path) const;

  FileResult read(std::string_view path) const;
  // One write() of the whole text (sysfs takes a value per write); truncates a regular file so a
  // fake tree holds exactly what was written. A symbolic link is not followed (ELOOP). Returns
  // errno, 0 on success.
  int write(std::string_view path, std::string_view text) const;
  bool exists(std::string_view path) const;
  // Entry names of a directory, sorted; empty when it cannot be read.
  std::vector<std::string> list(std::string_view path) const;
  // The directory a symlink resolves to, as a path inside the root ("" when it does not resolve).
  std::string resolve(std::string_view path) const;

 private:
  std::string _root;  // without a trailing '/'; "" = real root
};

// "EIO (Input/output error)".
std::string errno_name(int err);

}  // namespace sys
