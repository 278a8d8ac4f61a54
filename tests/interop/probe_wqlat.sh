#!/bin/bash
# The kernel's NVMe/TCP target measured by `nvmetune probe wqlat` (CTest: interop_probe_wqlat).
#
# usage: probe_wqlat.sh NVMETUNE_BIN SHARED_INTEROP_DIR
#
# In the QEMU guest (its own kernel, BTF and root): nvmet-tcp serves a brd RAM disk on the
# guest's loopback, the guest's nvme-tcp host connects and fio reads from it.
# `nvmetune probe wqlat --filter nvmet_tcp_wq` runs twice, each printing its histogram at
# SIGTERM: 3 s idle, then around fio; the second must count far more work items. Then, in the same
# guest, nvmetune serve takes the same host and fio, and `ctl stats --watch --hist queue_wait`
# prints our engine's queue-wait histogram beside it. Both histograms end up in the output.
# Exit 77 (CTest: skipped) only when the guest cannot be built or booted.
# env: NVMETUNE_GUEST_DIR (default /var/cache/nvmetune-guest), GUEST_TIMEOUT (170 s)
set -uo pipefail

[ $# -eq 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
NAME=probe-wqlat
# shellcheck source=guest_preflight.sh source-path=SCRIPTDIR
. "$(dirname "$0")/guest_preflight.sh"
for f in run-guest.sh lib-guest.sh stage-binary.sh; do
  [ -f "$SHARED/$f" ] || { log "$SHARED/$f missing: skipped"; exit $SKIP; }
done
[ -f "$GUEST_DIR/initramfs.cpio" ] || { log "no guest in $GUEST_DIR (build-guest.sh): skipped"; exit $SKIP; }

WORK=$(mktemp -d /tmp/nvmetune-probe-wqlat.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
SHARE=$WORK/share
mkdir -p "$SHARE"
bash "$SHARED/stage-binary.sh" "$BIN" "$SHARE" || { log "FAIL: stage-binary.sh"; exit 1; }
NQN=nqn.2026-12.io.nvmetune:kernel-target
NQN2=nqn.2026-12.io.nvmetune:engine
cat > "$WORK/cmd.sh" << 'GUEST_CMD_END'
set -uo pipefail
. /host/lib-guest.sh
NQN=nqn.2026-12.io.nvmetune:kernel-target
NQN2=nqn.2026-12.io.nvmetune:engine
echo "GUEST-UP kernel $(uname -r)"
[ -e /sys/kernel/btf/vmlinux ] || { echo "GUEST-FAIL no /sys/kernel/btf/vmlinux"; exit 3; }
modprobe nvmet && modprobe nvmet-tcp && modprobe nvme-tcp && modprobe brd rd_nr=1 rd_size=65536 \
  || { echo "GUEST-FAIL modprobe"; exit 3; }
nvmet_subsys $NQN /dev/ram0 && nvmet_port 1 tcp 127.0.0.1 4434 $NQN || { echo "GUEST-FAIL nvmet configfs"; exit 3; }
nvme connect -t tcp -a 127.0.0.1 -s 4434 -n $NQN > /dev/null || { echo "GUEST-FAIL connect"; exit 3; }
sleep 1
dev=$(find_ns $NQN) || { echo "GUEST-FAIL no namespace"; exit 3; }
fio_read() { fio --name=r --filename=$1 --rw=randread --bs=4k --iodepth=16 --ioengine=libaio --direct=1 \
  --time_based --runtime=$2 --size=32m 2>&1 | grep -E '^ +read: IOPS'; }

# wqlat on the kernel target's workqueue, one histogram per run (printed at SIGTERM): first
# while idle, then around fio. No interval to align with fio, whose start-up in an emulated
# guest takes seconds.
wqlat_start() {  # wqlat_start OUT: in the background until SIGTERM; returns once it traces
  /host/run nvmetune probe wqlat --filter nvmet_tcp_wq > $1 2>&1 &
  wp=$!
  for _ in $(seq 300); do grep -q '^Tracing' $1 && return 0; kill -0 $wp 2>/dev/null || break; sleep 0.1; done
  cat $1; echo "GUEST-FAIL probe wqlat did not start"; exit 4
}
wqlat_stop() { kill -TERM $wp; wait $wp; echo "WQLAT-RC $?"; }
wqlat_start /tmp/wqlat-idle.out
sleep 3
wqlat_stop
wqlat_start /tmp/wqlat-io.out
echo "FIO-KERNEL $(fio_read $dev 3)"
wqlat_stop
sed 's/^/WQLAT-IDLE| /' /tmp/wqlat-idle.out
sed 's/^/WQLAT-IO| /' /tmp/wqlat-io.out
nvme disconnect -n $NQN > /dev/null

# Our engine in the same guest, the same host and fio: its own queue-wait histogram.
/host/run nvmetune serve --listen 127.0.0.1:4435 --ram 64MiB --nqn $NQN2 --threads 1 --sample-interval 3000 \
  --control-socket /tmp/ctl.sock > /tmp/serve.out 2>&1 &
sp=$!
for _ in $(seq 300); do grep -q '^nvmetune: ready' /tmp/serve.out && break; sleep 0.1; done
nvme connect -t tcp -a 127.0.0.1 -s 4435 -n $NQN2 > /dev/null || { cat /tmp/serve.out; echo "GUEST-FAIL connect to nvmetune"; exit 5; }
sleep 1
dev2=$(find_ns $NQN2) || { echo "GUEST-FAIL no nvmetune namespace"; exit 5; }
( sleep 0.5; echo "FIO-ENGINE $(fio_read $dev2 7)" ) &
fp=$!
/host/run nvmetune ctl --socket /tmp/ctl.sock stats --watch --count 3 --hist queue_wait --interval 500 > /tmp/qwait.out 2>&1
wait $fp
sed 's/^/QWAIT| /' /tmp/qwait.out
nvme disconnect -n $NQN2 > /dev/null
kill $sp; wait $sp
exit 0
GUEST_CMD_END
log "booting the guest (timeout ${GUEST_TIMEOUT}s)"
VM_DIR=$GUEST_DIR bash "$SHARED/run-guest.sh" -m 1024 -t "$GUEST_TIMEOUT" -s "$SHARE" "$WORK/cmd.sh" > "$WORK/guest.out" 2>&1
GRC=$?
cat "$WORK/guest.out"
grep -q '^GUEST-UP' "$WORK/guest.out" || { log "the guest did not boot (rc $GRC): skipped"; exit $SKIP; }
grep -q '^GUEST-FAIL' "$WORK/guest.out" && { log "FAIL: $(grep '^GUEST-FAIL' "$WORK/guest.out")"; exit 1; }
# "wqlat all (count N, ...)" of each run: idle, then around fio.
idle=$(sed -n 's/^WQLAT-IDLE| wqlat all (count \([0-9]*\),.*/\1/p' "$WORK/guest.out")
io=$(sed -n 's/^WQLAT-IO| wqlat all (count \([0-9]*\),.*/\1/p' "$WORK/guest.out")
log "wqlat nvmet_tcp_wq work items: ${idle:-none} idle (3 s), ${io:-none} around fio"
[ -n "$idle" ] && [ -n "$io" ] || { log "FAIL: a wqlat histogram is missing"; exit 1; }
[ "$io" -gt 100 ] && [ "$io" -gt $((idle * 10)) ] \
  || { log "FAIL: the count did not grow with the I/O ($idle idle, $io under fio)"; exit 1; }
grep -q '^QWAIT| .*usecs *: count' "$WORK/guest.out" || { log "FAIL: no engine queue_wait histogram"; exit 1; }
log "PASS"
