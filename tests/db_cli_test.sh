#!/usr/bin/env bash
# `nvmetune serve --db` records a run (200 ms intervals, some perf I/O in the middle, a live
# budgets change); `nvmetune db runs/show/series/events/percentiles/export/compare/vacuum`
# read it back; error paths exit non-zero with a clear message.
# Usage: db_cli_test.sh PATH/TO/nvmetune
set -uo pipefail

bin=${1:?usage: db_cli_test.sh PATH/TO/nvmetune}
# shellcheck source=cli_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/cli_lib.sh"
db=$work/rec.db
nqn=nqn.2026-12.io.nvmetune:db-test

# serve_recording NOTE: one recorded run with I/O in the middle.
serve_recording() {
  start_serve serve --listen 127.0.0.1:0 --ram 16MiB --nqn "$nqn" --threads 1 --db "$db" --sample-interval 200 \
    --note "$1" --control-socket "$work/ctl.sock" || exit 1
  grep -q "^nvmetune: recording run [0-9]* to $db" "$work/serve.out" || fail "no 'recording run' line"
  "$bin" ctl --socket "$work/ctl.sock" budgets.set '{"recv_pdus": 16}' >/dev/null || fail "ctl budgets.set"
  "$bin" perf -r "trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" --rw randread --bs 4096 --qd 4 --time 1 \
    >"$work/perf.out" 2>&1 || fail "perf against serve --db"
  sleep 0.5
  kill -TERM "$pid"
  reap "$pid" || fail "serve --db exit code $?"
  grep -q "recorded run" "$work/serve.err" || fail "no 'recorded run' summary on stderr"
}

serve_recording first
expect_exit 0 "db runs" -- "$bin" db --db "$db" runs
grep -Eq '^1 .* first$' "$work/out" || { fail "db runs lacks run 1"; cat "$work/out"; }
intervals=$(awk '$1 == 1 {print $6}' "$work/out")
[ "${intervals:-0}" -ge 5 ] && pass "run 1 has $intervals intervals" || fail "run 1 has ${intervals:-0} intervals (< 5)"

expect_exit 0 "db show" -- "$bin" db --db "$db" show 1
grep -q "read_latency *n=[1-9]" "$work/out" || { fail "db show: no read latency"; cat "$work/out"; }

expect_exit 0 "db series (list)" -- "$bin" db --db "$db" series 1
grep -qx "iops" "$work/out" && grep -q "^commands{queue=" "$work/out" && grep -q "^busy_pct{worker=0}" "$work/out" \
  || { fail "series list"; cat "$work/out"; }
expect_exit 0 "db series --name iops --buckets 3" -- "$bin" db series 1 --db "$db" --name iops --buckets 3
lines=$(tail -n +2 "$work/out" | wc -l)
[ "$lines" -ge 1 ] && [ "$lines" -le 3 ] && pass "3 buckets at most ($lines)" || fail "bucket count $lines"
max=$(tail -n +2 "$work/out" | awk 'BEGIN{m=0} {if ($3 > m) m = $3} END {print int(m)}')
[ "$max" -gt 0 ] && pass "iops max $max > 0" || { fail "iops never above 0"; cat "$work/out"; }

expect_exit 0 "db events" -- "$bin" db --db "$db" events 1
grep -q " connect " "$work/out" && grep -q " disconnect " "$work/out" && grep -q " budgets " "$work/out" \
  || { fail "events lack connect/disconnect/budgets"; cat "$work/out"; }

expect_exit 0 "db percentiles" -- "$bin" db --db "$db" percentiles 1 --source read_latency
count=$(awk '$1 == "count" {print $2}' "$work/out")
perf_ios=$(grep -Eo 'ios=[0-9]+' "$work/perf.out" | head -1 | cut -d= -f2)
[ "${count:-0}" -gt 0 ] && pass "read_latency count $count (perf: ${perf_ios:-?} ios)" || { fail "no read latency"; cat "$work/out"; }
expect_exit 1 "db percentiles unknown source" -- "$bin" db --db "$db" percentiles 1 --source nope
grep -q "no nope histogram" "$work/err" || fail "unknown source message"

