#!/bin/bash
# Interop with the real Linux kernel NVMe/TCP host (CTest: interop_linux_host).
#
# usage: linux_host.sh NVMETUNE_BIN SHARED_INTEROP_DIR
#        linux_host.sh --self-test-kernel-target [NVMETUNE_BIN] SHARED_INTEROP_DIR
#
# Starts `nvmetune serve` on a free 127.0.0.1 port (never 4420), captures that port on the
# host's lo with tcpdump, boots the QEMU guest from SHARED_INTEROP_DIR (README there) and in it:
# nvme discover -a 10.0.2.2; then per digest mode (off, on = -g -G) nvme connect, nvme list,
# id-ctrl, id-ns, fio randwrite verify=crc32c at bs 4k and 128k (iodepth 32, 64 MiB), nvme
# disconnect. Then SIGTERM to the engine (must exit 0), and tshark over the capture: no packet
# may be malformed or carry an error (header/data digests are verified too), and NVMe/TCP PDUs
# must have been dissected. Prints an "INTEROP SUMMARY" block. Exit 0 only if all of that held.
#
# --self-test-kernel-target validates this harness without nvmetune: the guest runs the Linux
# kernel target (nvmet-tcp on a brd RAM disk) on its own loopback and captures there (first
# $CAP_PKTS frames of each phase); the same guest steps and tshark checks run against it.
#
# env: NVMETUNE_GUEST_DIR  guest build (default /var/cache/nvmetune-guest; built when missing)
#      INTEROP_DIGESTS     digest modes, default "off on"      FIO_SIZE  per fio job, default 64M
#      GUEST_TIMEOUT       seconds for the guest run (900)     CAP_PKTS  self-test capture (6000)
#      INTEROP_CONNECT_ARGS extra `nvme connect` arguments, e.g. --disable-sqflow (lets the
#                          target use C2HData SUCCESS instead of a CapsuleResp)
#      INTEROP_IO_MECHANISM how the engine reads its sockets: epoll (default) or io_uring
#      KEEP_WORK=1         keep the work directory (it is always kept on failure)
set -euo pipefail

