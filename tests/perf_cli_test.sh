#!/usr/bin/env bash
# `nvmetune perf` against `nvmetune serve` (a RAM namespace on a free port): a verify run, a
# --json run parsed as fio-shaped JSON, and malformed -r strings (exit 2, a clear message).
# Usage: perf_cli_test.sh PATH/TO/nvmetune [PATH/TO/nvmetune-for-serve]
set -uo pipefail

bin=${1:?usage: perf_cli_test.sh PATH/TO/nvmetune}
serve_bin=${2:-$bin}
# shellcheck source=cli_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/cli_lib.sh"
# Each perf run below lasts a few seconds; a minute leaves room for a loaded machine.
expect_timeout=60

# --- help and usage -------------------------------------------------------------------------
expect_exit 0 "perf --help" -- "$bin" perf --help
for opt in -r --rw --rwmixread --bs --qd --queues --threads --cpus --time --size --ramp --verify \
           --digest --nsid --json "Exit codes"; do
  grep -q -- "$opt" "$work/out" || fail "perf --help does not explain $opt"
done
expect_exit 2 "perf without -r" -- "$bin" perf --rw randread
expect_exit 2 "perf --rw bogus" -- "$bin" perf -r 'trtype:tcp traddr:127.0.0.1 subnqn:nqn.x' --rw bogus

# Malformed -r strings: exit 2 before any connection, the problem named.
expect_exit 2 "-r unknown key" -- "$bin" perf -r 'trtype:tcp traddr:127.0.0.1 trsvcid:4420 subnqn:nqn.a:b colour:blue'
grep -q '^nvmetune perf: -r: unknown key "colour"' "$work/err" || { fail "unknown key message"; cat "$work/err"; }
expect_exit 2 "-r fc" -- "$bin" perf -r 'trtype:fc traddr:127.0.0.1 subnqn:nqn.a:b'
grep -q '^nvmetune perf: -r: trtype "fc" is not supported (tcp or rdma)' "$work/err" || { fail "trtype message"; cat "$work/err"; }
# trtype:rdma on a host without an RDMA device (these build machines): a connection failure.
if [ ! -d /sys/class/infiniband ] || [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  expect_exit 1 "-r rdma, no device" -- "$bin" perf -r 'trtype:rdma traddr:127.0.0.1 subnqn:nqn.a:b' --time 1
  grep -q 'cannot connect to rdma 127.0.0.1:4420 nqn.a:b: no RDMA device' "$work/err" || { fail "no RDMA device message"; cat "$work/err"; }
fi
expect_exit 2 "-r bad port" -- "$bin" perf -r 'trtype:tcp traddr:127.0.0.1 trsvcid:99999 subnqn:nqn.a:b'
grep -q '^nvmetune perf: -r: trsvcid "99999" is not a port' "$work/err" || { fail "trsvcid message"; cat "$work/err"; }
expect_exit 2 "-r without subnqn" -- "$bin" perf -r 'trtype:tcp traddr:127.0.0.1'
grep -q '^nvmetune perf: -r: subnqn missing' "$work/err" || { fail "subnqn message"; cat "$work/err"; }
expect_exit 2 "-r garbage" -- "$bin" perf -r 'hello'
grep -q '^nvmetune perf: -r: expected KEY:VALUE, got "hello"' "$work/err" || { fail "garbage message"; cat "$work/err"; }
expect_exit 2 "--bs malformed" -- "$bin" perf -r 'trtype:tcp traddr:127.0.0.1 subnqn:nqn.a:b' --bs 4q

# --- against a running target -----------------------------------------------------------------
nqn=nqn.2026-12.io.nvmetune:perf-test
if start_serve serve --listen 127.0.0.1:0 --ram 32MiB --nqn "$nqn" --threads 1 --no-control-socket; then
  remote="trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn"

  expect_exit 0 "randwrite --verify" -- "$bin" perf -r "$remote" --rw randwrite --bs 4k --qd 8 --time 2 --verify
  grep -q '^write: IOPS=[1-9]' "$work/out" || { fail "no write IOPS line"; cat "$work/out"; }
  grep -q '^\[   1s\] write ' "$work/out" || { fail "no progress line"; cat "$work/out"; }
  grep -q '99.99th=\[' "$work/out" || { fail "no 99.99th percentile"; cat "$work/out"; }
  grep -q '^verify: [1-9][0-9]* block reads checked, 0 mismatches' "$work/out" || { fail "verify summary"; cat "$work/out"; }

  expect_exit 0 "randread --json" -- "$bin" perf -r "$remote" --rw randread --bs 4k --qd 16 --time 1 --json
  if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["jobs"][0]["read"]
assert r["iops"] > 0, r["iops"]
assert r["bw"] > 0
c = r["clat_ns"]
assert 0 < c["min"] <= c["mean"] <= c["max"], c
assert c["stddev"] >= 0
p = c["percentile"]
assert len(p) == 17 and p["1.000000"] <= p["99.000000"] <= p["99.990000"], p
assert d["jobs"][0]["write"]["total_ios"] == 0
' "$work/out"; then pass "--json is fio-shaped, read.iops > 0"; else fail "--json check"; cat "$work/out"; fi

  expect_exit 0 "randrw 2 threads --size --verify" -- "$bin" perf -r "$remote" --rw randrw --rwmixread 70 \
    --bs 8k --qd 4 --queues 2 --threads 2 --size 4m --verify --digest hdr,data
  grep -q ', 0 mismatches' "$work/out" || { fail "randrw verify"; cat "$work/out"; }

  expect_exit 1 "wrong subnqn" -- "$bin" perf -r "trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:nqn.2026-12.io.nvmetune:absent" --time 1
  grep -q '^nvmetune perf: cannot connect' "$work/err" || { fail "connect failure message"; cat "$work/err"; }
fi

finish