expect_exit 0 "db export csv" -- "$bin" db --db "$db" export 1 -o "$work/run.csv"
head -1 "$work/run.csv" | grep -qx "time_ns,name,labels,value" || fail "csv header"
grep -q ",read_latency.p99_ns,," "$work/run.csv" || fail "csv lacks read_latency.p99_ns"
csv_cmds=$(awk -F, '$2 == "commands" && $3 == "" {s += $4} END {print s + 0}' "$work/run.csv")
[ "$csv_cmds" -gt 0 ] && pass "csv commands sum $csv_cmds" || fail "csv commands sum 0"
expect_exit 0 "db export json" -- "$bin" db --db "$db" export 1 --format json -o "$work/run.json"
python3 - "$work/run.json" "$csv_cmds" <<'PY' && pass "json export parses and agrees with csv" || fail "json export"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["run"]["id"] == 1 and doc["run"]["note"] == "first"
assert doc["run"]["profile"]["subsystems"][0]["nqn"] == "nqn.2026-12.io.nvmetune:db-test"
cmds = [s for s in doc["series"] if s["name"] == "commands" and s["labels"] == {}][0]
assert int(sum(v for _, v in cmds["points"])) == int(sys.argv[2]), "csv and json disagree"
assert any(e["kind"] == "connect" for e in doc["events"])
assert any(h["source"] == "read_latency" and h["count"] > 0 for h in doc["histograms"])
PY

serve_recording second
expect_exit 0 "db compare" -- "$bin" db --db "$db" compare 1 2
grep -q "^iops " "$work/out" && grep -q "^read_latency.p99_ns " "$work/out" || { fail "compare rows"; cat "$work/out"; }

if command -v sqlite3 >/dev/null; then
  [ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] && pass "integrity_check" || fail "integrity_check"
  [ "$(sqlite3 "$db" 'PRAGMA journal_mode')" = wal ] && pass "WAL mode" || fail "not WAL"
fi

# Errors: no such run, no database, garbage file, newer schema; all non-zero with a message.
expect_exit 1 "db show 99" -- "$bin" db --db "$db" show 99
grep -q "no run 99" "$work/err" || fail "no-run message"
expect_exit 1 "db runs on a missing file" -- "$bin" db --db "$work/none.db" runs
grep -q "no such database" "$work/err" || fail "missing-db message"
[ ! -e "$work/none.db" ] && pass "db did not create a file" || fail "db created $work/none.db"
head -c 10000 /dev/urandom >"$work/junk.db"
expect_exit 1 "db runs on garbage" -- "$bin" db --db "$work/junk.db" runs
grep -q "not an SQLite database" "$work/err" || { fail "garbage message"; cat "$work/err"; }
if command -v sqlite3 >/dev/null; then
  cp "$db" "$work/newer.db"
  sqlite3 "$work/newer.db" 'PRAGMA user_version = 999'
  expect_exit 1 "db runs on a newer schema" -- "$bin" db --db "$work/newer.db" runs
  grep -q "newer" "$work/err" || fail "newer-schema message"
  expect_exit 1 "serve --db on a newer schema" -- "$bin" serve --listen 127.0.0.1:0 --ram 1MiB --no-control-socket \
    --db "$work/newer.db"
fi
expect_exit 2 "db vacuum --max-age bogus" -- "$bin" db --db "$db" vacuum --max-age 3 weeks
expect_exit 2 "db without subcommand" -- "$bin" db --db "$db"

# Retention: both runs ended; a 1-byte budget deletes them, and the file shrinks.
expect_exit 0 "db vacuum --max-size 1" -- "$bin" db --db "$db" vacuum --max-size 1
grep -q "deleted 2 run(s)" "$work/out" || { fail "vacuum deleted"; cat "$work/out"; }
"$bin" db --db "$db" runs >"$work/out"
[ "$(wc -l <"$work/out")" -eq 1 ] && pass "no runs left" || fail "runs left after vacuum"

finish
