#pragma once
// Directories holding what nvmetune later trusts (the control socket, the steering state that
// is read back as root): created for the calling user alone, and checked when they already
// exist, so that what is found there is what this user put there.
#include <sys/stat.h>

#include <string>

namespace sys {

enum class DirTrust {
  any,          // an existing directory is used as it is (a socket path the operator named)
  not_shared,   // owned by the effective uid and writable by no one else: no one else can plant
                // or replace a file in it
  private_0700, // owned by the effective uid, mode 0700: a name in a shared place (/tmp) that
                // anyone could have made first
};

// Creates dir (one level, mode 0700) when missing; an existing one must be a directory that
// meets `trust`. "" when usable, else what is wrong, naming dir.
std::string ensure_dir(const std::string& dir, DirTrust trust);

// Why dir fails `trust` ("" when it meets it or does not exist; creates nothing).
std::string dir_trust_problem(const std::string& dir, DirTrust trust);

// Why a file or directory with this status may have been written by someone other than the
// effective uid ("" when it cannot): another owner, or group or world write permission.
std::string foreign_write_problem(const struct stat& st);

// The directory of path: "." for a bare name, "/" for a name at the root.
std::string parent_dir(const std::string& path);

}  // namespace sys
