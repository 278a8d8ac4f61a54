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
# The probes' own CPU time, exactly rather than through IOPS (which the noise of these machines
# moves by more than the probes cost): one more run with the probes on and the kernel's BPF run
# statistics enabled (kernel.bpf_stats_enabled: run count and time per program; two clock reads
# per program run of its own, so this run is not one of the IOPS runs). BPF_STATS=0 skips it.
prog_stats() { bpftool prog show --json >"$1" 2>/dev/null; }
if [ "${BPF_STATS:-1}" = 1 ] && command -v bpftool >/dev/null; then
  old_stats=$(sysctl -n kernel.bpf_stats_enabled)
  sysctl -qw kernel.bpf_stats_enabled=1
  prog_stats "$out_dir/progs-before.json"
  taskset -c "$perf_cpu" "$bin" perf -r "trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" \
    --rw randread --bs 4k --qd 32 --time "$time_s" --json >"$out_dir/stats-run.json" 2>"$out_dir/perf.err"
  prog_stats "$out_dir/progs-after.json"
  sysctl -qw kernel.bpf_stats_enabled="$old_stats"
  python3 - "$out_dir" "$time_s" <<'PY'
import json, sys
d, secs = sys.argv[1], float(sys.argv[2])
def load(name):
    return {p["id"]: p for p in json.load(open(f"{d}/{name}")) if "run_cnt" in p or "run_time_ns" in p}
before, after = load("progs-before.json"), load("progs-after.json")
ios = json.load(open(f"{d}/stats-run.json"))["jobs"][0]["read"]["iops"] * secs
print(f"BPF programs with kernel run statistics ({secs:.0f} s of 4k randread qd32, {ios / secs:.0f} IOPS):")
print(f"  {'program':28} {'runs/s':>10} {'ns/run':>8} {'CPU ms/s':>9} {'ns per I/O':>11}")
total = 0
for pid, a in sorted(after.items(), key=lambda kv: kv[1].get("name", "")):
    b = before.get(pid, {})
    runs = a.get("run_cnt", 0) - b.get("run_cnt", 0)
    ns = a.get("run_time_ns", 0) - b.get("run_time_ns", 0)
    if runs <= 0:
        continue
    total += ns
    print(f"  {a.get('name', '?'):28} {runs / secs:10.0f} {ns / runs:8.0f} {ns / secs / 1e6:9.2f} {ns / ios:11.1f}")
print(f"  {'all':28} {'':10} {'':8} {total / secs / 1e6:9.2f} {total / ios:11.1f}"
      f"   ({100 * total / secs / 1e9:.2f} % of one CPU)")
PY
fi
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
