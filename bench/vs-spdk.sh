#!/usr/bin/env bash
# nvmetune vs SPDK nvmf_tgt on one target core, both driven by the same initiator
# (spdk_nvme_perf) on another core, over loopback TCP. Each target serves one 1 GiB RAM
# namespace of 4096-byte blocks (SPDK: malloc bdev; nvmetune: RAM backend, populated), written
# once before anything is read. Variants alternate A B C ... (C B A in even rounds); each measured
# run starts its target afresh. Prints a table (medians, min-max, ratios to SPDK posix, CPU µs
# and syscalls per I/O). Never fails on the numbers. Needs root (hugepages, perf).
# Usage: bench/vs-spdk.sh SPDK_DIR [PATH/TO/nvmetune]      (bench/README.md, "vs SPDK")
set -uo pipefail

spdk=${1:?usage: bench/vs-spdk.sh SPDK_DIR [nvmetune]}
bin=${2:-${NVMETUNE:-nvmetune}}
rounds=${ROUNDS:-3}
time_s=${TIME:-5}
ramp_s=${RAMP:-1}
target_cpu=${TARGET_CPU:-0}
perf_cpu=${PERF_CPU:-1}
port=${PORT:-4420}
size_mib=${SIZE_MIB:-1024}
# nvmetune variants are MODE or MODE+io_uring; spdk-posix and spdk-uring are SPDK's sock modules.
# bound~N sets threading.idle_poll_period_us to N (bound's workers poll up to N µs before
# sleeping, as long as the gaps between commands call for); bound~N:fixed always polls N µs
# (threading.idle_poll_adaptive false).
# MODE[+io_uring]@/path/to/nvmetune runs another build in that variant (A/B of two builds).
# defaults is `nvmetune serve` as a user starts it: no threading section, the namespace not
# populated (huge pages advised, faulted in by the write pass); the other variants are tuned
# (one worker on the target CPU, the namespace populated at start).
variants=${VARIANTS:-"spdk-posix spdk-uring bound bound+io_uring poll poll+io_uring"}
workloads=${WORKLOADS:-"4k-randread-qd32 4k-randread-qd1 4k-randwrite-qd32 128k-read-qd8"}
# The kernel split (syscalls per I/O, the time in each, and which CPU handled the host's
# command packets) needs the raw_syscalls and tcp_probe tracepoints, which slow every syscall and
# packet on the machine: it is taken in one extra run per variant and workload, after the
# measured rounds, with bpftrace.
count_syscalls=${SYSCALLS:-1}
# spdk_nvme_perf -L (software latency tracking: the avg and p99 columns) costs the initiator
# per I/O; LATENCY=0 drops it to see whether the initiator was the limit.
latency_flag=-L
[ "${LATENCY:-1}" = 0 ] && latency_flag=
out_dir=${OUT:-$(mktemp -d /tmp/nvmetune-vs-spdk.XXXXXX)}
mkdir -p "$out_dir"
nqn=nqn.2026-12.io.nvmetune:vs-spdk

