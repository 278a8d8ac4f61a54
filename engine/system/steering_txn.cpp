// Transactional steering writes with a crash-safe state file (steering_txn.hpp).
#include "engine/system/steering_txn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "engine/system/private_dir.hpp"
#include "engine/system/steering_files.hpp"

namespace sys {

namespace {

using json = nlohmann::json;

constexpr int state_version = 1;

bool process_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

std::string boot_id(const SysRoot& root) {
  auto r = root.read("/proc/sys/kernel/random/boot_id");
  while (!r.text.empty() && r.text.back() == '\n') r.text.pop_back();
  return r.ok() ? r.text : std::string();
}

std::string refused(const std::string& path, const std::string& why) {
  return "refusing steering state file " + path + ": " + why + "; nothing restored from it (move it away to continue)";
}

// The state file's text, when it is one this user wrote: it is read back as root and names
// files to write, so a file another user could have placed or edited is refused whole.
std::optional<std::string> read_state_text(const std::string& path, std::string& problem) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  if (auto why = dir_trust_problem(parent_dir(path), DirTrust::not_shared); !why.empty())
    return problem = refused(path, "its directory " + why), std::nullopt;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return problem = refused(path, errno == ELOOP ? "a symbolic link" : errno_name(errno)), std::nullopt;
  std::string text, why;
  if (::fstat(fd, &st) != 0) why = errno_name(errno);
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else why = foreign_write_problem(st);
  char buf[4096];
  for (ssize_t n; why.empty() && (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = errno_name(errno);
    else text.append(buf, size_t(n));
  }
  ::close(fd);
  if (!why.empty()) return problem = refused(path, why), std::nullopt;
  return text;
}

std::optional<json> load_state(const std::string& path, std::string& problem) {
  auto text = read_state_text(path, problem);
  if (!text) return std::nullopt;
  auto j = json::parse(*text, nullptr, false);
  const auto entry_ok = [](const json& s) {
    return s.is_object() && s.contains("path") && s["path"].is_string() && s.value("old", json()).is_string() &&
           s.value("new", json()).is_string();
  };
  if (j.is_discarded() || !j.is_object() || j.value("version", 0) != state_version || !j.contains("saved") ||
      !j["saved"].is_array() || !std::all_of(j["saved"].begin(), j["saved"].end(), entry_ok)) {
    problem = "steering state file " + path + " is not one this nvmetune wrote; move it away to continue";
    return std::nullopt;
  }
  std::string bad, why;
  for (const auto& s : j["saved"]) {
    const std::string file = s["path"].get<std::string>();
    if (auto w = steering_file_problem(file); !w.empty()) bad += (bad.empty() ? "" : ", ") + json(file).dump(), why = w;
  }
  if (!bad.empty()) return problem = refused(path, bad + ": " + why), std::nullopt;
  return j;
}

// Saved paths that are symbolic links under root now: restoring through one would write its
// target, wherever that is.
std::string symlink_problem(const SysRoot& root, const json& saved) {
  std::string bad;
  for (const auto& s : saved) {
    const std::string file = s.value("path", "");
    struct stat st {};
    if (::lstat(root.host_path(file).c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      bad += (bad.empty() ? "" : "; ") + file + " is a symbolic link";
  }
  return bad;
}

// The undo record of one write of a batch.
struct Undo {
  std::string path;
  std::string before;     // the content just before this batch's write
  std::string prior_new;  // the saved entry's new_value before this batch ("" when added)
  bool added = false;
};

}  // namespace

std::string TxnResult::message() const {
  std::string m = error ? error->message : "";
  for (const auto& e : rollback_errors) m += (m.empty() ? "" : "\n") + std::string("could not restore ") + e.message;
  return m;
}

std::string explain_write_error(const std::string& path, int err) {
  const bool irq = path.rfind("/proc/irq/", 0) == 0;
  std::string why;
  // Root refused on an IRQ line is the line, not the caller: kernels answer EIO or (6.x) EPERM
  // for lines whose affinity the kernel manages (even their own value written back).
  if (irq && (err == EIO || (err == EPERM && geteuid() == 0)))
    why = "the kernel will not move this interrupt line (a managed IRQ: its driver sets the affinity)";
  else if (err == EACCES || err == EPERM)
    why = "permission denied: steering needs root (CAP_SYS_ADMIN for /proc/irq, CAP_NET_ADMIN for net settings)";
  else if (err == ELOOP)
    why = "a symbolic link, not the kernel's file: steering does not write through links";
  else if (err == EROFS)
    why = "read-only file system: /proc or /sys is mounted read-only here (a container?); steer from the host";
  else if (err == EINVAL && irq)
    why = "the kernel refused this CPU list for the line (offline CPUs, or none the line can be routed to)";
  else if (err == ENOENT && path.rfind("/proc/sys/net/core/busy_", 0) == 0)
    why = "no such file: busy_poll and busy_read exist only in the host's network namespace";
  else if (err == ENOENT)
    why = "no such file: the device or queue is gone, or this kernel lacks the setting";
  else if (err == EINVAL)
    why = "the kernel refused the value";
  return path + ": " + errno_name(err) + (why.empty() ? "" : ": " + why);
}

SteeringTransaction::SteeringTransaction(SysRoot root, std::string state_path)
    : _root(std::move(root)), _state_path(std::move(state_path)) {
  if (_state_path.empty()) return;
  auto state = load_state(_state_path, _blocked);
  if (!state) return;
  const int pid = state->value("pid", 0);
  if (state->value("boot_id", std::string()) != boot_id(_root)) {
    _recovered = "ignored " + _state_path + ": written before this machine last booted (nothing to restore)";
    ::unlink(_state_path.c_str());
    return;
  }
  if (pid != getpid() && process_alive(pid)) {
    _blocked = "steering is held by process " + std::to_string(pid) + " (state " + _state_path +
               "); revert it there (nvmetune steer revert) first";
    return;
  }
  if (auto links = symlink_problem(_root, (*state)["saved"]); !links.empty()) {
    _blocked = refused(_state_path, links);
    return;
  }
  for (const auto& s : (*state)["saved"])
    _saved.push_back({s.value("path", ""), s.value("old", ""), s.value("new", "")});
  _recovered = "adopted " + std::to_string(_saved.size()) + " saved value(s) left by process " + std::to_string(pid) +
               " in " + _state_path;
}

std::optional<TxnError> SteeringTransaction::persist() const {
  const auto failed = [&](int err, std::string why) {
    return TxnError{_state_path, err, "cannot record the old values in " + _state_path + ": " + std::move(why)};
  };
  if (_state_path.empty()) return std::nullopt;
  if (_saved.empty()) {
    if (::unlink(_state_path.c_str()) == 0 || errno == ENOENT) return std::nullopt;
    return failed(errno, errno_name(errno));
  }
  json saved = json::array();
  for (const auto& s : _saved) saved.push_back({{"path", s.path}, {"old", s.old_value}, {"new", s.new_value}});
  const json doc = {{"version", state_version}, {"pid", getpid()},       {"boot_id", boot_id(_root)},
                    {"root", _root.root().empty() ? "/" : _root.root()}, {"saved", saved}};
  // The directory the control socket gets: what is read back from it as root is only what we wrote.
  if (auto why = ensure_dir(parent_dir(_state_path), DirTrust::not_shared); !why.empty()) return failed(EPERM, why);
  const std::string tmp = _state_path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return failed(errno, errno_name(errno));
  const std::string text = doc.dump(1) + "\n";
  int err = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) ? 0 : (errno ? errno : EIO);
  // On disk before the kernel file changes: a crash right after the write must find it.
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  if (err == 0 && ::rename(tmp.c_str(), _state_path.c_str()) != 0) err = errno;
  if (err) return failed(err, errno_name(err));
  return std::nullopt;
}

TxnResult SteeringTransaction::apply(const std::vector<FileChange>& changes) {
  TxnResult result;
  if (!_blocked.empty()) {
    result.error = TxnError{_state_path, EBUSY, _blocked};
    return result;
  }
  for (const auto& c : changes)
    if (auto why = steering_file_problem(c.path); !why.empty()) {
      result.error = TxnError{c.path, EPERM, c.path + ": " + why};
      return result;
    }
  std::vector<Undo> undo;
  for (const auto& c : changes) {
    const auto now = _root.read(c.path);
    if (!now.ok()) {
      result.error = TxnError{c.path, now.err, "cannot read " + explain_write_error(c.path, now.err)};
      break;
    }
    auto it = std::find_if(_saved.begin(), _saved.end(), [&](const SavedValue& s) { return s.path == c.path; });
    Undo u{c.path, now.text, it == _saved.end() ? "" : it->new_value, it == _saved.end()};
    if (u.added) _saved.push_back({c.path, now.text, c.value});
    else it->new_value = c.value;
    undo.push_back(u);
    if (auto err = persist()) {
      result.error = std::move(err);
      break;
    }
    if (const int err = _root.write(c.path, c.value)) {
      result.error = TxnError{c.path, err, explain_write_error(c.path, err)};
      break;
    }
    result.done.push_back({c.path, now.text, c.value});
  }
  if (!result.error) return result;
  // Newest first: the file written last is restored first; the failed one was not written.
  for (size_t i = undo.size(); i-- > 0;) {
    const Undo& u = undo[i];
    const bool written = i < result.done.size();
    if (written) {
      if (const int err = _root.write(u.path, u.before)) {
        result.rollback_errors.push_back({u.path, err, explain_write_error(u.path, err)});
        continue;  // keep it saved: revert (or the state file) can still restore it
      }
    }
    auto it = std::find_if(_saved.begin(), _saved.end(), [&](const SavedValue& s) { return s.path == u.path; });
    if (it == _saved.end()) continue;
    if (u.added) _saved.erase(it);
    else it->new_value = u.prior_new;
  }
  persist();
  result.done.clear();
  return result;
}

TxnResult SteeringTransaction::revert() {
  TxnResult result;
  if (!_blocked.empty()) {
    result.error = TxnError{_state_path, EBUSY, _blocked};
    return result;
  }
  std::vector<SavedValue> kept;
  for (size_t i = _saved.size(); i-- > 0;) {
    const auto& s = _saved[i];
    if (const int err = _root.write(s.path, s.old_value)) {
      // A device that went away has nothing left to restore; anything else stays saved.
      if (err == ENOENT) continue;
      result.rollback_errors.push_back({s.path, err, explain_write_error(s.path, err)});
      kept.insert(kept.begin(), s);
      continue;
    }
    result.done.push_back(s);
  }
  _saved = std::move(kept);
  result.error = persist();
  return result;
}

TxnResult revert_state_file(const std::string& state_path, const std::optional<std::string>& root) {
  std::string problem;
  auto state = load_state(state_path, problem);
  TxnResult result;
  if (!state) {
    if (!problem.empty()) result.error = TxnError{state_path, EINVAL, problem};
    return result;
  }
  SteeringTransaction txn(SysRoot(root.value_or(state->value("root", std::string("/")))), state_path);
  return txn.revert();
}

std::string default_steering_state_path() {
  if (const char* env = std::getenv("NVMETUNE_STEERING_STATE"); env && *env) return env;
  if (geteuid() == 0) return "/run/nvmetune/steering.json";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return std::string(xdg) + "/nvmetune-steering.json";
  return "/tmp/nvmetune-" + std::to_string(geteuid()) + "/steering.json";
}

}  // namespace sys
