// Kernel file access under a root directory (sys_root.hpp).
#include "engine/system/sys_root.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sys {

namespace fs = std::filesystem;

SysRoot::SysRoot(std::string root) : _root(std::move(root)) {
  std::error_code ec;
  // Canonical, so resolve() can tell a link that stays inside the tree from one leaving it.
  if (auto c = fs::canonical(_root, ec); !ec && !_root.empty()) _root = c.string();
  while (!_root.empty() && _root.back() == '/') _root.pop_back();
}

std::string SysRoot::host_path(std::string_view path) const { return _root + std::string(path); }

FileResult SysRoot::read(std::string_view path) const {
  FileResult r;
  const int fd = ::open(host_path(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {{}, errno};
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) r.err = errno;
    if (n <= 0) break;
    r.text.append(buf, size_t(n));
  }
  ::close(fd);
  return r;
}

int SysRoot::write(std::string_view path, std::string_view text) const {
  // O_TRUNC is ignored by sysfs and procfs, and makes a fake tree's file hold just the value.
  // The kernel's attribute files are never links: one found there would write its target instead.
  const int fd = ::open(host_path(path).c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  const ssize_t n = ::write(fd, text.data(), text.size());
  if (n < 0) err = errno;
  else if (size_t(n) != text.size()) err = EIO;
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

bool SysRoot::exists(std::string_view path) const { return ::access(host_path(path).c_str(), F_OK) == 0; }

std::vector<std::string> SysRoot::list(std::string_view path) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(host_path(path), ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string SysRoot::resolve(std::string_view path) const {
  std::error_code ec;
  // sysfs links are relative, so they resolve inside a fake tree as they do on the machine.
  const std::string real = fs::canonical(host_path(path), ec).string();
  if (ec || real.compare(0, _root.size(), _root) != 0) return {};
  return _root.empty() ? real : real.substr(_root.size());
}

std::string errno_name(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name ? name : "E?") + " (" + std::strerror(err) + ")";
}

}  // namespace sys
