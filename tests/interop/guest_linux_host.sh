# Guest side of linux_host.sh: runs inside the QEMU guest as /host/cmd.sh (bash, cwd /host).
# linux_host.sh prepends the settings below; this file is not meant to be run on its own.
#   PORT     target TCP port            TADDR   target address as the guest sees it
#   NQN      subsystem NQN              DIGESTS "off on" (one connect per word; on = -g -G)
#   FIO_SIZE per fio job (64M)          TARGET  engine (nvmetune on the host, via 10.0.2.2)
#                                               | kernel (self-test: nvmet inside the guest)
#   CAP_PKTS frames the guest captures in kernel mode (the host captures in engine mode)
#   CONNECT_ARGS extra nvme connect arguments (e.g. --disable-sqflow), may be empty
# Writes /host/summary.txt (one line per fio job, FAIL lines) and /host/dmesg-nvme.txt.
set -uo pipefail
cd /host
. /host/lib-guest.sh

RC=0
SUMMARY=/host/summary.txt
: > "$SUMMARY"
fail() { echo "GUEST-FAIL: $*"; echo "FAIL: $*" >> "$SUMMARY"; RC=1; }
step() { echo; echo "=== $* ==="; }
dump_dmesg() {
  dmesg | grep -iE 'nvme|nvmet|tcp' > /host/dmesg-nvme.txt 2>/dev/null || true
}
finish() {
  step "guest dmesg (nvme lines)"
  dump_dmesg
  cat /host/dmesg-nvme.txt
  echo "GUEST-RESULT rc=$RC"
  exit "$RC"
}

find_ctrl() {  # find_ctrl NQN -> /dev/nvmeX of the live TCP controller of that subsystem
  local c
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] || continue
    [ "$(cat "$c/transport" 2>/dev/null)" = tcp ] || continue
    [ -c "/dev/$(basename "$c")" ] && { echo "/dev/$(basename "$c")"; return 0; }
  done
  return 1
}

wait_ns() {  # wait_ns NQN SECS -> /dev/nvmeXnY
  local i dev
  for ((i = 0; i < $2 * 4; i++)); do
    dev=$(find_ns "$1" 2> /dev/null) && { echo "$dev"; return 0; }
    sleep 0.25
  done
  return 1
}

run_fio() {  # run_fio DIGESTS BS DEV
  local name="randwrite-$2-dg$1" log="/host/fio-$2-dg$1.txt" frc
  step "fio $name on $3 (size $FIO_SIZE, iodepth 32, verify=crc32c)"
  T "fio-$name" fio --name="$name" --filename="$3" --rw=randwrite --bs="$2" --iodepth=32 \
    --ioengine=libaio --direct=1 --size="$FIO_SIZE" --verify=crc32c --do_verify=1 \
    --output-format=normal > "$log" 2>&1
  frc=$?
  cat "$log"
  local iops errl w r
  # "write: IOPS=760, BW=3041KiB/s (3114kB/s)(64.0MiB/21551msec); 0 zone resets" -> "write IOPS=760, BW=3041KiB/s"
  w=$(sed -nE 's/^[[:space:]]+write:[[:space:]]+(IOPS=[^,]+, BW=[^ ]+).*/write \1/p' "$log" | head -1)
  r=$(sed -nE 's/^[[:space:]]+read:[[:space:]]+(IOPS=[^,]+, BW=[^ ]+).*/verify-read \1/p' "$log" | head -1)
  iops="${w:-no write IOPS line} | ${r:-no read IOPS line}"
  errl=$(grep -E 'err=[[:space:]]*[0-9]+' "$log" | sed -E 's/^[[:space:]]*//; s/: pid=.*//' | head -1)
  echo "JOB digests=$1 bs=$2: ${iops:-no IOPS line}" >> "$SUMMARY"
  echo "ERR digests=$1 bs=$2: ${errl:-no err= line}" >> "$SUMMARY"
  [ "$frc" = 0 ] || fail "fio $name exited $frc"
  grep -qE 'err=[[:space:]]*0:' "$log" || fail "fio $name: no 'err= 0' line"
  if grep -qiE 'verify: bad|verify failed|crc32c.*mismatch|bad magic' "$log"; then fail "fio $name: verify errors"; fi
}

echo "guest: kernel $(uname -r), target=$TARGET $TADDR:$PORT nqn=$NQN digests='$DIGESTS' fio size=$FIO_SIZE"
T modprobe-nvme-tcp modprobe nvme-tcp || { fail "modprobe nvme-tcp"; finish; }

