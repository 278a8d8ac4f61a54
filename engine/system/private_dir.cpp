// Directories created for, and checked against, the calling user (private_dir.hpp).
#include "engine/system/private_dir.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sys {

namespace {

constexpr mode_t private_mode = 0700;

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string octal(mode_t mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", unsigned(mode & 07777));
  return b;
}

// A directory that is not the one checked (a symlink to elsewhere) cannot be trusted by its
// own status, so trust is judged on the entry itself (lstat); `any` follows links as open() would.
std::string stat_problem(const std::string& dir, DirTrust trust, struct stat& st) {
  const int rc = trust == DirTrust::any ? ::stat(dir.c_str(), &st) : ::lstat(dir.c_str(), &st);
  if (rc != 0) return errno_text("cannot stat " + dir, errno);
  if (S_ISLNK(st.st_mode)) return dir + " is a symbolic link; refusing it as a directory for nvmetune's own files";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  return {};
}

std::string trust_problem(const std::string& dir, DirTrust trust, const struct stat& st) {
  if (trust == DirTrust::private_0700 && (st.st_uid != geteuid() || (st.st_mode & 077) != 0))
    return dir + " is not a private directory of uid " + std::to_string(geteuid()) + " (expected mode 0700)";
  if (trust == DirTrust::not_shared) {
    if (auto why = foreign_write_problem(st); !why.empty()) return dir + ": " + why;
  }
  return {};
}

}  // namespace

std::string foreign_write_problem(const struct stat& st) {
  if (st.st_uid != geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not by uid " + std::to_string(geteuid()) +
           " (another user could have written what is there)";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return "writable by its group or by everyone (mode " + octal(st.st_mode) +
           "): another user could have written what is there";
  return {};
}

std::string dir_trust_problem(const std::string& dir, DirTrust trust) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return {};
  if (auto why = stat_problem(dir, trust, st); !why.empty()) return why;
  return trust_problem(dir, trust, st);
}

std::string ensure_dir(const std::string& dir, DirTrust trust) {
  if (::mkdir(dir.c_str(), private_mode) == 0) return {};
  if (errno != EEXIST) return errno_text("cannot create directory " + dir, errno);
  struct stat st {};
  if (auto why = stat_problem(dir, trust, st); !why.empty()) return why;
  return trust_problem(dir, trust, st);
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace sys
