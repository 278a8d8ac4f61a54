#!/usr/bin/env bash
# What the kernel's arrival stamps cost (tcp.arrival_stamps, "Latency as the hosts see it"):
# nvmetune serve pinned to one CPU (bound, one worker) with a 1 GiB RAM namespace of 4096-byte
# blocks, written first; nvmetune perf on another CPU, 4k randread qd32. Each run starts its target
# afresh with stamps on or off, alternated A B / B A over ROUNDS rounds. Prints each run and the
# median, min-max of the IOPS ratio on/off per round. Never fails on the numbers.
# Usage: bench/arrival-stamps.sh [PATH/TO/nvmetune]
set -uo pipefail

bin=${1:-${NVMETUNE:-nvmetune}}
rounds=${ROUNDS:-4}
time_s=${TIME:-5}
target_cpu=${TARGET_CPU:-0}
perf_cpu=${PERF_CPU:-1}
qd=${QD:-32}
out_dir=${OUT:-$(mktemp -d /tmp/nvmetune-stamps.XXXXXX)}
nqn=nqn.2026-12.io.nvmetune:stamps
command -v "$bin" >/dev/null || [ -x "$bin" ] || { echo "no nvmetune binary: $bin" >&2; exit 2; }

spid=
trap 'if [ -n "$spid" ]; then kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; fi' EXIT

run() {  # run on|off ROUND: one fresh target, write 1 GiB, measure; prints "ROUND VARIANT IOPS P99_US"
  local stamps=true; [ "$1" = off ] && stamps=false
  cat >"$out_dir/config.json" <<JSON
{
  "listeners": [{"trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": "0"}],
  "subsystems": [{"nqn": "$nqn", "allow_any_host": true,
                  "namespaces": [{"nsid": 1, "backend": "ram", "size": "1GiB", "block_size": 4096, "populate": true}]}],
  "threading": {"mode": "bound", "cpumask": "$target_cpu", "threads": 1},
  "tcp": {"arrival_stamps": $stamps}
}
JSON
  taskset -c "$target_cpu" "$bin" serve --config "$out_dir/config.json" --no-control-socket \
    >"$out_dir/serve.out" 2>"$out_dir/serve.err" &
  spid=$!
  for _ in $(seq 300); do grep -qx "nvmetune: ready" "$out_dir/serve.out" 2>/dev/null && break; sleep 0.1; done
  local port
  port=$(sed -n 's/^nvmetune: listening on tcp 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out_dir/serve.out" | head -1)
  [ -n "$port" ] || { echo "serve did not start" >&2; cat "$out_dir/serve.err" >&2; exit 1; }
  local remote="trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn"
  taskset -c "$perf_cpu" "$bin" perf -r "$remote" --rw write --bs 1m --qd 8 --size 1g >/dev/null 2>&1
  taskset -c "$perf_cpu" "$bin" perf -r "$remote" --rw randread --bs 4k --qd "$qd" --time "$time_s" --ramp 1 --json \
    >"$out_dir/r$2-$1.json" 2>/dev/null
  kill "$spid"; wait "$spid" 2>/dev/null; spid=
  python3 - "$out_dir/r$2-$1.json" "$2" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
p99 = r["clat_ns"]["percentile"].get("99.000000", 0) / 1000
print(f"{sys.argv[2]} {sys.argv[3]} {r['iops']:.0f} {p99:.1f}")
PY
}

echo "arrival stamps A/B: target CPU $target_cpu, perf CPU $perf_cpu, 4k randread qd$qd, ${time_s} s, $rounds rounds ($out_dir)"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="on off"; else order="off on"; fi
  for v in $order; do run "$v" "$round" | tee -a "$out_dir/results"; done
done
python3 - "$out_dir/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for rnd, v, iops, p99 in rows: by.setdefault(rnd, {})[v] = float(iops)
ratios = [d["on"] / d["off"] for d in by.values() if "on" in d and "off" in d and d["off"] > 0]
for v in ("on", "off"):
    xs = [float(r[2]) for r in rows if r[1] == v]
    if xs: print(f"stamps {v:3}: IOPS median {statistics.median(xs):.0f} (min {min(xs):.0f}, max {max(xs):.0f})")
if ratios:
    print(f"on/off per round: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
PY
