#!/usr/bin/env bash
# `nvmetune experiment`: a two-cell experiment (two budget settings x one short workload) on an
# embedded engine runs end to end: both table rows with non-zero IOPS, a progress line per cell
# on stderr, the --out JSON with both cells; the same with rounds 2 gives median rows and both
# rounds per cell in the JSON; a bad file or bad rounds is exit 2 with the path named.
# Usage: experiment_cli_test.sh PATH/TO/nvmetune SOURCE_DIR
set -uo pipefail

bin=${1:?usage: experiment_cli_test.sh PATH/TO/nvmetune SOURCE_DIR}
src=${2:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

"$bin" experiment --help >"$work/help" 2>&1 || fail "experiment --help"
for w in --socket --out --rounds "Exit codes" contention; do grep -q -- "$w" "$work/help" || fail "--help lacks $w"; done

cat >"$work/two.json" <<'JSON'
{
  "name": "two-cells",
  "ramp": 0.3,
  "time": 1.5,
  "settle": 0.2,
  "settings": [
    {"name": "budgets-8", "budgets": {"recv_pdus": 8, "send_pdus": 8}},
    {"name": "budgets-64", "budgets": {"recv_pdus": 64, "send_pdus": 64}}
  ],
  "workloads": [{"name": "rr4k", "rw": "randread", "bs": "4k", "qd": 8}]
}
JSON
timeout 60 "$bin" experiment "$work/two.json" --out "$work/out.json" >"$work/table" 2>"$work/err"
rc=$?
[ "$rc" = 0 ] && pass "two-cell experiment exit 0" || fail "two-cell experiment exit $rc"
cat "$work/table"
for n in 1 2; do
  row=$(grep -E "^$n +budgets-" "$work/table")
  iops=$(awk '{print $5}' <<<"$row" | tr -d '*')
  if [ -n "$row" ] && awk -v v="${iops:-0}" 'BEGIN { exit !(v > 0) }'; then pass "row $n has IOPS $iops"
  else fail "row $n missing or zero IOPS: '$row'"; fi
done
[ "$(grep -c '^nvmetune experiment: \[[12]/2\] .*IOPS' "$work/err")" = 2 ] && pass "a progress line per cell" ||
  { fail "progress lines"; cat "$work/err"; }
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["cells"]
assert len(c) == 2, c
for x in c:
    assert x["status"] == "ok" and x["iops"] > 0 and x["lat_p99_ns"] >= x["lat_p50_ns"] > 0, x
    assert x["target_cpu_pct"] > 0 and x["engine_intervals"] > 0, x
assert sum("iops" in x["best"] for x in c) == 1
' "$work/out.json"; then pass "--out JSON has both cells"; else fail "--out JSON"; cat "$work/out.json"; fi

# Rounds 2, from the command line: the grid twice in the same order, medians in the table.
timeout 60 "$bin" experiment "$work/two.json" --rounds 2 --out "$work/out2.json" >"$work/table2" 2>"$work/err2"
rc=$?
[ "$rc" = 0 ] && pass "rounds 2 exit 0" || fail "rounds 2 exit $rc"
cat "$work/table2"
for n in 1 2; do
  row=$(grep -E "^$n +budgets-" "$work/table2")
  iops=$(awk '{print $5}' <<<"$row")  # the median, e.g. 338k
  if [ -n "$row" ] && awk -v v="${iops:-0}" 'BEGIN { exit !(v + 0 > 0) }'; then pass "rounds 2: row $n has median IOPS $iops"
  else fail "rounds 2: row $n missing or zero IOPS: '$row'"; fi
done
[ "$(grep -c '^nvmetune experiment: \[[1-4]/4\] round [12]/2: .*IOPS' "$work/err2")" = 4 ] && pass "a progress line per round" ||
  { fail "rounds 2 progress lines"; cat "$work/err2"; }
if python3 -c '
import json, statistics, sys
d = json.load(open(sys.argv[1]))
assert d["rounds"] == 2, d["rounds"]
for x in d["cells"]:
    r = x["rounds"]
    assert len(r) == 2 and all(y["status"] == "ok" and y["iops"] > 0 for y in r), r
    assert x["iops"] == statistics.median(y["iops"] for y in r), x
    assert x["iops_min"] <= x["iops"] <= x["iops_max"] and x["rounds_ok"] == 2, x
' "$work/out2.json"; then pass "--out JSON has 2 rounds per cell and their medians"; else fail "rounds 2 --out JSON"; cat "$work/out2.json"; fi

for bad in 0 '"x"'; do
  sed "s/\"time\": 1.5,/\"time\": 1.5, \"rounds\": $bad,/" "$work/two.json" >"$work/bad-rounds.json"
  "$bin" experiment "$work/bad-rounds.json" >"$work/out" 2>"$work/err"
  rc=$?
  [ "$rc" = 2 ] && grep -q '\$\.rounds' "$work/err" && pass "rounds $bad: exit 2 naming \$.rounds" ||
    fail "rounds $bad: exit $rc: $(cat "$work/err")"
done

echo '{"settings": [{"threading": {"mode": "sideways"}}], "workloads": [{"rw": "randread", "bs": "4q"}]}' >"$work/bad.json"
"$bin" experiment "$work/bad.json" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 2 ] && pass "bad file exit 2" || fail "bad file exit $rc"
grep -q 'settings\[0\].threading.mode' "$work/err" || fail "bad mode not named: $(cat "$work/err")"
grep -q 'workloads\[0\]' "$work/err" || fail "bad bs not named: $(cat "$work/err")"

# The shipped experiment file parses (not run here: it takes minutes).
"$bin" experiment "$src/experiments/seed-compare.json" --socket /nonexistent/sock >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 1 ] && pass "seed-compare.json is valid (exit 1: no engine at the socket)" || { fail "seed-compare.json: exit $rc"; cat "$work/err"; }
"$bin" experiment "$src/experiments/rps-steering.json" --socket /nonexistent/sock >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 1 ] && pass "rps-steering.json is valid (exit 1: no engine at the socket)" || { fail "rps-steering.json: exit $rc"; cat "$work/err"; }
echo '{"settings": [{"steering": {"rps": [{"device": "lo", "cpus": "0-x"}]}}], "workloads": [{"rw": "randread"}]}' >"$work/bad-steer.json"
"$bin" experiment "$work/bad-steer.json" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 2 ] && grep -q 'settings\[0\].steering.rps\[0\].cpus' "$work/err" && pass "bad steering named, exit 2" ||
  fail "bad steering: exit $rc: $(cat "$work/err")"

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all passed"
