#!/usr/bin/env bash
# eBPF probe overhead: nvmetune serve (null backend, bound, one CPU) under nvmetune perf (4k
# randread qd32, another CPU); the probes started and stopped live over the control socket,
# alternating A (off) B (on) A B ... for ROUNDS rounds in one run. Prints IOPS per run and the
# median (min-max) of each side and the drop. Never fails on the numbers. Needs root.
# Usage: bench/probes-overhead.sh [PATH/TO/nvmetune]
#   PROBES="runqlat irqload wqlat biolat socklat"  the B side (usdtlat adds a uprobe hit per
#   command point and is measured apart with PROBES=usdtlat); ROUNDS=3 TIME=5
set -uo pipefail

bin=${1:-${NVMETUNE:-nvmetune}}
rounds=${ROUNDS:-3}
time_s=${TIME:-5}
probes_on=${PROBES:-"runqlat irqload wqlat biolat socklat"}
target_cpu=${TARGET_CPU:-0}
perf_cpu=${PERF_CPU:-1}
out_dir=${OUT:-$(mktemp -d /tmp/nvmetune-probes-bench.XXXXXX)}
mkdir -p "$out_dir"
nqn=nqn.2026-12.io.nvmetune:probes-bench
# shellcheck source=lib-target.sh
. "$(dirname "$0")/lib-target.sh"
start_bench_target "$bin"

probes() {  # probes start|stop
  for p in $probes_on; do
    "$bin" probe "$1" "$p" --socket "$sock" >/dev/null 2>"$out_dir/probe.err" \
      || { echo "probe $1 $p failed: $(cat "$out_dir/probe.err")" >&2; exit 1; }
  done
}

echo "nvmetune probes overhead: serve on CPU $target_cpu, perf on CPU $perf_cpu, B = probes [$probes_on]," \
     "$rounds rounds of A B, ${time_s}s each; raw results in $out_dir"
: >"$out_dir/results.tsv"
for round in $(seq "$rounds"); do
  for side in A B; do
    if [ "$side" = B ]; then probes start; else probes stop; fi
    json=$out_dir/r$round-$side.json
    taskset -c "$perf_cpu" "$bin" perf -r "trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" \
      --rw randread --bs 4k --qd 32 --time "$time_s" --ramp 1 --json >"$json" 2>"$out_dir/perf.err" \
      || { echo "perf failed: $(tail -3 "$out_dir/perf.err")" >&2; continue; }
    iops=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"]))' "$json")
    printf '%s\t%s\t%s\n' "$round" "$side" "$iops" >>"$out_dir/results.tsv"
    printf '  round %s %s (%s) %9s IOPS\n' "$round" "$side" "$([ $side = A ] && echo off || echo on)" "$iops"
  done
done
probes stop
python3 - "$out_dir/results.tsv" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
side = {s: [int(r[2]) for r in rows if r[1] == s] for s in "AB"}
if not side["A"] or not side["B"]:
    sys.exit("no results")
a, b = statistics.median(side["A"]), statistics.median(side["B"])
for s, name in (("A", "probes off"), ("B", "probes on ")):
    v = side[s]
    print(f"{name}: median {statistics.median(v):.0f} IOPS (min {min(v)} max {max(v)}, n={len(v)})")
print(f"drop: {100.0 * (a - b) / a:+.1f} % (median on vs off)")
PY