die() { echo "vs-spdk: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (hugepages for SPDK, perf for the syscall counts)"
[ -x "$spdk/build/bin/nvmf_tgt" ] && [ -x "$spdk/build/bin/spdk_nvme_perf" ] ||
  die "no nvmf_tgt/spdk_nvme_perf under $spdk/build/bin (../shared/tools/build-spdk.sh builds them)"
command -v "$bin" >/dev/null || [ -x "$bin" ] || die "no nvmetune binary: $bin"
if [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then die "port $port is in use: PORT=N picks another"; fi
[ "$count_syscalls" = 0 ] || command -v bpftrace >/dev/null || die "bpftrace not found (apt install bpftrace) or SYSCALLS=0"
export LD_LIBRARY_PATH=$spdk/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rpc() { PATH=/usr/bin:$PATH python3 "$spdk/scripts/rpc.py" -t 10 "$@" >>"$out_dir/rpc.log" 2>&1; }
mask() { printf '0x%x' $((1 << $1)); }

# Hugepages for SPDK (the malloc bdev, both processes' pools): raised for the run, restored after.
old_huge=$(cat /proc/sys/vm/nr_hugepages)
want_huge=$(( (size_mib + 2048) / 2 ))
tpid=
cleanup() {
  if [ -n "$tpid" ]; then kill "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null; fi
  echo "$old_huge" >/proc/sys/vm/nr_hugepages
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ "$old_huge" -ge "$want_huge" ] || echo "$want_huge" >/proc/sys/vm/nr_hugepages
grep -q hugetlbfs /proc/mounts || { mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; } ||
  die "cannot mount hugetlbfs"
# bpftrace finds tracepoints in tracefs, which a fresh machine may not have mounted.
if [ "$count_syscalls" != 0 ] && [ ! -d /sys/kernel/tracing/events/raw_syscalls ]; then
  mount -t tracefs nodev /sys/kernel/tracing || die "cannot mount tracefs on /sys/kernel/tracing (or SYSCALLS=0)"
fi

wait_listening() {  # until the target listens on $port, or it died
  for _ in $(seq 200); do
    [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] && return 0
    kill -0 "$tpid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

start_spdk() {  # start_spdk posix|uring
  taskset -c "$target_cpu" "$spdk/build/bin/nvmf_tgt" -m "$(mask "$target_cpu")" -s $((size_mib + 1024)) \
    --wait-for-rpc >"$out_dir/nvmf_tgt.log" 2>&1 &
  tpid=$!
  for _ in $(seq 100); do rpc spdk_get_version && break; kill -0 "$tpid" 2>/dev/null || return 1; sleep 0.1; done
  rpc sock_set_default_impl -i "$1" && rpc framework_start_init && rpc nvmf_create_transport -t TCP &&
    rpc bdev_malloc_create -b M0 "$size_mib" 4096 &&
    rpc nvmf_create_subsystem "$nqn" -a -s NVMETUNE00000001 && rpc nvmf_subsystem_add_ns "$nqn" M0 &&
    rpc nvmf_subsystem_add_listener "$nqn" -t tcp -a 127.0.0.1 -s "$port" && wait_listening
}

start_nvmetune() {  # start_nvmetune MODE[~IDLE_US[:fixed]][+MECHANISM][@BINARY]
  local spec=${1%%@*} b=$bin mode mech=epoll threading idle= fixed= populate='"populate": true'
  [[ $1 == *@* ]] && b=${1#*@}
  mode=${spec%%+*}
  [[ $spec == *+* ]] && mech=${spec#*+}
  [[ $mode == *~* ]] && { idle=${mode#*~}; mode=${mode%%~*}; }
  [[ $idle == *:fixed ]] && { idle=${idle%:fixed}; fixed=1; }
  if [ "$mode" = defaults ]; then
    threading= populate='"populate": false'
  elif [ "$mode" = poll ]; then
    threading="{\"mode\": \"poll\", \"threads\": 1, \"first_core\": $target_cpu, \"io_mechanism\": \"$mech\"}"
  else
    threading="{\"mode\": \"$mode\", \"cpumask\": \"$target_cpu\", \"threads\": 1, \"io_mechanism\": \"$mech\""
    # Only when asked: builds before the setting refuse the key.
    [ -n "$idle" ] && threading+=", \"idle_poll_period_us\": $idle"
    [ -n "$fixed" ] && threading+=", \"idle_poll_adaptive\": false"
    threading+="}"
  fi
  cat >"$out_dir/nvmetune.json" <<JSON
{
  "listeners": [{"trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": "$port"}],
  "subsystems": [{"nqn": "$nqn", "allow_any_host": true,
                  "namespaces": [{"nsid": 1, "backend": "ram", "size": "${size_mib}MiB", "block_size": 4096,
                                  $populate}]}]${threading:+,
  \"threading\": $threading}
}
JSON
  taskset -c "$target_cpu" "$b" serve --config "$out_dir/nvmetune.json" \
    --control-socket "$out_dir/ctl.sock" >"$out_dir/serve.log" 2>&1 &
  tpid=$!
  wait_listening
}

stop_target() {
  [ -n "$tpid" ] || return 0
  kill "$tpid" 2>/dev/null
  for _ in $(seq 40); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$tpid" 2>/dev/null
  wait "$tpid" 2>/dev/null
  tpid=
}

perf_args() {  # perf_args WORKLOAD -> spdk_nvme_perf's -q -o -w
  case $1 in
    4k-randread-qd32) echo "-q 32 -o 4096 -w randread" ;;
    4k-randread-qd1) echo "-q 1 -o 4096 -w randread" ;;
    4k-randwrite-qd32) echo "-q 32 -o 4096 -w randwrite" ;;
    128k-read-qd8) echo "-q 8 -o 131072 -w read" ;;
    *) return 1 ;;
  esac
}

run_perf() {  # run_perf OUTFILE SECONDS ARGS...: spdk_nvme_perf on $perf_cpu against the target
  local out=$1 t=$2
  shift 2
  # shellcheck disable=SC2068
  taskset -c "$perf_cpu" "$spdk/build/bin/spdk_nvme_perf" -c "$(mask "$perf_cpu")" -t "$t" $@ \
    -r "trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" >"$out" 2>&1
}

# Every block written once, so reads read RAM the target owns (not the zero page), on both.
write_once() { run_perf "$out_dir/fill.txt" 60 -q 8 -o 131072 -w write -d $((size_mib * 8)); }
# The measured window is the run minus its ramp; CPU from /proc/PID/stat over the same window.
ticks() { awk '{print $14, $15}' "/proc/$1/stat" 2>/dev/null || echo "nan nan"; }

results=$out_dir/results.tsv
printf 'round\tvariant\tworkload\tiops\tmibs\tavg_us\tp99_us\tutime_s\tstime_s\twindow_s\tsyscalls\n' >"$results"
hz=$(getconf CLK_TCK)
echo "nvmetune vs SPDK: targets on CPU $target_cpu, spdk_nvme_perf on CPU $perf_cpu, port $port," \
     "${size_mib} MiB RAM namespaces (4096-byte blocks, written once), $rounds rounds of [$variants]," \
     "${time_s}s per run after ${ramp_s}s; raw results in $out_dir"

# trace_kernel PID SECONDS FILE: per thread and syscall, the calls and the nanoseconds spent in
# them; per CPU, the TCP segments the target's sockets received (tcp_probe runs where a segment
# is processed: on loopback that is the sender's CPU, unless the receiving socket was held by
# its owner, whose CPU then processes it from the socket's backlog when it lets go); their
# bytes (how many commands travel in one segment), the data segments the host received from the
# target, and pure ACKs either way.
trace_kernel() {
  timeout $(($2 + 30)) bpftrace -q -e "
tracepoint:raw_syscalls:sys_enter /pid == $1/ { @t[tid] = nsecs; @id[tid] = args->id; }
tracepoint:raw_syscalls:sys_exit /pid == $1 && @t[tid]/ {
  @ns[comm, @id[tid]] = sum(nsecs - @t[tid]); @n[comm, @id[tid]] = count(); delete(@t[tid]);
}
tracepoint:tcp:tcp_probe /args->sport == $port && args->data_len > 0/ {
  @seg[cpu == $target_cpu] = count(); @seg_bytes = sum(args->data_len);
}
tracepoint:tcp:tcp_probe /args->dport == $port && args->data_len > 0/ { @out = count(); @out_bytes = sum(args->data_len); }
tracepoint:tcp:tcp_probe /args->data_len == 0 && (args->sport == $port || args->dport == $port)/ { @acks[args->sport == $port] = count(); }
interval:s:$2 { exit(); }" >"$3" 2>&1
}

measure() {  # measure ROUND VARIANT WORKLOAD [syscalls]
  local round=$1 v=$2 w=$3 vf=${2//\//_} args t0 t1 sc=nan  # vf: a file name (@/path has slashes)
  local txt=$out_dir/r$1-$vf-$3.txt
  [ "$round" = syscalls ] && txt=$out_dir/syscalls-$vf-$w.txt
  args=$(perf_args "$w") || { echo "unknown workload $w" >&2; return 1; }
  # The traced run lasts longer: bpftrace takes a few seconds to attach before its window opens.
  local dur=$((time_s + ramp_s))
  [ "$round" = syscalls ] && dur=$((dur + 10))
  # shellcheck disable=SC2086
  run_perf "$txt" "$dur" $args $latency_flag &
  local p=$!
  sleep "$ramp_s"
  t0=$(ticks "$tpid")
  if [ "$round" = syscalls ]; then
    trace_kernel "$tpid" $((time_s - 1)) "$out_dir/split-$vf-$w.txt"
    sc=$(awk -F': ' '/^@n\[/ {s += $2} END {print s + 0}' "$out_dir/split-$vf-$w.txt")
  else
    sleep $((time_s - 1))
  fi
  t1=$(ticks "$tpid")
  wait "$p"
  python3 - "$txt" "$round" "$v" "$w" "$t0" "$t1" "$hz" $((time_s - 1)) "$sc" >>"$results" <<'PY'
import re, sys
f, rnd, v, w, t0, t1, hz, win, sc = sys.argv[1:]
text = open(f, errors="replace").read()
# spdk_nvme_perf: "Total : IOPS MiB/s Average min max" (latencies in us), and with -L the
# "Summary latency data" percentile lines of the one namespace.
m = re.search(r"^Total\s*:\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", text, re.M)
p99 = re.search(r"^\s*99\.00000%\s*:\s*([\d.]+)us", text, re.M)
iops, mibs, avg = (float(x) for x in m.groups()) if m else (0.0, 0.0, 0.0)
u0, s0 = t0.split(); u1, s1 = t1.split()
ut = (float(u1) - float(u0)) / float(hz); st = (float(s1) - float(s0)) / float(hz)
print(f"{rnd}\t{v}\t{w}\t{iops:.0f}\t{mibs:.1f}\t{avg:.1f}\t{float(p99.group(1)) if p99 else float('nan'):.1f}"
      f"\t{ut:.2f}\t{st:.2f}\t{win}\t{sc or 'nan'}")
PY
  tail -1 "$results" | awk -F'\t' '{printf "  %-8s %-15s %-18s %9s IOPS %8s MiB/s avg %7sus p99 %7sus\n", $1,$2,$3,$4,$5,$6,$7}'
}

run_variant() {  # run_variant ROUND VARIANT: a fresh target, written once, then every workload
  local round=$1 v=$2 w ok
  case $v in
    spdk-*) start_spdk "${v#spdk-}"; ok=$? ;;
    *) start_nvmetune "$v"; ok=$? ;;
  esac
  if [ "$ok" -ne 0 ]; then
    echo "  $v did not start (logs in $out_dir)" >&2
    stop_target
    return
  fi
  write_once || echo "  $v: write pass failed: $(tail -2 "$out_dir/fill.txt")" >&2
  for w in $workloads; do measure "$round" "$v" "$w"; done
  stop_target
}

# Even rounds run the variants in reverse order (A B C, C B A, ...): a variant that always ran
# right after another, or always first, would carry that slot's bias in every round.
reversed=$(printf '%s\n' $variants | tac | tr '\n' ' ')
for round in $(seq "$rounds"); do
  order=$variants
  [ $((round % 2)) = 0 ] && order=$reversed
  for v in $order; do run_variant "$round" "$v"; done
done
if [ "$count_syscalls" != 0 ]; then
  echo "kernel split (one extra run each, syscalls and TCP segments traced: not in the IOPS figures)"
  for v in $variants; do run_variant syscalls "$v"; done
fi

python3 - "$results" "$variants" "$workloads" "$out_dir" <<'PY'
import math, os, re, statistics, sys
res, variants, workloads, out_dir = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(res)][1:]
def cell(v, w, measured=True):
    return [r for r in rows if r[1] == v and r[2] == w and (r[0] != "syscalls") == measured and float(r[3]) > 0]
def med(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else float("nan")
base = "spdk-posix" if "spdk-posix" in variants else variants[0]
print()
# Two ratios to the base: of the medians, and the median of each round's own ratio. A round
# runs the variants back to back, so its ratio compares runs minutes apart at most; on a machine
# whose speed drifts between minutes that is the steadier figure (min-max shows the spread).
def per_round(v, w):
    b = {r[0]: float(r[3]) for r in cell(base, w)}
    return [float(r[3]) / b[r[0]] for r in cell(v, w) if b.get(r[0])]
print(f"{'workload':<18} {'variant':<15} {'IOPS median':>11} {'min-max':>17} {'MiB/s':>8} {'avg us':>7} {'p99 us':>7}"
      f" {'vs ' + base:>15} {'per round (min-max)':>20} {'CPU us/IO':>9} {'usr/sys':>9} {'syscalls/IO':>11}")
for w in workloads:
    b = med([float(r[3]) for r in cell(base, w)])
    for v in variants:
        rs = cell(v, w)
        if not rs:
            print(f"{w:<18} {v:<15} {'no result':>11}")
            continue
        iops = [float(r[3]) for r in rs]
        m = med(iops)
        # CPU per I/O over the measured window: (utime + stime) / (IOPS x window).
        cpu = [(float(r[7]) + float(r[8])) * 1e6 / (float(r[3]) * float(r[9])) for r in rs]
        usr = sum(float(r[7]) for r in rs) / max(sum(float(r[7]) + float(r[8]) for r in rs), 1e-9)
        sc = [float(r[10]) / (float(r[3]) * float(r[9])) for r in cell(v, w, False) if r[10] != "nan"]
        pr = per_round(v, w)
        prs = f"{med(pr):.2f} ({min(pr):.2f}-{max(pr):.2f})" if pr else "-"
        print(f"{w:<18} {v:<15} {m:>11.0f} {min(iops):>8.0f}-{max(iops):<8.0f} {med([float(r[4]) for r in rs]):>8.1f}"
              f" {med([float(r[5]) for r in rs]):>7.1f} {med([float(r[6]) for r in rs]):>7.1f} {m / b if b else float('nan'):>15.2f}"
              f" {prs:>20}"
              f" {med(cpu):>9.2f} {100 * usr:>4.0f}/{100 - 100 * usr:<4.0f} {med(sc):>11.2f}")

# The kernel split: per data-path thread (those making at least 0.01 syscalls per I/O; idle helper
# threads sleeping in futex are left out), the syscalls per I/O and the time in each; and where
# the host's command segments were processed (see trace_kernel).
names = {0: "read", 1: "write", 7: "poll", 19: "readv", 20: "writev", 44: "sendto", 45: "recvfrom",
         46: "sendmsg", 47: "recvmsg", 202: "futex", 232: "epoll_wait", 281: "epoll_pwait",
         426: "io_uring_enter", 441: "epoll_pwait2"}
printed = False
for w in workloads:
    for v in variants:
        f = os.path.join(out_dir, f"split-{v.replace('/', '_')}-{w}.txt")
        rs = cell(v, w, False)
        if not os.path.exists(f) or not rs:
            continue
        if not printed:
            print(f"\n{'workload':<18} {'variant':<15} {'thread':<14} kernel time per I/O by syscall"
                  f" (calls/IO, us/IO); the TCP segments each way")
            printed = True
        ios = float(rs[0][3]) * float(rs[0][9])
        text = open(f, errors="replace").read()
        ns = {(c, int(i)): int(x) for c, i, x in re.findall(r"^@ns\[(.+), (\d+)\]: (\d+)", text, re.M)}
        n = {(c, int(i)): int(x) for c, i, x in re.findall(r"^@n\[(.+), (\d+)\]: (\d+)", text, re.M)}
        seg = {int(k): int(x) for k, x in re.findall(r"^@seg\[(\d)\]: (\d+)", text, re.M)}
        acks = {int(k): int(x) for k, x in re.findall(r"^@acks\[(\d)\]: (\d+)", text, re.M)}
        one = lambda name: int((re.findall(rf"^@{name}: (\d+)", text, re.M) or ["0"])[0])
        for t in sorted({c for c, _ in n}):
            calls = {i: x for (c, i), x in n.items() if c == t}
            if sum(calls.values()) / ios < 0.01:
                continue
            parts = [f"{names.get(i, i)} {x / ios:.3f} {ns[(t, i)] / ios / 1000:.2f}"
                     for i, x in sorted(calls.items(), key=lambda kv: -ns[(t, kv[0])]) if x / ios >= 0.001]
            total = sum(ns[(t, i)] for i in calls) / ios / 1000
            print(f"{w:<18} {v:<15} {t:<14} {total:.2f} us/IO: " + ", ".join(parts))
        if seg:
            on = seg.get(1, 0) / max(sum(seg.values()), 1)
            nseg = sum(seg.values())
            print(f"{w:<18} {v:<15} {'':<14} host segments {nseg / ios:.3f}/IO of {one('seg_bytes') / nseg:.0f} B,"
                  f" {100 * on:.0f} % on the target CPU; target segments {one('out') / ios:.3f}/IO of"
                  f" {one('out_bytes') / max(one('out'), 1) / 1024:.1f} KiB; pure ACKs from host"
                  f" {acks.get(1, 0) / ios:.3f}/IO, from target {acks.get(0, 0) / ios:.3f}/IO")
PY
