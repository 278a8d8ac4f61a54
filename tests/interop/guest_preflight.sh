# shellcheck shell=bash
# The shared start of the guest-based interop tests (kernel_target_perf.sh, probe_wqlat.sh),
# sourced with the script's arguments (BIN SHARED_INTEROP_DIR) after NAME is set: sets BIN,
# SHARED, GUEST_DIR, GUEST_TIMEOUT, SKIP and log(); exits 77 (CTest: skipped) when no guest can
# run here (not root, no QEMU, no shared interop dir) and 1 when BIN is not executable.
SKIP=77
BIN=$1
SHARED=$(cd "$2" 2>/dev/null && pwd) || { echo "$NAME: no shared interop dir $2: skipped"; exit $SKIP; }
GUEST_DIR=${NVMETUNE_GUEST_DIR:-/var/cache/nvmetune-guest}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-170}
log() { echo "$NAME: $*"; }

[ -x "$BIN" ] || { log "FAIL: $BIN is not executable"; exit 1; }
if [ "$(id -u)" != 0 ] || ! command -v qemu-system-x86_64 > /dev/null; then
  log "needs root and qemu-system-x86_64 to boot the guest: skipped"; exit $SKIP
fi
