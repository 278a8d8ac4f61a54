#pragma once
// Applying steering as a transaction, and undoing it exactly, even after a crash.
//
// Every file is read right before it is written; its first old value is kept, in memory and in a
// state file written (atomically) *before* the write, so a kill -9 at any point leaves a file
// that revert_state_file() can undo. A batch applies all or nothing: the first failed write
// rolls back every earlier write of the batch, and the error names the file, the errno and what
// it means (not root, a read-only /proc, an interrupt line the kernel will not move). revert()
// writes every saved old value back verbatim, so the files read byte-identical to before.
#include <optional>
#include <string>
#include <vector>

#include "engine/system/sys_root.hpp"

namespace sys {

struct FileChange {
  std::string path;   // as on the machine
  std::string value;  // written verbatim, in one write()
};

// A file the transaction changed: the content before the first change, and the last value written.
struct SavedValue {
  std::string path;
  std::string old_value;
  std::string new_value;
};

struct TxnError {
  std::string path;
  int err = 0;
  std::string message;  // "PATH: EIO (Input/output error): the kernel will not move …"
};

struct TxnResult {
  std::vector<SavedValue> done;              // written (apply) or restored (revert), in order
  std::optional<TxnError> error;             // what stopped the batch
  std::vector<TxnError> rollback_errors;     // files that could not be restored (kept in the state)
  bool ok() const { return !error && rollback_errors.empty(); }
  std::string message() const;               // every error, one per line
};

// "PATH: ERRNO (text): what it means here" (for reads too: ENOENT, EACCES say the same).
std::string explain_write_error(const std::string& path, int err);

class SteeringTransaction {
 public:
  // state_path: the crash-safe record of saved values ("" = none, for tests of the logic only).
  // A state file left by a process that is gone (same boot) is adopted: its old values are the
  // machine's originals, so revert() restores them too. One held by a live process, or one
  // revert_state_file() would refuse, blocks apply and revert.
  SteeringTransaction(SysRoot root, std::string state_path);

  // Refuses the whole batch, writing nothing, when a change names a file steering never writes.
  TxnResult apply(const std::vector<FileChange>& changes);
  // Restores every saved value (newest first) and removes the state file once all are back.
  TxnResult revert();

  const std::vector<SavedValue>& saved() const { return _saved; }
  // Why this transaction may not apply ("" = it may): the state file of a live engine.
  const std::string& blocked() const { return _blocked; }
  // What happened to a state file found at construction (adopted, stale after a reboot, …).
  const std::string& recovered() const { return _recovered; }

 private:
  std::optional<TxnError> persist() const;

  SysRoot _root;
  std::string _state_path;
  std::vector<SavedValue> _saved;
  std::string _blocked, _recovered;
};

// Crash recovery (`nvmetune steer revert` with no engine): restores a state file's values
// through the root it records (or `root` when given), unless the process that wrote it still
// runs. The file is removed when everything is restored. A state file is refused whole, and
// nothing written, when it names a file steering never writes (steering_files.hpp) or one that
// is now a symbolic link, or when it or its directory could have been written by another user
// (the directory must be ours and not group/world-writable, as the control socket's is made).
TxnResult revert_state_file(const std::string& state_path, const std::optional<std::string>& root = std::nullopt);

// $NVMETUNE_STEERING_STATE when set; else /run/nvmetune/steering.json for root, else
// $XDG_RUNTIME_DIR/nvmetune-steering.json (/tmp/nvmetune-UID/steering.json without it).
std::string default_steering_state_path();

}  // namespace sys
