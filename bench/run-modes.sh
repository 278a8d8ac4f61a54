#!/usr/bin/env bash
# Execution-mode benchmark: nvmetune serve (null backend) pinned to one CPU, nvmetune perf pinned
# to another, every accepted threading mode switched live over the control socket, modes
# alternated A B C A B C ... for ROUNDS rounds. Prints a table; never fails on the numbers.
# Usage: bench/run-modes.sh [PATH/TO/nvmetune]   (bench/README.md)
set -uo pipefail

bin=${1:-${NVMETUNE:-nvmetune}}
serve_bin=${NVMETUNE_SERVE:-$bin}          # the target's binary, if it must differ
rounds=${ROUNDS:-2}
time_s=${TIME:-5}
time_s=${time_s%.*}  # whole seconds
ramp_s=${RAMP:-1}
# A variant is MODE or MODE+MECHANISM (epoll | io_uring: how new connections read their socket).
modes_wanted=${MODES:-"bound poll unbound inline poll+io_uring bound+io_uring"}
target_cpu=${TARGET_CPU:-0}
perf_cpu=${PERF_CPU:-1}
stall_switches=${STALL_SWITCHES:-5}
out_dir=${OUT:-$(mktemp -d /tmp/nvmetune-bench.XXXXXX)}
mkdir -p "$out_dir"
command -v "$bin" >/dev/null || [ -x "$bin" ] || { echo "no nvmetune binary: $bin" >&2; exit 2; }

nqn=nqn.2026-12.io.nvmetune:bench
# shellcheck source=lib-target.sh
. "$(dirname "$0")/lib-target.sh"
start_bench_target "$serve_bin"
remote="trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn"

set_mode() {  # set_mode MODE[+MECHANISM]: live switch; 0 when the engine accepted it
  local mode=${1%%+*} mech=epoll
  [[ $1 == *+* ]] && mech=${1#*+}
  "$bin" ctl --socket "$sock" threading.set \
    "{\"mode\":\"$mode\",\"cpumask\":\"$target_cpu\",\"threads\":1,\"io_mechanism\":\"$mech\"}" \
    >"$out_dir/ctl.out" 2>"$out_dir/ctl.err"
}

modes=()
for m in $modes_wanted; do
  if set_mode "$m"; then modes+=("$m"); else echo "mode $m not accepted: $(head -c 300 "$out_dir/ctl.err")" >&2; fi
done
[ "${#modes[@]}" -gt 0 ] || { echo "no mode accepted" >&2; exit 1; }

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo nan; }  # utime + stime
hz=$(getconf CLK_TCK)
now() { date +%s.%N; }
wait_progress() {  # wait_progress FILE N PID: until FILE has N progress lines or PID is gone
  while [ "$(grep -c '^\[ *[0-9]*s\]' "$1" 2>/dev/null)" -lt "$2" ] && kill -0 "$3" 2>/dev/null; do sleep 0.1; done
}

workloads=("4k-randread-qd32:--rw randread --bs 4k --qd 32"
           "4k-randwrite-qd32:--rw randwrite --bs 4k --qd 32"
           "128k-read-qd16:--rw read --bs 128k --qd 16")

results=$out_dir/results.tsv
printf 'round\tmode\tworkload\tiops\tmibs\tp99_us\tmax_us\ttarget_cpu\tperf_cpu\n' >"$results"
echo "nvmetune bench: target CPU $target_cpu (pid $spid, port $port), perf CPU $perf_cpu, modes ${modes[*]}," \
     "$rounds rounds, ${time_s}s after ${ramp_s}s ramp; raw results in $out_dir"