CAP_PID=""
guest_capture() {  # guest_capture NAME: (kernel mode) capture the next CAP_PKTS frames on lo
  [ "$TARGET" = kernel ] || return 0
  stop_capture
  tcpdump -i lo -n -s 0 -U -c "$CAP_PKTS" -w "/tmp/capture-$1.pcap" "tcp port $PORT" 2> "/tmp/tcpdump-$1.err" &
  CAP_PID=$!
  CAP_NAME=$1
  for ((i = 0; i < 40; i++)); do grep -q 'listening on' "/tmp/tcpdump-$1.err" 2>/dev/null && break; sleep 0.25; done
}
stop_capture() {
  [ -n "$CAP_PID" ] || return 0
  sleep 0.5
  kill -INT "$CAP_PID" 2>/dev/null; wait "$CAP_PID" 2>/dev/null
  echo "guest capture $CAP_NAME: $(grep -E 'captured|dropped' "/tmp/tcpdump-$CAP_NAME.err" | paste -sd, -)"
  cp "/tmp/capture-$CAP_NAME.pcap" "/host/capture-$CAP_NAME.pcap" || fail "copy guest capture"
  rm -f "/tmp/capture-$CAP_NAME.pcap"
  CAP_PID=""
}
if [ "$TARGET" = kernel ]; then
  step "self-test: kernel nvmet target on 127.0.0.1:$PORT (brd RAM disk, 256 MiB)"
  modprobe nvmet && modprobe nvmet-tcp && modprobe brd rd_nr=1 rd_size=262144 || { fail "modprobe nvmet/brd"; finish; }
  nvmet_subsys "$NQN" /dev/ram0 && nvmet_port 1 tcp 127.0.0.1 "$PORT" "$NQN" || { fail "nvmet configfs setup"; finish; }
fi
guest_capture discover

step "nvme discover -t tcp -a $TADDR -s $PORT"
if T discover nvme discover -t tcp -a "$TADDR" -s "$PORT" > /host/discover.txt 2>&1; then
  cat /host/discover.txt
  grep -qE "subnqn:[[:space:]]+$NQN([[:space:]]|\$)" /host/discover.txt || fail "discovery log does not list $NQN"
else
  cat /host/discover.txt
  fail "nvme discover failed"
fi

for d in $DIGESTS; do
  dargs=()
  # The digest run also disables SQ flow control, so the C2HData SUCCESS path (no CapsuleResp
  # after read data) is exercised with the real host too.
  [ "$d" = on ] && dargs=(-g -G --disable-sqflow)
  # shellcheck disable=SC2206
  [ -n "$CONNECT_ARGS" ] && dargs+=($CONNECT_ARGS)
  guest_capture "dg$d"
  step "digests $d: nvme connect -t tcp -a $TADDR -s $PORT -n $NQN ${dargs[*]}"
  if ! T "connect-dg$d" nvme connect -t tcp -a "$TADDR" -s "$PORT" -n "$NQN" "${dargs[@]}"; then
    fail "nvme connect (digests $d) failed"
    continue
  fi
  if ! dev=$(wait_ns "$NQN" 20); then
    fail "namespace of $NQN did not appear within 20 s (digests $d)"
    nvme list; nvme disconnect -n "$NQN"
    continue
  fi
  ctrl=$(find_ctrl "$NQN") || { fail "no controller device for $NQN"; ctrl=""; }
  echo "namespace: $dev  controller: $ctrl"

  step "nvme list"
  nvme list || fail "nvme list"
  if [ -n "$ctrl" ]; then
    step "nvme id-ctrl $ctrl"
    if nvme id-ctrl "$ctrl" > "/host/id-ctrl-dg$d.txt" 2>&1; then
      grep -E '^(vid|ssvid|sn|mn|fr|mdts|cntlid|ver|nn|sgls|ioccsz|iorcsz|maxcmd|kas|subnqn) ' "/host/id-ctrl-dg$d.txt"
      grep -qE "^subnqn[[:space:]]+:[[:space:]]+$NQN\$" "/host/id-ctrl-dg$d.txt" || fail "id-ctrl subnqn is not $NQN"
    else
      cat "/host/id-ctrl-dg$d.txt"; fail "nvme id-ctrl (digests $d)"
    fi
  fi
  step "nvme id-ns $dev"
  if nvme id-ns "$dev" > "/host/id-ns-dg$d.txt" 2>&1; then
    grep -E '^(nsze|ncap|nuse|nsfeat|nlbaf|flbas|nguid|eui64|lbaf +[0-9]+) ' "/host/id-ns-dg$d.txt"
  else
    cat "/host/id-ns-dg$d.txt"; fail "nvme id-ns (digests $d)"
  fi

  run_fio "$d" 4k "$dev"
  run_fio "$d" 128k "$dev"

  step "nvme disconnect -n $NQN"
  T "disconnect-dg$d" nvme disconnect -n "$NQN" || fail "nvme disconnect (digests $d)"
  for ((i = 0; i < 40; i++)); do find_ns "$NQN" > /dev/null 2>&1 || break; sleep 0.25; done
  find_ns "$NQN" > /dev/null 2>&1 && fail "namespace still present after disconnect (digests $d)"
done

stop_capture
finish
