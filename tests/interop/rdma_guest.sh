#!/bin/bash
# NVMe/RDMA interop (issue 13): our engine and the Linux kernel nvme-rdma host, both inside the
# QEMU guest (../shared/interop), over soft-RoCE (rdma_rxe on the guest's eth0, 10.0.2.15).
# These machines have no RDMA device and no RDMA kernel stack; the guest has both.
#   usage: rdma_guest.sh NVMETUNE_BINARY SHARED_INTEROP_DIR
# In the guest: rxe link, `nvmetune serve` with an rdma listener, nvme discover -t rdma,
# nvme connect -t rdma, fio randwrite + verify crc32c at 4k and 128k (iodepth 32), a live mode
# switch (bound -> poll) during a third fio, fio again in poll mode, nvme list-subsys, disconnect;
# the engine's pinned memory (VmPin) printed. Then a second serve with use_srq, comp_vector 0 and
# a 1 MiB data pool (commands wait for buffers): fio 4k and 128k verify, zero errors.
# nvmetune perf -r 'trtype:rdma ...' (its NVMe/RDMA host) runs randwrite --verify at 4k and 128k
# against the kernel's nvmet-rdma target and against ours: PERF lines, 0 mismatches.
# Env: RDMA_FIO_SIZE (16M per job: the guest is emulated, TCG), RDMA_SRQ_FIO_SIZE (8M),
#   GUEST_TIMEOUT (default 420),
#   KEEP_WORK=1 keeps the work directory.
# Exit: 0 pass, 1 fail, 77 skipped (no root / QEMU / guest).
set -uo pipefail