for round in $(seq "$rounds"); do
  for m in "${modes[@]}"; do
    set_mode "$m" || { echo "switch to $m failed" >&2; continue; }
    sleep 0.2
    for w in "${workloads[@]}"; do
      name=${w%%:*}
      args=${w#*:}
      json=$out_dir/r$round-$m-$name.json
      # shellcheck disable=SC2086
      err=$out_dir/r$round-$m-$name.err
      taskset -c "$perf_cpu" "$bin" perf -r "$remote" $args --time "$time_s" --ramp "$ramp_s" --json \
        >"$json" 2>"$err" &
      ppid=$!
      # CPU window: from perf's 1st progress line to its (TIME-1)th, i.e. inside its measured
      # interval whatever the scheduling delays (needs TIME >= 3; else the CPU columns read nan).
      # Sleep through most of the wait first: polling forks, and forks steal CPU from the run.
      sleep "$(awk -v r="$ramp_s" 'BEGIN { print r + 0.8 }')"
      wait_progress "$err" 1 "$ppid"
      t0=$(now); st0=$(ticks "$spid"); pt0=$(ticks "$ppid")
      [ "$time_s" -gt 3 ] && sleep $((time_s - 3))
      wait_progress "$err" $((time_s - 1)) "$ppid"
      t1=$(now); st1=$(ticks "$spid"); pt1=$(ticks "$ppid")
      wait "$ppid"
      rc=$?
      python3 - "$json" "$round" "$m" "$name" "$rc" "$st0" "$st1" "$pt0" "$pt1" "$t0" "$t1" "$hz" >>"$results" <<'PY'
import json, sys
f, rnd, mode, name, rc, st0, st1, pt0, pt1, t0, t1, hz = sys.argv[1:]
el = float(t1) - float(t0)
tc = 100.0 * (float(st1) - float(st0)) / float(hz) / el  # nan when the process was gone
pc = 100.0 * (float(pt1) - float(pt0)) / float(hz) / el
try:
    j = json.load(open(f))["jobs"][0]
    d = j["read"] if j["read"]["total_ios"] else j["write"]
    iops, mibs = d["iops"], d["bw"] / 1024.0
    p99, mx = d["clat_ns"]["percentile"]["99.000000"] / 1e3, d["clat_ns"]["max"] / 1e3
except Exception:
    iops = mibs = p99 = mx = 0.0
print(f"{rnd}\t{mode}\t{name}\t{iops:.0f}\t{mibs:.1f}\t{p99:.1f}\t{mx:.1f}\t{tc:.0f}\t{pc:.0f}")
PY
      tail -1 "$results" | awk -F'\t' '{printf "  round %s %-14s %-18s %9s IOPS %8s MiB/s p99 %8sus  target %s%% perf %s%%\n", $1,$2,$3,$4,$5,$6,$8,$9}'
      [ "$rc" -eq 0 ] || { echo "  perf exit $rc:"; sed 's/^/  | /' "$err" | tail -3; }
    done
  done
done

# Switch stall: a 4k randread run during which the mode is switched $stall_switches times; the
# max latency perf saw, against the same run without switches.
stall_run() {  # stall_run FILE SWITCHES
  local file=$1 n=$2 dur=$((stall_switches + 2))
  set_mode "${modes[0]}"
  sleep 0.2
  taskset -c "$perf_cpu" "$bin" perf -r "$remote" --rw randread --bs 4k --qd 32 --time "$dur" --json \
    >"$file" 2>"$out_dir/perf.err" &
  local p=$!
  sleep 1
  local i
  for i in $(seq "$n"); do
    local next=${modes[$((i % ${#modes[@]}))]}
    [ "${#modes[@]}" -gt 1 ] || next=${modes[0]}
    set_mode "$next" || echo "  switch $i to $next failed: $(head -c 200 "$out_dir/ctl.err")" >&2
    sleep 1
  done
  wait "$p"
}
stall_run "$out_dir/stall-none.json" 0
stall_run "$out_dir/stall-switch.json" "$stall_switches"

python3 - "$results" "$out_dir/stall-none.json" "$out_dir/stall-switch.json" "$stall_switches" "${modes[*]}" <<'PY'
import json, statistics, sys
res, none_f, sw_f, nsw, modes = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(res)][1:]
cells = {}
for r in rows:
    cells.setdefault((r[2], r[1]), []).append(r)
workloads = list(dict.fromkeys(r[2] for r in rows))
print()
# target us/IO: the target's CPU time per I/O (its CPU% over the window / IOPS).
def us_per_io(r):
    return float(r[7]) * 1e4 / float(r[3]) if float(r[3]) > 0 else float("nan")
def median(v):
    v = [x for x in v if x == x]  # drop nan
    return statistics.median(v) if v else float("nan")
print(f"{'workload':<18} {'mode':<16} {'IOPS median':>11} {'IOPS min-max':>19} {'MiB/s':>8} {'p99 us':>8} {'target CPU%':>11} {'perf CPU%':>9} {'target us/IO':>12}")
for w in workloads:
    for m in modes.split():
        rs = cells.get((w, m))
        if not rs:
            continue
        iops = [float(r[3]) for r in rs]
        med = lambda i: median([float(r[i]) for r in rs])
        print(f"{w:<18} {m:<16} {statistics.median(iops):>11.0f} {min(iops):>9.0f}-{max(iops):<9.0f} {med(4):>8.1f} {med(5):>8.1f}"
              f" {med(7):>11.0f} {med(8):>9.0f} {median([us_per_io(r) for r in rs]):>12.2f}")
# io_uring against epoll in the same mode, round by round: the two ran back to back, so each
# round's ratio compares like with like on a machine whose speed drifts between minutes.
pairs = [(m, m.removesuffix("+io_uring")) for m in modes.split()
         if m.endswith("+io_uring") and m.removesuffix("+io_uring") in modes.split()]
if pairs:
    print()
    print(f"{'workload':<18} {'io_uring / epoll':<16} {'IOPS, per round: median (min-max)':>34} {'target us/IO, per round':>25}")
    for w in workloads:
        for u, e in pairs:
            byround = {r[0]: r for r in cells.get((w, e), [])}
            ratios = [(float(r[3]) / float(byround[r[0]][3]), us_per_io(r) / us_per_io(byround[r[0]]))
                      for r in cells.get((w, u), []) if r[0] in byround and float(byround[r[0]][3]) > 0]
            if not ratios:
                continue
            io = [x for x, _ in ratios]
            cpu = [y for _, y in ratios if y == y]
            cpus = f"{median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f})" if cpu else "-"
            print(f"{w:<18} {e:<16} {median(io):>19.2f} ({min(io):.2f}-{max(io):.2f}) {cpus:>25}")
print()
def load(f):
    try:
        return json.load(open(f))["jobs"][0]["read"]
    except Exception:
        return None
for label, f in (("no switch", none_f), (f"{nsw} switches", sw_f)):
    d = load(f)
    if d is None:
        print(f"switch stall ({label}): run failed"); continue
    c = d["clat_ns"]
    print(f"switch stall, 4k randread qd32, {label:<12}: max {c['max']/1e3:10.1f} us  p99.99 {c['percentile']['99.990000']/1e3:9.1f} us  "
          f"p99 {c['percentile']['99.000000']/1e3:8.1f} us  IOPS {d['iops']:.0f}")
PY
