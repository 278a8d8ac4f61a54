# shellcheck shell=bash
# Scaffolding shared by the command-line tests (tests/*_cli_test.sh, rpc_ctl_test.sh), sourced
# right after `set -uo pipefail`:  . "$(dirname "$0")/cli_lib.sh"
# The script sets $bin (the nvmetune binary) and, when serve comes from another build,
# $serve_bin. It may set $expect_timeout (seconds, default 30) before calling expect_exit.
# Ends with `finish`, whose exit status is the test's result.

work=$(mktemp -d)
# Every background process a test starts goes here, so that a test that exits early (a failed
# start, `exit 1`, a signal) does not leave an engine or a hog running.
pids=()
cli_cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cli_cleanup EXIT

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
show() { sed 's/^/  | /' "$work/out" "$work/err"; }

# expect_exit CODE NAME -- COMMAND...: runs COMMAND, output in $work/out and $work/err. The
# timeout turns a hung command into a failure of its own rather than the whole test's ctest
# timeout, which would name no command.
expect_exit() {
  local want=$1 name=$2
  shift 3
  timeout "${expect_timeout:-30}" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then pass "$name (exit $got)"; else fail "$name: exit $got, expected $want"; show; fi
}
expect_grep() {  # expect_grep FILE REGEX NAME
  if grep -qE -- "$2" "$1"; then pass "$3"; else fail "$3: no /$2/ in $(basename "$1")"; show; fi
}

# reap PID: waits for PID and returns its exit status. The PID leaves $pids, so that cleanup
# cannot kill an unrelated process that was given the same PID later.
reap() {
  wait "$1"
  local rc=$? p keep=()
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
  return "$rc"
}

# start_serve NAME ARGS...: starts `nvmetune serve ARGS...` in the background (output in
# $work/NAME.out and $work/NAME.err), waits at most 10 s for its ready line, sets $pid and $port.
# Returns 1, the failure recorded, if serve is not ready or names no bound port.
start_serve() {
  local name=$1
  shift
  "${serve_bin:-$bin}" serve "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    grep -qx "nvmetune: ready" "$work/$name.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -qx "nvmetune: ready" "$work/$name.out"; then
    fail "$name: no ready line"; sed 's/^/  | /' "$work/$name.out" "$work/$name.err"; return 1
  fi
  port=$(sed -n 's/^nvmetune: listening on tcp 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$name.out" | head -1)
  [ -n "$port" ] && [ "$port" -ne 0 ] || { fail "$name: no bound port"; cat "$work/$name.out"; return 1; }
  pass "$name: ready on port $port"
}

finish() {
  echo "$(basename "$0" .sh): $failures failure(s)"
  [ "$failures" -eq 0 ] && exit 0
  exit 1
}