[ $# -eq 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
NAME=rdma-guest
GUEST_TIMEOUT=${GUEST_TIMEOUT:-420}
. "$(dirname "$0")/guest_preflight.sh"
for f in run-guest.sh lib-guest.sh stage-binary.sh; do
  [ -f "$SHARED/$f" ] || { log "$SHARED/$f missing: skipped"; exit $SKIP; }
done
[ -f "$GUEST_DIR/initramfs.cpio" ] || { log "no guest in $GUEST_DIR (build-guest.sh): skipped"; exit $SKIP; }

WORK=$(mktemp -d /tmp/nvmetune-rdma-guest.XXXXXX)
[ -n "${KEEP_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
SHARE=$WORK/share
mkdir -p "$SHARE"
bash "$SHARED/stage-binary.sh" "$BIN" "$SHARE" || { log "FAIL: stage-binary.sh"; exit 1; }
echo "FIO_SIZE=${RDMA_FIO_SIZE:-16M} SRQ_FIO_SIZE=${RDMA_SRQ_FIO_SIZE:-8M}" > "$WORK/cmd.sh"
cat >> "$WORK/cmd.sh" << 'GUEST_CMD_END'
set -uo pipefail
. /host/lib-guest.sh
NQN=nqn.2026-12.io.nvmetune:rdma
ADDR=10.0.2.15 PORT=4430
echo "GUEST-UP kernel $(uname -r)"
fail() { echo "GUEST-FAIL $*"; tail -20 /tmp/serve.err 2>/dev/null | sed 's/^/SERVE-ERR| /'; exit 3; }
modprobe rdma_rxe && modprobe rdma_ucm && modprobe nvme-rdma || fail "modprobe"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add"
rdma link show | sed 's/^/RDMA-LINK| /'
# nvmetune perf's NVMe/RDMA host: randwrite 4k and 128k (qd 8, 2 s) with --verify against a target.
perf_rdma() {  # perf_rdma LABEL PORT NQN BS
  local out=/tmp/perf-$1-$4.txt t0; t0=$(now)
  /host/run nvmetune perf -r "trtype:rdma traddr:$ADDR trsvcid:$2 subnqn:$3" --rw randwrite --bs $4 --qd 8 \
    --time 2 --verify > $out 2>&1
  local rc=$?
  sed 's/^/PERF-'$1'| /' $out
  echo "PERF $1 bs=$4 rc=$rc $(grep -oE 'IOPS=[^,]+, BW=[^ ]+' $out | head -1)" \
    "$(grep -oE '[0-9]+ block reads checked, [0-9]+ mismatches' $out | head -1)" \
    "$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1fs", b-a}')"
  [ $rc = 0 ] && grep -qE 'block reads checked, 0 mismatches' $out || fail "nvmetune perf over rdma: $1 bs=$4"
}
# The kernel's nvmet-rdma target (a 64 MiB brd RAM disk), driven by nvmetune perf.
KNQN=nqn.2026-12.io.nvmetune:kernel-rdma
modprobe nvmet-rdma && modprobe brd rd_nr=1 rd_size=65536 || fail "modprobe nvmet-rdma brd"
nvmet_subsys $KNQN /dev/ram0 && nvmet_port 1 rdma $ADDR 4420 $KNQN || fail "nvmet-rdma configfs"
perf_rdma kernel 4420 $KNQN 4k
perf_rdma kernel 4420 $KNQN 128k
start_serve() {  # start_serve RDMA_SECTION_JSON TCP_SECTION_JSON
  printf '%s\n' \
    '{"listeners":[{"trtype":"rdma","traddr":"'$ADDR'","trsvcid":"'$PORT'"},' \
    '              {"trtype":"tcp","traddr":"127.0.0.1","trsvcid":"4431"}],' \
    ' "subsystems":[{"nqn":"'$NQN'","allow_any_host":true,' \
    '                "namespaces":[{"nsid":1,"backend":"ram","size":"128MiB"}]}],' \
    ' "tcp":'"$2"', "rdma":'"$1"',' \
    ' "threading":{"mode":"bound"}}' > /tmp/config.json
  /host/run nvmetune serve --config /tmp/config.json --control-socket /tmp/ctl.sock > /tmp/serve.out 2> /tmp/serve.err &
  sp=$!
  for _ in $(seq 300); do grep -q '^nvmetune: ready' /tmp/serve.out && break; kill -0 $sp 2>/dev/null || break; sleep 0.1; done
  sed 's/^/SERVE| /' /tmp/serve.out
  grep -q '^nvmetune: ready' /tmp/serve.out || fail "serve did not start"
  grep -q "listening on rdma $ADDR:$PORT" /tmp/serve.out || fail "no rdma listener"
}
connect() {
  T connect nvme connect -t rdma -a $ADDR -s $PORT -n $NQN || fail "nvme connect -t rdma"
  dev=""
  for _ in $(seq 40); do dev=$(find_ns $NQN) && break; sleep 0.25; done
  [ -n "$dev" ] || fail "no namespace block device"
}
pinned() {  # pinned LABEL: what the engine registered (pinned) with its queues connected
  echo "PINNED $1 $(grep -E '^(VmPin|VmLck|VmRSS)' /proc/$sp/status | tr -s ' \t' ' ' | tr '\n' ' ')"
  grep -hE 'registered' /tmp/serve.err | sed 's/^.*: \(rdma\)/\1/' | sed 's/^/REGISTERED| /'
}
# Default queue depth (128) and MDTS (1 MiB): the data buffers are the device's 32 MiB pool.
start_serve '{}' '{}'
T discover nvme discover -t rdma -a $ADDR -s $PORT > /tmp/discover.out 2>&1; drc=$?
sed 's/^/DISCOVER| /' /tmp/discover.out
[ $drc = 0 ] || fail "nvme discover -t rdma exited $drc"
grep -q "trtype: *rdma" /tmp/discover.out || fail "no rdma entry in the discovery log"
connect
nvme list-subsys 2>&1 | sed 's/^/LIST-SUBSYS| /'
run_fio() {  # run_fio NAME BS [SIZE]
  fio --name=$1 --filename=$dev --rw=randwrite --bs=$2 --iodepth=32 --ioengine=libaio --direct=1 \
    --size=${3:-$FIO_SIZE} --verify=crc32c --do_verify=1 > /tmp/fio-$1.txt 2>&1
  local rc=$?
  sed 's/^/FIO-'$1'| /' /tmp/fio-$1.txt
  echo "FIO-RESULT $1 bs=$2 rc=$rc $(grep -oE 'IOPS=[^,]+, BW=[^ ]+' /tmp/fio-$1.txt | head -1) $(grep -oE 'err= *[0-9]+' /tmp/fio-$1.txt | head -1)"
  [ $rc = 0 ] && grep -qE 'err= *0:' /tmp/fio-$1.txt || fail "fio $1"
  ! grep -qiE 'verify: bad|verify failed|bad magic' /tmp/fio-$1.txt || fail "fio $1 verify errors"
}
run_fio w4k 4k
run_fio w128k 128k
# A live switch to the poll model in the middle of a verify run.
( sleep 2; timeout 60 /host/run nvmetune ctl --socket /tmp/ctl.sock threading.set '{"mode":"poll"}' > /tmp/switch.out 2>&1
  echo "SWITCH-RC $?" >> /tmp/switch.out ) &
swp=$!
echo "SWITCH-FIO-START $(date +%T.%N)"
run_fio switch 4k
echo "SWITCH-FIO-END $(date +%T.%N)"
wait $swp
sed 's/^/SWITCH| /' /tmp/switch.out
grep -h "threading: switched" /tmp/serve.err | sed 's/^/SWITCH| /'
if ! grep -q 'SWITCH-RC 0' /tmp/switch.out; then
  for t in /proc/$sp/task/*; do echo "THREAD| $(cat $t/comm) $(cat $t/wchan)"; cat $t/stack 2>/dev/null | head -8 | sed 's/^/THREAD|   /'; done
  fail "live switch to poll"
fi
run_fio poll 128k
/host/run nvmetune ctl --socket /tmp/ctl.sock stats > /tmp/stats.out 2>&1
head -40 /tmp/stats.out | sed 's/^/STATS| /'
grep -E '"(comp_vector|qid)"' /tmp/stats.out | tr -d ' \n' | sed 's/^/STATS-CV| /'; echo
grep -q '"comp_vector"' /tmp/stats.out || fail "no comp_vector in ctl stats"
pinned default
T disconnect nvme disconnect -n $NQN || fail "nvme disconnect"
perf_rdma ours $PORT $NQN 4k  # our engine's rdma listener, driven by our own rdma host
perf_rdma ours $PORT $NQN 128k
kill $sp; wait $sp
sed 's/^/SERVE-ERR| /' /tmp/serve.err | tail -30
# Shared receive queue, every CQ on vector 0, and a pool small enough that commands wait for
# buffers (1 MiB with MDTS 128 KiB: 21x16KiB 2x128KiB 1x256KiB for two I/O queues of depth 32).
start_serve '{"use_srq":true,"srq_size":256,"comp_vector":0,"data_pool_bytes":"1MiB"}' \
  '{"queue_depth":32,"mdts_bytes":131072}'
connect  # the device (pool, SRQ) opens with its first connection
grep -q "shared receive queue of 256" /tmp/serve.err || fail "no shared receive queue"
grep -qE "qid [1-9][0-9]*, comp vector 0 of" /tmp/serve.err || fail "comp_vector 0 not applied"
run_fio srq4k 4k $SRQ_FIO_SIZE
run_fio srq128k 128k $SRQ_FIO_SIZE
pinned srq
T disconnect nvme disconnect -n $NQN || fail "nvme disconnect (srq)"
for _ in $(seq 20); do grep -q 'waited for a data buffer' /tmp/serve.err && break; sleep 0.1; done
kill $sp; wait $sp
grep -h 'waited for a data buffer' /tmp/serve.err | sed 's/^/BUFFER-WAITS| /'
grep -q 'waited for a data buffer' /tmp/serve.err || fail "no command waited for a buffer in a 1 MiB pool"
grep -E 'warning|error' /tmp/serve.err | sed 's/^/SERVE-ERR| /' | tail -10
echo "GUEST-PASS"
exit 0
GUEST_CMD_END
log "booting the guest (timeout ${GUEST_TIMEOUT}s)"
VM_DIR=$GUEST_DIR bash "$SHARED/run-guest.sh" -m 2048 -t "$GUEST_TIMEOUT" -s "$SHARE" "$WORK/cmd.sh" > "$WORK/guest.out" 2>&1
GRC=$?
cat "$WORK/guest.out"
grep -q '^GUEST-UP' "$WORK/guest.out" || { log "the guest did not boot (rc $GRC): skipped"; exit $SKIP; }
grep -q '^GUEST-FAIL' "$WORK/guest.out" && { log "FAIL: $(grep '^GUEST-FAIL' "$WORK/guest.out")"; exit 1; }
grep -q '^GUEST-PASS' "$WORK/guest.out" || { log "FAIL: no GUEST-PASS (rc $GRC)"; exit 1; }
grep -E '^(FIO-RESULT|PERF|PINNED) ' "$WORK/guest.out" | sed "s/^/$NAME: /"
log "PASS"
