#!/bin/bash
# `nvmetune perf` against the Linux kernel NVMe/TCP target (nvmet-tcp), a target nobody here
# wrote (CTest: interop_kernel_target_perf).
#
# usage: kernel_target_perf.sh NVMETUNE_BIN SHARED_INTEROP_DIR
#
# Stages nvmetune into the QEMU guest (stage-binary.sh), which sets up nvmet on its own loopback
# (lib-guest.sh's nvmet_subsys/nvmet_port, a 64 MiB brd RAM disk as the namespace: it keeps data,
# so verify means something) and runs perf verify workloads against it: randwrite 4k, randrw 8k
# with header and data digests over 2 queues, and a 128k sequential write (R2T/H2CData).
# Exit 0 when every run completes with 0 mismatches. Exit 77 (CTest: skipped) only when the
# guest cannot be built or booted; any failure after the guest is up is a failure.
# env: NVMETUNE_GUEST_DIR (default /var/cache/nvmetune-guest), GUEST_TIMEOUT (170 s)
set -uo pipefail

[ $# -eq 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
NAME=kernel-target-perf
# shellcheck source=guest_preflight.sh source-path=SCRIPTDIR
. "$(dirname "$0")/guest_preflight.sh"
for f in run-guest.sh lib-guest.sh stage-binary.sh build-guest.sh; do
  [ -f "$SHARED/$f" ] || { log "$SHARED/$f missing: skipped"; exit $SKIP; }
done
if [ ! -f "$GUEST_DIR/initramfs.cpio" ]; then
  mkdir -p "$GUEST_DIR"
  log "no guest in $GUEST_DIR: building it (build-guest.sh, a few minutes)"
  ( flock 9; [ -f "$GUEST_DIR/initramfs.cpio" ] || bash "$SHARED/build-guest.sh" "$GUEST_DIR" ) 9> "$GUEST_DIR/.build.lock" \
    || { log "the guest cannot be built: skipped"; exit $SKIP; }
fi

WORK=$(mktemp -d /tmp/nvmetune-ktperf.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
SHARE=$WORK/share
mkdir -p "$SHARE"
bash "$SHARED/stage-binary.sh" "$BIN" "$SHARE" || { log "FAIL: stage-binary.sh"; exit 1; }
NQN=nqn.2026-12.io.nvmetune:kernel-target
PORT=4433
cat > "$WORK/cmd.sh" << GUEST_CMD_END
set -uo pipefail
. /host/lib-guest.sh
echo "GUEST-UP kernel \$(uname -r)"
modprobe nvmet && modprobe nvmet-tcp && modprobe brd rd_nr=1 rd_size=65536 || { echo "GUEST-FAIL modprobe"; exit 3; }
nvmet_subsys $NQN /dev/ram0 && nvmet_port 1 tcp 127.0.0.1 $PORT $NQN || { echo "GUEST-FAIL nvmet configfs"; exit 3; }
R="trtype:tcp traddr:127.0.0.1 trsvcid:$PORT subnqn:$NQN"
rc=0
run() { echo "=== perf \$*"; T perf /host/run nvmetune perf -r "\$R" "\$@"; local r=\$?; echo "PERF-RC \$r"; [ \$r = 0 ] || rc=1; }
run --rw randwrite --bs 4k --qd 8 --time 3 --verify
run --rw randrw --rwmixread 60 --bs 8k --qd 8 --queues 2 --threads 1 --size 8m --verify --digest hdr,data
run --rw write --bs 128k --qd 4 --size 16m --verify
exit \$rc
GUEST_CMD_END
log "booting the guest (timeout ${GUEST_TIMEOUT}s)"
VM_DIR=$GUEST_DIR bash "$SHARED/run-guest.sh" -m 1024 -t "$GUEST_TIMEOUT" -s "$SHARE" "$WORK/cmd.sh" > "$WORK/guest.out" 2>&1
GRC=$?
cat "$WORK/guest.out"
if ! grep -q '^GUEST-UP' "$WORK/guest.out"; then
  log "the guest did not boot (rc $GRC): skipped"; exit $SKIP
fi
if grep -q '^GUEST-FAIL' "$WORK/guest.out"; then log "FAIL: kernel target setup in the guest"; exit 1; fi
runs=$(grep -c '^PERF-RC 0' "$WORK/guest.out")
mism=$(grep -c '^verify: [1-9][0-9]* block reads checked, 0 mismatches' "$WORK/guest.out")
log "guest rc=$GRC, perf runs ok: $runs of 3, clean verify summaries: $mism of 3"
[ "$GRC" = 0 ] && [ "$runs" = 3 ] && [ "$mism" = 3 ] || { log "FAIL"; exit 1; }
log "PASS"
