#!/usr/bin/env bash
# Command-line behaviour of nvmetune: help, exit codes, config errors with their paths, and
# `serve` on a free port until SIGTERM/SIGINT. Usage: cli_test.sh PATH/TO/nvmetune
set -uo pipefail

bin=${1:?usage: cli_test.sh PATH/TO/nvmetune}
# shellcheck source=cli_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/cli_lib.sh"

expect_line() {  # expect_line FILE TEXT: TEXT is a whole line of FILE
  if grep -qxF -- "$2" "$1"; then pass "line: $2"; else fail "missing line: $2"; sed 's/^/  | /' "$1"; fi
}

# --- help and usage -------------------------------------------------------------------------
expect_exit 0 "--help" -- "$bin" --help
grep -q "serve" "$work/out" || fail "--help does not list serve"
expect_exit 0 "serve --help" -- "$bin" serve --help
for opt in --config --listen --ram --nqn --threads "Exit codes"; do
  grep -q -- "$opt" "$work/out" || fail "serve --help does not explain $opt"
done
expect_exit 0 "--version" -- "$bin" --version
expect_exit 2 "unknown subcommand" -- "$bin" no-such-subcommand
expect_exit 2 "unknown option" -- "$bin" serve --no-such-option

# --- configuration errors: every one, with its path, exit 2 ---------------------------------
cat >"$work/bad.json" <<'EOF'
{"listeners": [{"traddr": "127.0.0.1", "trsvcid": "99999"}],
 "subsystems": [{"nqn": "nqn.2026-12.io.nvmetune:a", "namespaces": [
    {"nsid": 1, "backend": "ram", "size": "1GB"},
    {"nsid": 1, "backend": "null", "size": "1G"}]}],
 "tcp": {"queue_deph": 64}}
EOF
expect_exit 2 "invalid config" -- "$bin" serve --config "$work/bad.json"
expect_line "$work/err" '$.listeners[0].trsvcid: invalid port "99999" (expected 0..65535; 0 = any free port)'
expect_line "$work/err" '$.subsystems[0].namespaces[1].nsid: duplicate nsid 1 in this subsystem'
expect_line "$work/err" '$.tcp.queue_deph: unknown key "queue_deph" (did you mean "queue_depth"?)'
grep -q '^\$\.subsystems\[0\]\.namespaces\[0\]\.size: malformed size "1GB"' "$work/err" || fail "size error missing"
[ "$(wc -l <"$work/err")" -eq 4 ] || { fail "expected exactly 4 error lines"; cat "$work/err"; }

printf '{"listeners": [\n' >"$work/syntax.json"
expect_exit 2 "JSON syntax error" -- "$bin" serve -c "$work/syntax.json"
grep -q '^\$: JSON syntax error at byte 17 (line 2, column 1)' "$work/err" || { fail "syntax position"; cat "$work/err"; }

expect_exit 2 "missing config file" -- "$bin" serve --config "$work/absent.json"
grep -q '^--config: cannot read' "$work/err" || fail "missing file message"

expect_exit 2 "bad overrides" -- "$bin" serve --listen nonsense --listen 300.1.1.1:5 --ram 12X --nqn foo --threads 5000
expect_line "$work/err" '--listen nonsense: expected ADDR:PORT, e.g. 127.0.0.1:4420 or 0.0.0.0:0'
expect_line "$work/err" '--listen 300.1.1.1:5: invalid IPv4 address "300.1.1.1" (e.g. "127.0.0.1" or "0.0.0.0")'
expect_line "$work/err" '--ram: malformed size "12X" (e.g. 64MiB, 1G; 1024-based)'
expect_line "$work/err" '--threads: out of range: 5000 (expected 0..1024)'
grep -q '^--nqn: invalid NQN "foo"' "$work/err" || fail "--nqn error missing"
[ "$(wc -l <"$work/err")" -eq 5 ] || { fail "expected exactly 5 error lines"; cat "$work/err"; }

# --- serve until a signal --------------------------------------------------------------------
# stop_serve NAME SIGNAL: sends SIGNAL, expects exit 0 within 10 s.
stop_serve() {
  local name=$1 sig=$2
  kill "-$sig" "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then fail "$name: still running 10 s after SIG$sig"; return; fi
  reap "$pid"
  local rc=$?
  [ "$rc" -eq 0 ] && pass "$name: SIG$sig → exit 0" || { fail "$name: SIG$sig → exit $rc"; cat "$work/$name.err"; }
}

nqn=nqn.2026-12.io.nvmetune:cli-test
if start_serve term --listen 127.0.0.1:0 --ram 16MiB --nqn "$nqn" --threads 1; then
  expect_line "$work/term.out" "  nvme discover -t tcp -a 127.0.0.1 -s $port"
  expect_line "$work/term.out" "  nvme connect -t tcp -a 127.0.0.1 -s $port -n $nqn"
  grep -qE '^  nsid 1: ram, 16 MiB, 512-byte blocks, (transparent huge pages|4k pages \(transparent huge pages are [a-z]+ here\)), faulted in as written$' "$work/term.out" ||
    { fail "namespace line (size, blocks, pages)"; cat "$work/term.out"; }
  # With no cpumask, bound runs one worker per CPU this process may run on (issue 35), and says so.
  n=$(nproc); cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
  workers="$n workers on CPUs $cpus"; [ "$n" = 1 ] && workers="1 worker on CPU $cpus"
  expect_line "$work/term.out" "nvmetune: threading bound (epoll), $workers (the CPUs this process may run on; threading.cpumask picks others)"
  [ "$(tail -1 "$work/term.out")" = "nvmetune: ready" ] || fail "ready is not the last line"
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then pass "port $port accepts TCP"; else fail "port $port refuses TCP"; fi

  # A second engine on the same port cannot start: exit 1, the listener named.
  expect_exit 1 "port in use" -- "$bin" serve --listen "127.0.0.1:$port" --ram 1MiB
  grep -q '^\$\.listeners\[0\]' "$work/err" || { fail "port-in-use error has no listener path"; cat "$work/err"; }
  stop_serve term TERM
fi

if start_serve int --listen 127.0.0.1:0 --ram 1MiB; then
  stop_serve int INT
  grep -q "SIGINT received" "$work/int.err" || fail "no stop message on stderr"
fi

finish
