#!/usr/bin/env bash
# The target's user-space cost per I/O, by function: nvmetune serve runs under valgrind's
# callgrind (instructions executed, exact and repeatable) while `nvmetune perf` drives it, and
# the table divides each function's instructions by the I/Os the target completed.
#
# Why instructions: these machines are PVM guests without a PMU (perf record puts every
# cpu-clock sample on pvm_irq_enable), and IOPS move 40 % from one minute to the next. An
# instruction count does not move with the noise, so it shows a change to the data path that
# is too small to see in IOPS. It says nothing about the kernel's share (~75 % of the target's
# CPU at 4k) or about cache misses: confirm a change with vs-spdk.sh or run-modes.sh.
#
# Usage: bench/user-cost.sh [PATH/TO/nvmetune]          (bench/README.md, "User-space cost")
# Env: MODE [bound] (threading mode), MECH [epoll|io_uring], RW [randread], BS [4k], QD [32],
#      TIME [10] s of load (the target runs ~30x slower under callgrind), TOP [25] functions,
#      PORT [4460], TARGET_CPU [0], PERF_CPU [1], OUT [a new /tmp/nvmetune-user-cost.XXXXXX].
set -uo pipefail

bin=${1:-${NVMETUNE:-nvmetune}}
mode=${MODE:-bound}
mech=${MECH:-epoll}
rw=${RW:-randread}
bs=${BS:-4k}
qd=${QD:-32}
time_s=${TIME:-10}
top=${TOP:-25}
port=${PORT:-4460}
target_cpu=${TARGET_CPU:-0}
perf_cpu=${PERF_CPU:-1}
out_dir=${OUT:-$(mktemp -d /tmp/nvmetune-user-cost.XXXXXX)}
nqn=nqn.2026-12.io.nvmetune:user-cost

die() { echo "user-cost: $*" >&2; exit 1; }
command -v valgrind >/dev/null || die "valgrind not found (apt install valgrind)"
command -v "$bin" >/dev/null || [ -x "$bin" ] || die "no nvmetune binary at $bin"
[ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] || die "port $port is busy (PORT=...)"
mkdir -p "$out_dir"

cat >"$out_dir/config.json" <<JSON
{
  "listeners": [{"trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": "$port"}],
  "subsystems": [{"nqn": "$nqn", "allow_any_host": true,
                  "namespaces": [{"nsid": 1, "backend": "ram", "size": "256MiB", "block_size": 4096,
                                  "populate": true}]}],
  "threading": {"mode": "$mode", "cpumask": "$target_cpu", "threads": 1, "io_mechanism": "$mech"}
}
JSON

vpid=
trap 'if [ -n "$vpid" ]; then kill -INT "$vpid" 2>/dev/null; wait "$vpid" 2>/dev/null; fi' EXIT
# Collection starts once the target is ready: start-up (populating the namespace, loading
# libraries) is not the data path.
taskset -c "$target_cpu" valgrind --tool=callgrind --instr-atstart=no \
  --callgrind-out-file="$out_dir/callgrind.out" \
  "$bin" serve --config "$out_dir/config.json" --control-socket "$out_dir/ctl.sock" \
  >"$out_dir/serve.out" 2>"$out_dir/serve.err" &
vpid=$!
for _ in $(seq 600); do
  grep -qx "nvmetune: ready" "$out_dir/serve.out" 2>/dev/null && break
  kill -0 "$vpid" 2>/dev/null || die "the target did not start: $(tail -3 "$out_dir/serve.err")"
  sleep 0.1
done
callgrind_control -i on "$vpid" >/dev/null || die "callgrind_control could not switch the instrumentation on"
echo "target under callgrind ($mode, $mech); $rw $bs qd$qd for ${time_s}s from CPU $perf_cpu ..."
taskset -c "$perf_cpu" "$bin" perf -r "trtype:tcp traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" \
  --rw "$rw" --bs "$bs" --qd "$qd" --time "$time_s" --json >"$out_dir/perf.json" 2>"$out_dir/perf.err" ||
  die "perf failed: $(tail -3 "$out_dir/perf.err")"
kill -INT "$vpid"
wait "$vpid" 2>/dev/null
vpid=

# I/Os the target completed: calls into TcpQueue::complete (through its TransportQueue thunk).
callgrind_annotate --tree=caller "$out_dir/callgrind.out" >"$out_dir/tree.txt" 2>/dev/null
callgrind_annotate "$out_dir/callgrind.out" >"$out_dir/flat.txt" 2>/dev/null
python3 - "$out_dir" "$top" <<'PY'
import re, sys
out, top = sys.argv[1], int(sys.argv[2])
tree = open(f"{out}/tree.txt").read()
ios = 0
for block in tree.split("\n\n"):  # a block: its callers (<), the function (*), its callees (>)
    if re.search(r"^\s*[\d,]+ \(.*\)\s+\*\s+\S*:tcp::TcpQueue::complete\(core::Request&\)", block, re.M):
        ios += sum(int(n.replace(",", "")) for n in re.findall(r"^\s*[\d,]+ \(.*\)\s+<.*\(([\d,]+)x\)", block, re.M))
flat = open(f"{out}/flat.txt").read()
total = int(re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", flat, re.M).group(1).replace(",", ""))
if ios == 0:
    sys.exit("user-cost: the target completed no I/O")
print(f"{ios} I/Os, {total / ios:.0f} user-space instructions per I/O (whole process, from ready to exit)")
print(f"{'instr/IO':>9}  {'share':>6}  function")
rows = re.findall(r"^\s*([\d,]+) \(\s*([\d.]+)%\)\s+(\S.*?)\s*(?:\[.*\])?$", flat.split("file:function", 1)[1], re.M)
for ir, pct, fn in rows[:top]:
    fn = re.sub(r"^\?\?\?:|^\S+\.[cS]:", "", fn)
    fn = re.sub(r"\(.*", "()", fn)
    print(f"{int(ir.replace(',', '')) / ios:9.1f}  {float(pct):5.1f}%  {fn}")
PY
echo "raw: $out_dir (callgrind.out: callgrind_annotate --auto=yes on a -g build shows lines)"
