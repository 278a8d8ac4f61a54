#!/usr/bin/env bash
# `nvmetune steer` against `nvmetune serve`, both inside a network namespace of their own (its
# loopback's RPS queue is what they steer; the machine's interfaces are never touched):
# plan (dry-run table), apply (checked in the namespace's sysfs), show, bad rules, a clean stop
# that reverts, and `steer revert` from the state file after kill -9.
set -uo pipefail
. "$(dirname "$0")/cli_lib.sh"
bin=$1

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (ip netns)"; exit 0; }
ns="nvmt-steer-cli-$$"
ip netns add "$ns" || { echo "FAIL: ip netns add"; exit 1; }
ip -n "$ns" link set lo up
trap 'cli_cleanup; ip netns del "$ns" 2>/dev/null' EXIT
state="$work/steering.json"
sock="$work/ctl.sock"
# Runs a command in the namespace (a script, so that timeout can run it; exec keeps the pid).
in_ns="$work/in-ns"
printf '#!/bin/sh\nexec ip netns exec %s env NVMETUNE_STEERING_STATE=%s "$@"\n' "$ns" "$state" >"$in_ns"
chmod +x "$in_ns"
serve_bin="$work/serve-in-ns"
printf '#!/bin/sh\nexec %s %s "$@"\n' "$in_ns" "$bin" >"$serve_bin"
chmod +x "$serve_bin"
rps="/sys/class/net/lo/queues/rx-0/rps_cpus"
flow="/sys/class/net/lo/queues/rx-0/rps_flow_cnt"
orig_rps=$("$in_ns" cat "$rps")
orig_flow=$("$in_ns" cat "$flow")

start_serve a --listen 127.0.0.1:0 --ram 16M --control-socket "$sock" || finish

expect_exit 0 "plan is a dry run" -- "$in_ns" "$bin" steer --socket "$sock" plan --rps lo:0=0/4096
expect_grep "$work/out" "^/sys/class/net/lo/queues/rx-0/rps_cpus +$orig_rps +1\$" "plan row: path, old, new"
expect_grep "$work/out" "rps_flow_cnt +$orig_flow +4096" "plan row for rps_flow_cnt"
[ "$("$in_ns" cat "$rps")" = "$orig_rps" ] && pass "plan changed nothing" || fail "plan wrote $rps"

expect_exit 1 "unknown device refused" -- "$in_ns" "$bin" steer --socket "$sock" apply --rps nosuch:0=0
expect_grep "$work/err" "params.rps\[0\].device: no network interface nosuch" "error names the rule's field"
expect_exit 2 "malformed rule is a usage error" -- "$in_ns" "$bin" steer --socket "$sock" apply --rps lo
expect_exit 2 "apply with nothing to do" -- "$in_ns" "$bin" steer --socket "$sock" apply

expect_exit 0 "apply" -- "$in_ns" "$bin" steer --socket "$sock" apply --rps lo:0=0/4096
expect_grep "$work/out" "^applied: 2 file" "apply reports the files"
[ "$("$in_ns" cat "$rps")" = "1" ] && pass "rps_cpus set in sysfs" || fail "rps_cpus is $("$in_ns" cat "$rps")"
[ "$("$in_ns" cat "$flow")" = "4096" ] && pass "rps_flow_cnt set in sysfs" || fail "rps_flow_cnt is $("$in_ns" cat "$flow")"
expect_exit 0 "show" -- "$in_ns" "$bin" steer --socket "$sock" show --rate-interval 100
expect_grep "$work/out" "^  rx-0 +rps_cpus 0 +rps_flow_cnt 4096" "show lists lo's rx queue"
expect_grep "$work/out" "changed by the engine: 2 file" "show says what the engine changed"
expect_exit 0 "events record the apply" -- "$in_ns" "$bin" ctl --socket "$sock" events.get
expect_grep "$work/out" '"kind": "steering"' "a steering event"

# A clean stop restores the machine.
kill -TERM "$pid"; reap "$pid"
[ "$("$in_ns" cat "$rps")" = "$orig_rps" ] && [ "$("$in_ns" cat "$flow")" = "$orig_flow" ] && pass "SIGTERM reverted" ||
  fail "after SIGTERM: $("$in_ns" cat "$rps") $("$in_ns" cat "$flow")"
[ ! -e "$state" ] && pass "state file removed" || fail "state file left after a clean stop"

# kill -9 leaves the state file; `steer revert` (no engine) restores from it.
start_serve b --listen 127.0.0.1:0 --ram 16M --control-socket "$sock" || finish
expect_exit 0 "apply again" -- "$in_ns" "$bin" steer --socket "$sock" apply --rps lo=0/2048
kill -KILL "$pid"; reap "$pid"
[ -s "$state" ] && pass "state file survives kill -9" || fail "no state file after kill -9"
[ "$("$in_ns" cat "$flow")" = "2048" ] && pass "the change outlived the engine" || fail "rps_flow_cnt is $("$in_ns" cat "$flow")"
expect_exit 0 "steer revert after a crash" -- "$in_ns" "$bin" steer --socket "$sock" revert
expect_grep "$work/out" "reverted 2 file\(s\) from $state" "revert names the state file"
[ "$("$in_ns" cat "$rps")" = "$orig_rps" ] && [ "$("$in_ns" cat "$flow")" = "$orig_flow" ] && pass "restored from the state file" ||
  fail "after revert: $("$in_ns" cat "$rps") $("$in_ns" cat "$flow")"
# A profile's steering section: applied by `profile apply`, captured by `profile save`.
start_serve c --listen 127.0.0.1:0 --ram 16M --control-socket "$sock" || finish
cat >"$work/steer.json" <<'JSON'
{"schema": "nvmetune.profile/1", "name": "rps0", "steering": {"rps": [{"device": "lo", "queue": 0, "cpus": "0"}]}}
JSON
profile=("$in_ns" "$bin" profile --db "$work/p.db" --socket "$sock")
expect_exit 0 "profile apply with steering" -- "${profile[@]}" apply "$work/steer.json"
expect_grep "$work/out" "^applied: steering" "profile apply reports steering applied"
[ "$("$in_ns" cat "$rps")" = "1" ] && pass "the profile set rps_cpus" || fail "rps_cpus is $("$in_ns" cat "$rps")"
expect_exit 0 "profile save" -- "${profile[@]}" save captured
expect_exit 0 "profile show" -- "${profile[@]}" show captured
expect_grep "$work/out" '"device": "lo"' "the saved profile has lo's rps rule"
expect_exit 0 "steer revert through the engine" -- "$in_ns" "$bin" steer --socket "$sock" revert
[ "$("$in_ns" cat "$rps")" = "$orig_rps" ] && pass "reverted through the engine" || fail "rps_cpus is $("$in_ns" cat "$rps")"
kill -TERM "$pid"; reap "$pid"
expect_exit 0 "a second revert has nothing to do" -- "$in_ns" "$bin" steer --socket "$sock" revert
expect_grep "$work/out" "nothing to revert" "says so"
finish
