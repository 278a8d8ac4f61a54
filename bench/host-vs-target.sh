#!/usr/bin/env bash
# The host's latency beside the engine's target latency and its engine-only figures, as issue
# "Latency as the hosts see it" tabulates them: nvmetune serve (bound, one worker) pinned to one
# CPU, recording to a fresh SQLite file, a 1 GiB RAM namespace of 4096-byte blocks written first;
# nvmetune perf on another CPU, 4k randread at qd1, qd32, and qd2 with `nvmetune hog` taking 80 %
# of the target's CPU. Prints, per load: the host's p50/p99/p99.9 (perf's own clat), the engine's
# target_read_latency, read_latency and queue_wait percentiles over the same run (db percentiles),
# and the mean share of each stage. Never fails on the numbers.
# Usage: bench/host-vs-target.sh [PATH/TO/nvmetune]
set -uo pipefail

bin=${1:-${NVMETUNE:-nvmetune}}
time_s=${TIME:-5}
target_cpu=${TARGET_CPU:-0}
perf_cpu=${PERF_CPU:-1}
loads=${LOADS:-"qd1 qd32 qd2+hog"}
out_dir=${OUT:-$(mktemp -d /tmp/nvmetune-host-vs-target.XXXXXX)}
nqn=nqn.2026-12.io.nvmetune:host-vs-target
command -v "$bin" >/dev/null || [ -x "$bin" ] || { echo "no nvmetune binary: $bin" >&2; exit 2; }

spid= hpid=
trap 'for p in $spid $hpid; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done' EXIT

printf '%-8s %-26s %-26s %-26s %-16s  %s\n' load "host p50/p99/p99.9 us" "target p50/p99/p99.9 us" \
  "engine read p50/p99/p99.9" "qwait p99/p99.9" "stage shares (us)"
for load in $loads; do
  qd=${load%%+*}; qd=${qd#qd}
  db=$out_dir/$load.db
  rm -f "$db"*
  cat >"$out_dir/config.json" <<JSON
{
  "listeners": [{"trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": "0"}],
  "subsystems": [{"nqn": "$nqn", "allow_any_host": true,
                  "namespaces": [{"nsid": 1, "backend": "ram", "size": "1GiB", "block_size": 4096}]}],
  "threading": {"mode": "bound", "cpumask": "$target_cpu", "threads": 1}
}
JSON
  taskset -c "$target_cpu" "$bin" serve --config "$out_dir/config.json" --no-control-socket --db "$db" \
    >"$out_dir/serve.out" 2>"$out_dir/serve.err" &
  spid=$!
  for _ in $(seq 300); do grep -qx "nvmetune: ready" "$out_dir/serve.out" 2>/dev/null && break; sleep 0.1; done
  t0=$(date +%s.%N)  # about the run's start (recording begins with serve)
  port=$(sed -n 's/^nvmetune: listening on tcp 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out_dir/serve.out" | head -1)
  [ -n "$port" ] || { echo "serve did not start" >&2; cat "$out_dir/serve.err" >&2; exit 1; }
  remote="trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn"
  taskset -c "$perf_cpu" "$bin" perf -r "$remote" --rw write --bs 1m --qd 8 --size 1g >/dev/null 2>&1
  sleep 1.5  # the write's intervals close; the measured window starts after them
  from=$(date +%s.%N)
  if [[ $load == *hog* ]]; then
    "$bin" hog --cpus "$target_cpu" --load 80 >/dev/null 2>&1 &
    hpid=$!
    sleep 0.5
  fi
  taskset -c "$perf_cpu" "$bin" perf -r "$remote" --rw randread --bs 4k --qd "$qd" --time "$time_s" --json \
    >"$out_dir/$load.json" 2>/dev/null
  to=$(date +%s.%N)
  [ -n "$hpid" ] && { kill "$hpid"; wait "$hpid" 2>/dev/null; hpid=; }
  sleep 1.2
  kill "$spid"; wait "$spid" 2>/dev/null; spid=
  run=$("$bin" db --db "$db" runs 2>/dev/null | awk 'NR>1 && $1 ~ /^[0-9]+$/ {r=$1} END {print r}')
  for src in target_read_latency target_write_latency target_other_latency read_latency queue_wait stage_scheduling stage_queue stage_receive backend_latency stage_send; do
    # Only the measured window: the stages also timed the 1 GiB write that filled the namespace.
    "$bin" db --db "$db" percentiles "$run" --source "$src" --from "$(echo "$from - $t0" | bc -l)" \
      >"$out_dir/$load.$src.txt" 2>/dev/null
  done
  python3 - "$out_dir" "$load" <<'PY'
import json, os, sys
d, load = sys.argv[1], sys.argv[2]
r = json.load(open(f"{d}/{load}.json"))["jobs"][0]["read"]["clat_ns"]
host = [r["percentile"].get(k, 0) / 1e3 for k in ("50.000000", "99.000000", "99.900000")]
def eng(src):  # `db percentiles` prints "key value" lines, in us
    f = f"{d}/{load}.{src}.txt"
    if not os.path.exists(f): return None
    kv = dict(l.split(None, 1) for l in open(f) if len(l.split()) == 2)
    return {k: float(v) for k, v in kv.items() if k != "source"} or None
def pcts(j, keys):
    return "/".join(f"{j.get(k, 0):.2f}" for k in keys) if j else "-"
t, e, q = eng("target_read_latency"), eng("read_latency"), eng("queue_wait")
n = sum((eng(s) or {}).get("count", 0) for s in ("target_read_latency", "target_write_latency", "target_other_latency"))
shares = []
for s in ("stage_scheduling", "stage_queue", "stage_receive", "backend_latency", "stage_send"):
    j = eng(s)
    shares.append(f"{(j['mean_us'] * j['count'] / n) if j and n else 0:.2f}")
print(f"{load:<8} {'/'.join(f'{x:.1f}' for x in host):<26} {pcts(t, ('p50_us','p99_us','p99.9_us')):<26} "
      f"{pcts(e, ('p50_us','p99_us','p99.9_us')):<26} {pcts(q, ('p99_us','p99.9_us')):<16}  "
      f"sched/queue/recv/backend/send {'/'.join(shares)}")
PY
done
echo "(files in $out_dir)"
