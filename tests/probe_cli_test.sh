#!/usr/bin/env bash
# `nvmetune probe`: standalone runs print bcc-style histograms; list/start/stop against
# `nvmetune serve`, whose snapshots then carry the probes' histograms (usdtlat counts the
# engine's own commands); usage errors; as nobody, the documented message and exit code 3.
# Usage: probe_cli_test.sh PATH/TO/nvmetune   (needs root, as CI runs)
set -uo pipefail

bin=${1:?usage: probe_cli_test.sh PATH/TO/nvmetune}
# shellcheck source=cli_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/cli_lib.sh"
nqn=nqn.2026-12.io.nvmetune:probe-test
sock=$work/ctl.sock

expect_exit 2 "unknown probe" -- "$bin" probe nope 1 1
expect_grep "$work/err" "unknown probe \"nope\"" "unknown probe names the probes"
expect_exit 2 "filter on a probe without one" -- "$bin" probe irqload --filter x 1 1
expect_exit 2 "bad interval" -- "$bin" probe runqlat abc

expect_exit 0 "probe --help" -- "$bin" probe --help
expect_grep "$work/out" "^  biolat +block I/O in the driver: block_rq_issue -> block_rq_complete" "help: what biolat measures"

# Standalone: runqlat over all processes for 2 intervals of 0.3 s (something always runs).
expect_exit 0 "probe runqlat 0.3 2" -- "$bin" probe runqlat 0.3 2
expect_grep "$work/out" "^ +usecs +: count +distribution" "bcc header"
expect_grep "$work/out" "^ +[0-9]+ -> [0-9]+ +: [0-9]+ +\|\*" "bcc rows"

# Unprivileged: a clear message naming what is missing and exit 3, nothing else.
cp "$bin" "$work/nvmetune" && chmod 755 "$work" "$work/nvmetune"
expect_exit 3 "probe runqlat as nobody" -- setpriv --reuid=65534 --regid=65534 --clear-groups "$work/nvmetune" probe runqlat 1 1
expect_grep "$work/err" "needs root or CAP_BPF\+CAP_PERFMON.*lacks CAP_BPF and CAP_PERFMON" "names the missing capabilities"

start_serve serve --listen 127.0.0.1:0 --ram 16MiB --nqn "$nqn" --threads 1 --sample-interval 200 \
  --control-socket "$sock" --db "$work/rec.db" || { finish; }
expect_exit 0 "probe list" -- "$bin" probe list --socket "$sock"
expect_grep "$work/out" "^runqlat +yes +no" "runqlat available, not running"
expect_grep "$work/out" "^usdtlat +yes +no" "usdtlat available, not running"
# Each probe says in one line what it measures, from which event to which (the catalog's text).
expect_grep "$work/out" "^PROBE +AVAILABLE +RUNNING +MEASURES" "list: a MEASURES column"
expect_grep "$work/out" "^runqlat +yes +no +run-queue wait .*enqueue -> switch-in, schedstat run_delay" "list: what runqlat measures"
expect_grep "$work/out" "^wqlat +yes +no +.*workqueue_queue_work -> workqueue_execute_start" "list: what wqlat measures"
expect_exit 2 "probe start without a name" -- "$bin" probe start --socket "$sock"
expect_exit 1 "probe start unknown" -- "$bin" probe start nope --socket "$sock"
expect_grep "$work/err" "unknown probe" "start unknown: message"
expect_exit 0 "probe start runqlat" -- "$bin" probe start runqlat --socket "$sock"
expect_exit 0 "probe start usdtlat" -- "$bin" probe start usdtlat --socket "$sock"
expect_exit 0 "probe start socklat" -- "$bin" probe start socklat --socket "$sock"
expect_exit 0 "probe list (running)" -- "$bin" probe list --socket "$sock"
expect_grep "$work/out" "^usdtlat +yes +yes" "usdtlat running"
"$bin" perf -r "trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" --rw randread --bs 4096 --qd 4 --time 2 \
  >"$work/perf.out" 2>&1 &
perf_pid=$!
pids+=("$perf_pid")
sleep 1.2  # a snapshot closed in the middle of the I/O
expect_exit 0 "stats.get" -- "$bin" ctl --socket "$sock" stats.get
reap "$perf_pid" || fail "perf against serve"
python3 - "$work/out" <<'PY' || fail "snapshot probes"
import json, sys
s = json.load(open(sys.argv[1]))
probes = {(p["source"], p["labels"]): p["hist"]["count"] for p in s["probes"]}
assert ("runqlat", "") in probes, probes
assert any(src == "runqlat" and "comm=nvmt" in l for src, l in probes), "no per-thread runqlat of the engine"
assert probes.get(("socklat", "syscall=sendmsg"), 0) > 0, probes
# usdtlat timed the engine's commands in the same interval the engine counted them.
usdt, engine = probes.get(("usdtlat", "point=command"), 0), s["total"]["commands"]
assert engine > 0 and abs(usdt - engine) <= 0.2 * engine, (usdt, engine)
print("ok: snapshot carries", len(probes), "probe histograms,", len(s["probe_counters"]),
      "counters; usdtlat", usdt, "commands, engine", engine)
PY
expect_exit 0 "probe stop usdtlat" -- "$bin" probe stop usdtlat --socket "$sock"
expect_exit 0 "events" -- "$bin" ctl --socket "$sock" events.get
expect_grep "$work/out" "probe_start" "probe_start event"
expect_grep "$work/out" "probe_stop" "probe_stop event"
kill -TERM "$pid"
reap "$pid" || fail "serve exit code $?"
# Stored beside the engine's histograms, shown and exported like them.
expect_exit 0 "db show" -- "$bin" db --db "$work/rec.db" show 1
expect_grep "$work/out" "^  probe runqlat +n=[1-9]" "db show: runqlat total"
expect_exit 0 "db percentiles usdtlat" -- "$bin" db --db "$work/rec.db" percentiles 1 --source usdtlat --labels point=command
expect_grep "$work/out" "^count [1-9]" "db percentiles: usdtlat command latency"
expect_exit 0 "db export" -- "$bin" db --db "$work/rec.db" export 1 -o "$work/run.csv"
expect_grep "$work/run.csv" ",runqlat.p99_ns,\"comm=" "csv: per-thread runqlat"
expect_grep "$work/run.csv" ",syscall_count,syscall=sendmsg," "csv: socklat counter"
finish