MODE=engine
if [ "${1:-}" = --self-test-kernel-target ]; then MODE=kernel; shift; fi
if [ "$MODE" = kernel ] && [ $# -eq 1 ]; then set -- - "$1"; fi
[ $# -eq 2 ] || { sed -n '2,25p' "$0" >&2; exit 2; }
BIN=$1
SHARED=$(cd "$2" && pwd) || { echo "interop: no shared interop dir $2" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
GUEST_DIR=${NVMETUNE_GUEST_DIR:-/var/cache/nvmetune-guest}
DIGESTS=${INTEROP_DIGESTS:-off on}
FIO_SIZE=${FIO_SIZE:-64M}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-900}
CAP_PKTS=${CAP_PKTS:-6000}
NQN=nqn.2026-12.io.nvmetune:interop

log() { echo "interop: $*"; }
die() { echo "interop: FAIL: $*" >&2; FAILED=1; exit 1; }

# ---------------------------------------------------------------- preconditions
[ "$(id -u)" = 0 ] || die "needs root (tcpdump on lo, QEMU guest build)"
for c in qemu-system-x86_64 tcpdump tshark capinfos mergecap ss flock; do
  command -v "$c" > /dev/null || die "'$c' not found: run scripts/setup"
done
for f in build-guest.sh run-guest.sh lib-guest.sh; do
  [ -f "$SHARED/$f" ] || die "$SHARED/$f missing (expected ../shared/interop)"
done
if [ "$MODE" = engine ]; then
  [ -x "$BIN" ] || die "nvmetune binary '$BIN' is not executable"
fi

WORK=$(mktemp -d /tmp/nvmetune-interop.XXXXXX)
SHARE=$WORK/share
mkdir -p "$SHARE"
ENGINE_PID="" TCPDUMP_PID="" FAILED=1
cleanup() {
  local rc=$?
  if [ -n "$ENGINE_PID" ] && kill -0 "$ENGINE_PID" 2> /dev/null; then kill -KILL "$ENGINE_PID" 2> /dev/null || true; fi
  if [ -n "$TCPDUMP_PID" ] && kill -0 "$TCPDUMP_PID" 2> /dev/null; then kill -INT "$TCPDUMP_PID" 2> /dev/null || true; fi
  if [ "$rc" != 0 ] || [ "$FAILED" != 0 ] || [ "${KEEP_WORK:-0}" = 1 ]; then
    echo "interop: work directory kept: $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- guest (built once per machine)
if [ ! -f "$GUEST_DIR/initramfs.cpio" ]; then
  mkdir -p "$GUEST_DIR"
  log "no guest in $GUEST_DIR: building it (build-guest.sh, a few minutes, once per machine)"
  (
    flock 9
    if [ ! -f "$GUEST_DIR/initramfs.cpio" ]; then bash "$SHARED/build-guest.sh" "$GUEST_DIR"; fi
  ) 9> "$GUEST_DIR/.build.lock" || die "build-guest.sh failed"
fi
[ -f "$GUEST_DIR/initramfs.cpio" ] || die "guest build produced no $GUEST_DIR/initramfs.cpio"

# ---------------------------------------------------------------- free port
pick_port() {  # below the ephemeral range, so no outgoing connection takes it meanwhile
  local p i
  for ((i = 0; i < 500; i++)); do
    p=$((20000 + RANDOM % 12000))
    [ "$p" = 4420 ] && continue
    [ -z "$(ss -Htan "( sport = :$p or dport = :$p )")" ] && { echo "$p"; return 0; }
  done
  return 1
}
PORT=$(pick_port) || die "no free TCP port found"
log "mode=$MODE port=$PORT nqn=$NQN digests='$DIGESTS' fio size=$FIO_SIZE work=$WORK"

# ---------------------------------------------------------------- engine + host capture
PCAP=$WORK/capture.pcap
if [ "$MODE" = engine ]; then
  CFG=$WORK/config.json
  cat > "$CFG" << EOF
{"listeners":[{"trtype":"tcp","traddr":"127.0.0.1","trsvcid":"$PORT"}],
 "subsystems":[{"nqn":"$NQN","allow_any_host":true,
                "namespaces":[{"nsid":1,"backend":"ram","size":"256MiB"}]}],
 "threading":{"io_mechanism":"${INTEROP_IO_MECHANISM:-epoll}"}}
EOF
  log "starting: $BIN serve --config $CFG"
  "$BIN" serve --config "$CFG" > "$WORK/engine.out" 2> "$WORK/engine.err" &
  ENGINE_PID=$!
  for ((i = 0; i < 300; i++)); do
    grep -q 'nvmetune: ready' "$WORK/engine.out" && break
    kill -0 "$ENGINE_PID" 2> /dev/null || break
    sleep 0.1
  done
  if ! grep -q 'nvmetune: ready' "$WORK/engine.out"; then
    echo "--- engine stdout"; cat "$WORK/engine.out"; echo "--- engine stderr"; cat "$WORK/engine.err"
    kill -0 "$ENGINE_PID" 2> /dev/null && die "engine did not print 'nvmetune: ready' within 30 s"
    wait "$ENGINE_PID" && erc=0 || erc=$?
    ENGINE_PID=""
    die "engine exited ($erc) before 'nvmetune: ready'"
  fi
  log "engine ready (pid $ENGINE_PID)"
  tcpdump -i lo -n -s 0 -B 131072 -U -w "$PCAP" "tcp port $PORT" 2> "$WORK/tcpdump.err" &
  TCPDUMP_PID=$!
  for ((i = 0; i < 100; i++)); do
    grep -q 'listening on' "$WORK/tcpdump.err" && break
    kill -0 "$TCPDUMP_PID" 2> /dev/null || { cat "$WORK/tcpdump.err"; die "tcpdump failed to start"; }
    sleep 0.1
  done
  TARGET=engine TADDR=10.0.2.2
else
  TARGET=kernel TADDR=127.0.0.1
fi

# ---------------------------------------------------------------- guest run
CMD=$WORK/cmd.sh
{
  echo "PORT=$PORT TADDR=$TADDR NQN=$NQN TARGET=$TARGET"
  echo "DIGESTS='$DIGESTS' FIO_SIZE=$FIO_SIZE CAP_PKTS=$CAP_PKTS CONNECT_ARGS='${INTEROP_CONNECT_ARGS:-}'"
  cat "$HERE/guest_linux_host.sh"
} > "$CMD"
log "booting guest (timeout ${GUEST_TIMEOUT}s): $SHARED/run-guest.sh -t $GUEST_TIMEOUT -s $SHARE"
GUEST_T0=$SECONDS
VM_DIR=$GUEST_DIR bash "$SHARED/run-guest.sh" -m 2048 -t "$GUEST_TIMEOUT" -s "$SHARE" "$CMD" && GRC=0 || GRC=$?
log "guest finished: rc=$GRC after $((SECONDS - GUEST_T0)) s"

# ---------------------------------------------------------------- engine stop + capture stop
ERC=0 CAP_DROPS=0
if [ "$MODE" = engine ]; then
  if kill -0 "$ENGINE_PID" 2> /dev/null; then
    kill -TERM "$ENGINE_PID"
    for ((i = 0; i < 200; i++)); do kill -0 "$ENGINE_PID" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$ENGINE_PID" 2> /dev/null; then
      log "engine still running 20 s after SIGTERM: killing it"
      kill -KILL "$ENGINE_PID" 2> /dev/null || true
    fi
    wait "$ENGINE_PID" && ERC=0 || ERC=$?
  else
    wait "$ENGINE_PID" && ERC=0 || ERC=$?
    log "engine had already exited (rc=$ERC) before SIGTERM"
    [ "$ERC" = 0 ] && ERC=255  # it must run until told to stop
  fi
  ENGINE_PID=""
  log "engine exit status after SIGTERM: $ERC"
  echo "--- engine stdout (last 40 lines)"; tail -n 40 "$WORK/engine.out"
  echo "--- engine stderr (last 40 lines)"; tail -n 40 "$WORK/engine.err"
  sleep 0.5
  kill -INT "$TCPDUMP_PID" 2> /dev/null || true
  wait "$TCPDUMP_PID" || true
  TCPDUMP_PID=""
  cat "$WORK/tcpdump.err"
  CAP_DROPS=$(sed -nE 's/^([0-9]+) packets dropped by kernel.*/\1/p' "$WORK/tcpdump.err" | head -1)
  CAP_DROPS=${CAP_DROPS:-0}
  [ "$CAP_DROPS" = 0 ] || log "WARNING: tcpdump dropped $CAP_DROPS frames: tshark cannot follow every stream"
else
  # one capture per phase (discover, each digest mode), each its first $CAP_PKTS frames
  caps=("$SHARE"/capture-*.pcap)
  if [ -f "${caps[0]}" ]; then
    mergecap -w "$PCAP" "${caps[@]}" || log "mergecap failed"
  fi
fi

# ---------------------------------------------------------------- tshark checks
# Out-of-order reassembly matters: loopback captures do show reordered segments, and without it
# tshark silently stops finding PDU boundaries in that stream (no malformed flag, just no PDUs).
TSHARK=(tshark -n -r "$PCAP" -d "tcp.port==$PORT,nvme-tcp" -o tcp.reassemble_out_of_order:TRUE
        -o nvme-tcp.check_hdgst:TRUE -o nvme-tcp.check_ddgst:TRUE -o tcp.check_checksum:FALSE)
BAD_FILTER='_ws.malformed || _ws.expert.severity == error || nvme-tcp.hdgst.status == 0 || nvme-tcp.ddgst.status == 0'
TSHARK_OK=0 NPDUS=0 NBAD=-1 PDU_TABLE="" HDGST_PDUS=0
if [ -s "$PCAP" ]; then
  log "capture: $(du -h "$PCAP" | cut -f1), $(capinfos -c -M "$PCAP" 2> /dev/null | awk -F': *' '/Number of packets/{print $2}') frames"
  T0=$SECONDS
  "${TSHARK[@]}" -Y "$BAD_FILTER" > "$WORK/tshark-bad.txt" 2> "$WORK/tshark.err" && trc=0 || trc=$?
  NBAD=$(grep -c . "$WORK/tshark-bad.txt" || true)
  if [ "$trc" != 0 ]; then
    log "tshark failed (rc=$trc):"; grep -v 'Running as user' "$WORK/tshark.err" || true
    NBAD=-1
  fi
  if [ "$NBAD" -gt 0 ]; then
    log "tshark: $NBAD malformed/error packets:"
    head -n 50 "$WORK/tshark-bad.txt"
    first=$(awk 'NR==1{print $1}' "$WORK/tshark-bad.txt")
    echo "--- tshark -V of the first bad frame ($first)"
    "${TSHARK[@]}" -V -Y "frame.number == $first" 2> /dev/null | sed -n '/NVM Express/,$p' | head -n 80
  fi
  "${TSHARK[@]}" -T fields -e nvme-tcp.type -e nvme-tcp.flags.pdu.hdgst > "$WORK/tshark-fields.txt" 2> /dev/null || true
  cut -f1 "$WORK/tshark-fields.txt" | tr ',' '\n' | grep -E '^[0-9]+$' | sort -n | uniq -c > "$WORK/pdu-types.txt" || true
  NPDUS=$(awk '{s += $1} END {print s + 0}' "$WORK/pdu-types.txt")
  PDU_TABLE=$(awk 'BEGIN { split("ICReq ICResp H2CTermReq C2HTermReq CapsuleCmd CapsuleResp H2CData C2HData ? R2T", n, " ") }
                   { printf "  %8d  %-11s (type %d)\n", $1, n[$2 + 1], $2 }' "$WORK/pdu-types.txt")
  HDGST_PDUS=$(cut -f2 "$WORK/tshark-fields.txt" | tr ',' '\n' | grep -Ec '^(1|True)$' || true)
  log "tshark: $((SECONDS - T0)) s, $NPDUS NVMe/TCP PDUs dissected, $HDGST_PDUS with header digest, $NBAD bad packets"
  echo "$PDU_TABLE"
  [ "$NBAD" = 0 ] && [ "$NPDUS" -gt 0 ] && TSHARK_OK=1
  [ "$NPDUS" -gt 0 ] || { log "tshark dissected no NVMe/TCP PDU:"; grep -v 'Running as user' "$WORK/tshark.err" || true; }
  # Every CapsuleResp answers a CapsuleCmd and every R2T is answered by H2CData: fewer means
  # tshark lost the PDU boundaries somewhere and did not check the rest of that stream.
  count() { awk -v t="$1" '$2 == t {print $1}' "$WORK/pdu-types.txt" | grep . || echo 0; }
  # (Not for the self-test's in-guest capture, which drops frames under emulation.)
  if [ "$MODE" = engine ] && [ "$CAP_DROPS" = 0 ]; then
    if [ "$(count 4)" -lt "$(count 5)" ] || [ "$(count 6)" -lt "$(count 9)" ]; then
      TSHARK_OK=0
      log "tshark: fewer CapsuleCmd than CapsuleResp or fewer H2CData than R2T: it lost PDU sync"
    fi
  fi
  if [[ " $DIGESTS " == *" on "* ]] && [ "$HDGST_PDUS" = 0 ]; then TSHARK_OK=0; log "tshark: digests were requested but no PDU carries a header digest"; fi
else
  log "no capture file (or empty): $PCAP"
fi

# ---------------------------------------------------------------- summary
echo
echo "==================== INTEROP SUMMARY ===================="
echo "target: $([ "$MODE" = engine ] && echo "nvmetune serve ($BIN)" || echo "Linux kernel nvmet (self-test)") on port $PORT, nqn $NQN"
echo "guest: Linux $(ls "$GUEST_DIR"/vmlinux-* 2> /dev/null | head -1 | sed 's/.*vmlinux-//') nvme-tcp host, rc=$GRC"
echo "digest modes: $DIGESTS"
if [ -f "$SHARE/summary.txt" ]; then sed 's/^/  /' "$SHARE/summary.txt"; else echo "  (no guest summary: guest did not get far)"; fi
[ "$MODE" = engine ] && echo "engine exit status after SIGTERM: $ERC"
echo "tshark: $NPDUS NVMe/TCP PDUs ($HDGST_PDUS with header digest), $NBAD malformed/error packets"
echo "$PDU_TABLE"
echo "========================================================="

RESULT=0
[ "$GRC" = 0 ] || { echo "interop: FAIL: guest steps failed (rc=$GRC)"; RESULT=1; }
if [ -f "$SHARE/summary.txt" ] && grep -q '^FAIL' "$SHARE/summary.txt"; then RESULT=1; fi
[ "$MODE" = kernel ] || [ "$ERC" = 0 ] || { echo "interop: FAIL: engine exit status $ERC after SIGTERM (want 0)"; RESULT=1; }
if [ "$MODE" = engine ] && [ "${INTEROP_IO_MECHANISM:-epoll}" = io_uring ] &&
   grep -q 'io_uring receive unavailable' "$WORK/engine.out" "$WORK/engine.err"; then
  echo "interop: FAIL: a queue fell back to epoll though io_uring was asked for"; RESULT=1
fi
[ "$TSHARK_OK" = 1 ] || { echo "interop: FAIL: tshark check (bad=$NBAD pdus=$NPDUS hdgst=$HDGST_PDUS)"; RESULT=1; }
nj=$(grep -c '^JOB' "$SHARE/summary.txt" 2> /dev/null || true)
want=$(( $(wc -w <<< "$DIGESTS") * 2 ))
[ "${nj:-0}" = "$want" ] || { echo "interop: FAIL: $nj of $want fio jobs ran"; RESULT=1; }
if [ "$RESULT" = 0 ]; then FAILED=0; echo "interop: PASS"; fi
exit "$RESULT"
