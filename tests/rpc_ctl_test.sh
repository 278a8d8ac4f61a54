#!/usr/bin/env bash
# `nvmetune ctl` against a running `nvmetune serve` on a temporary control socket: results,
# errors naming the bad field (exit 1), usage errors (exit 2), a refused connection, and
# `ctl stats --watch`. Usage: rpc_ctl_test.sh PATH/TO/nvmetune
set -uo pipefail

bin=${1:?usage: rpc_ctl_test.sh PATH/TO/nvmetune}
# shellcheck source=cli_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/cli_lib.sh"
sock=$work/ctl.sock

ctl=("$bin" ctl --socket "$sock")

# --- serve with a control socket ---------------------------------------------------------------
start_serve serve --listen 127.0.0.1:0 --ram 16MiB --threads 1 --control-socket "$sock" || exit 1
grep -qxF "nvmetune: control socket $sock" "$work/serve.out" && pass "serve prints the socket path" ||
  { fail "serve does not print the socket path"; cat "$work/serve.out"; }
[ "$(stat -c %a "$sock")" = 600 ] && pass "socket mode 0600" || fail "socket mode $(stat -c %a "$sock")"

# --- requests -------------------------------------------------------------------------------------
expect_exit 0 "ctl threading.get" -- "${ctl[@]}" threading.get
expect_grep "$work/out" '"mode": "[a-z_]+"' "threading.get prints the mode"
expect_grep "$work/out" '"cpumask": ' "threading.get prints the cpumask"

expect_exit 1 "bad threading.set" -- "${ctl[@]}" threading.set '{"mode":"warp"}'
expect_grep "$work/err" '(params|\$)\.mode: .*"warp"' "the error names params.mode"
expect_grep "$work/err" 'error -32602' "the error has its code"
expect_exit 0 "threading unchanged" -- "${ctl[@]}" threading
grep -q '"warp"' "$work/out" && fail "a refused threading.set changed the mode"

expect_exit 0 "budgets.set recv_pdus 16" -- "${ctl[@]}" budgets.set '{"recv_pdus":16}'
expect_exit 0 "budgets.get" -- "${ctl[@]}" budgets.get
expect_grep "$work/out" '"recv_pdus": 16' "budgets.get shows 16"
expect_grep "$work/out" '"send_pdus": 64' "the other budgets are unchanged"

expect_exit 1 "two bad budgets" -- "${ctl[@]}" budgets.set '{"recv_pdus":0,"reap_batch":"x"}'
expect_grep "$work/err" '^  params\.recv_pdus: ' "each bad field on its own line (recv_pdus)"
expect_grep "$work/err" '^  params\.reap_batch: ' "each bad field on its own line (reap_batch)"

expect_exit 0 "engine.info" -- "${ctl[@]}" info
expect_grep "$work/out" '"listeners"' "engine.info lists the listeners"
expect_exit 0 "subsystems.list" -- "${ctl[@]}" subsystems
expect_grep "$work/out" 'nqn.2026-12.io.nvmetune:default' "subsystems.list names the subsystem"

expect_exit 1 "unknown method" -- "${ctl[@]}" no.such.method
expect_grep "$work/err" 'error -32601: method not found: "no.such.method"' "the error names the method"

expect_exit 2 "params that are not JSON" -- "${ctl[@]}" threading.set '{mode: poll}'
expect_exit 2 "--watch with another method" -- "${ctl[@]}" threading.get --watch

expect_exit 1 "no server" -- "$bin" ctl --socket "$work/absent.sock" engine.info
expect_grep "$work/err" "$work/absent.sock" "the connection error names the socket"
expect_grep "$work/err" 'nvmetune serve' "the connection error suggests nvmetune serve"

# --- stats --watch ----------------------------------------------------------------------------------
expect_exit 0 "stats --watch, 2 lines" -- "${ctl[@]}" stats --watch --interval 200 --count 2
[ "$(grep -cE '^[0-9]{2}:[0-9]{2}:[0-9]{2} ' "$work/out")" -eq 2 ] && pass "two interval lines" ||
  { fail "expected two interval lines"; show; }
expect_grep "$work/out" '^TIME +MODE +IOPS' "a header line"
expect_exit 0 "stats --watch --hist" -- "${ctl[@]}" stats --watch --interval 200 --count 1 --hist queue_wait
expect_grep "$work/out" 'queue_wait, all queues' "a histogram title"
# An idle bound worker sleeps: no spin shown. A poll worker at qd1 polls through every gap
# between commands (idle_poll_us, 1 ms), so it shows a spin, part of its CPU: about 40 % of 96
# on an idle machine, nearly all of it when the initiator is starved of CPU (a loaded CI run saw
# 34 of 34 at 1,200 IOPS), so the test asks for a spin within the CPU, not for a busy part.
grep -qE ' w[0-9]+:[0-9]+\(' "$work/out" && { fail "a sleeping bound worker shows a spin"; show; } ||
  pass "no spin shown for a sleeping worker"
expect_exit 0 "switch to poll" -- "${ctl[@]}" threading.set '{"mode":"poll","threads":1}'
"$bin" perf -r "trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:nqn.2026-12.io.nvmetune:default" --qd 1 --time 4 \
  >"$work/perf.out" 2>&1 &
perf_pid=$!
expect_exit 0 "stats --watch in poll mode under qd1" -- "${ctl[@]}" stats --watch --interval 200 --count 3
wait "$perf_pid" || fail "perf against serve: exit $?"
cell=$(grep -oE 'w[0-9]+:[0-9]+\([0-9]+\)' "$work/out" | tail -1)
cpu=$(sed -n 's/w[0-9]*:\([0-9]*\)(.*/\1/p' <<<"$cell")
spin=$(sed -n 's/.*(\([0-9]*\))/\1/p' <<<"$cell")
[ -n "$cell" ] && [ "$spin" -gt 0 ] && [ "$spin" -le "$cpu" ] &&
  pass "a poll worker at qd1 shows its spin ($cell: CPU %, of it spinning)" ||
  { fail "no spin, or one above the CPU, for a poll worker at qd1: '$cell'"; show; }

# --- stop: the socket goes away -----------------------------------------------------------------------
kill -TERM "$pid"
reap "$pid"
rc=$?
[ "$rc" -eq 0 ] && pass "serve stopped (exit 0)" || fail "serve exit $rc"
[ -e "$sock" ] && fail "the socket file is still there after stop" || pass "socket removed on stop"

# --- --no-control-socket ----------------------------------------------------------------------------
start_serve serve --listen 127.0.0.1:0 --ram 1MiB --no-control-socket
grep -q "control socket" "$work/serve.out" && fail "--no-control-socket still opened one" || pass "--no-control-socket"
kill -TERM "$pid"
reap "$pid"

finish
