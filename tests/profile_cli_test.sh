#!/usr/bin/env bash
# `nvmetune profile` against a running `nvmetune serve` on a temporary control socket and a
# temporary database: apply (live, an event), invalid profiles that change nothing, save, list,
# show, diff, export, import (profile, nvmetcli, SPDK), delete.
# Usage: profile_cli_test.sh PATH/TO/nvmetune PATH/TO/tests/data/profile
set -uo pipefail

bin=${1:?usage: profile_cli_test.sh PATH/TO/nvmetune DATA_DIR}
data=${2:?usage: profile_cli_test.sh PATH/TO/nvmetune DATA_DIR}
# shellcheck source=cli_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/cli_lib.sh"
sock=$work/ctl.sock
# Applying a profile switches the live engine's threading, slower on a loaded machine.
expect_timeout=60

expect_no_grep() {
  if grep -qE -- "$2" "$1"; then fail "$3: /$2/ in $(basename "$1")"; show; else pass "$3"; fi
}

profile=("$bin" profile --db "$work/nvmetune.db" --socket "$sock")
ctl=("$bin" ctl --socket "$sock")

start_serve serve --listen 127.0.0.1:0 --ram 16MiB --threads 1 --control-socket "$sock" || exit 1

# --- a baseline, then a poll-mode profile applied live ---------------------------------------------
expect_exit 0 "save base" -- "${profile[@]}" save base --description "as started"
expect_exit 0 "threading before" -- "${ctl[@]}" threading.get
expect_grep "$work/out" '"mode": "bound"' "the engine starts bound"

cat >"$work/poll.json" <<'EOF'
{
  "schema": "nvmetune.profile/1",
  "name": "poll1",
  "description": "one polling thread",
  "threading": {"mode": "poll", "threads": 1, "idle_poll_us": 200},
  "budgets": {"recv_pdus": 16}
}
EOF
expect_exit 0 "apply poll.json" -- "${profile[@]}" apply "$work/poll.json"
expect_grep "$work/out" '^applied: threading' "apply reports threading applied"
expect_exit 0 "threading after" -- "${ctl[@]}" threading.get
expect_grep "$work/out" '"mode": "poll"' "threading.get shows poll"
expect_grep "$work/out" '"idle_poll_us": 200' "threading.get shows idle_poll_us 200"
expect_exit 0 "budgets after" -- "${ctl[@]}" budgets.get
expect_grep "$work/out" '"recv_pdus": 16' "budgets.get shows recv_pdus 16"
expect_exit 0 "events" -- "${ctl[@]}" events.get
expect_grep "$work/out" '"kind": "profile"' "a profile event was recorded"
expect_grep "$work/out" '"name": "poll1"' "the event names the profile"
expect_grep "$work/out" '"kind": "threading"' "the engine recorded the threading change"

# --- invalid profiles: every error with its path, nothing applied ----------------------------------
highest=$(cut -d- -f2 /sys/devices/system/cpu/online | tr ',' '\n' | tail -1)
absent=$((highest + 8))
cat >"$work/bad.json" <<EOF
{
  "schema": "nvmetune.profile/1",
  "threading": {"mode": "bound", "cpumask": "$absent", "thread": 2},
  "budgets": {"recv_pdus": "many", "send_pdus": 0},
  "steering": {"xps": [{"device": "lo", "queue": 0, "cpus": ""}]},
  "listners": []
}
EOF
expect_exit 1 "apply an invalid profile" -- "${profile[@]}" apply "$work/bad.json"
expect_grep "$work/err" "^  \\\$\\.threading\\.cpumask: CPU $absent is not online" "CPU not present, with its path"
expect_grep "$work/err" '^  \$\.threading\.thread: unknown key "thread" \(did you mean "threads"\?\)' "unknown key, with its path"
expect_grep "$work/err" '^  \$\.budgets\.recv_pdus: wrong type' "wrong type, with its path"
expect_grep "$work/err" '^  \$\.budgets\.send_pdus: out of range' "out of range, with its path"
expect_grep "$work/err" '^  \$\.steering\.xps\[0\]\.cpus: ' "empty mask, with its path"
expect_grep "$work/err" '^  \$\.listners: unknown key' "unknown top-level key, with its path"
expect_grep "$work/err" '6 error\(s\), nothing done' "all six errors in one pass"
expect_exit 0 "threading unchanged" -- "${ctl[@]}" threading.get
expect_grep "$work/out" '"mode": "poll"' "the invalid profile changed nothing (still poll)"
expect_exit 0 "budgets unchanged" -- "${ctl[@]}" budgets.get
expect_grep "$work/out" '"send_pdus": 64' "the invalid profile changed no budget"

head -c 120 "$work/poll.json" >"$work/truncated.json"
expect_exit 1 "apply a truncated file" -- "${profile[@]}" apply "$work/truncated.json"
expect_grep "$work/err" '^  \$: JSON syntax error' "a truncated file is a syntax error at \$"
printf '\x00\x01\x02garbage' >"$work/corrupt.json"
expect_exit 1 "import a corrupt file" -- "${profile[@]}" import "$work/corrupt.json"
expect_grep "$work/err" 'JSON syntax error' "a corrupt file is a syntax error"
sed 's#nvmetune.profile/1#nvmetune.profile/7#' "$work/poll.json" >"$work/future.json"
expect_exit 1 "apply a future schema" -- "${profile[@]}" apply "$work/future.json"
expect_grep "$work/err" '^  \$\.schema: unsupported schema version "7"' "an unknown schema version is named"
expect_exit 0 "threading still unchanged" -- "${ctl[@]}" threading.get
expect_grep "$work/out" '"mode": "poll"' "still poll after the refused files"

# --- save, list, show, diff, export, import ---------------------------------------------------------
expect_exit 0 "save live" -- "${profile[@]}" save live
expect_exit 0 "list" -- "${profile[@]}" list
expect_grep "$work/out" '^base ' "list shows base"
expect_grep "$work/out" '^live +[0-9-]+ [0-9:]+ +threading,budgets,listeners,subsystems' "list shows live and its sections"
expect_exit 0 "show live" -- "${profile[@]}" show live
expect_grep "$work/out" '"schema": "nvmetune.profile/1"' "show prints the schema"
expect_grep "$work/out" '"mode": "poll"' "show prints the saved mode"
expect_exit 0 "diff base live" -- "${profile[@]}" diff base live
expect_grep "$work/out" '^threading\.mode: bound → poll$' "diff: threading.mode: bound → poll"
expect_grep "$work/out" '^budgets\.recv_pdus: 32 → 16$' "diff: budgets.recv_pdus: 32 → 16"
expect_grep "$work/out" '^description: as started → \(absent\)$' "diff: description"

expect_exit 0 "export live" -- "${profile[@]}" export live "$work/live.json"
expect_grep "$work/live.json" '"name": "live"' "the export names the profile"
expect_exit 0 "import the export" -- "${profile[@]}" import "$work/live.json" --name live2
expect_exit 0 "diff live live2" -- "${profile[@]}" diff live live2
expect_grep "$work/out" '^no differences between live and live2$' "save → export → import → diff is empty"
expect_exit 0 "diff live against its file" -- "${profile[@]}" diff live "$work/live.json"
expect_grep "$work/out" '^no differences' "a stored profile and its export do not differ"
expect_exit 1 "import over an existing name" -- "${profile[@]}" import "$work/live.json"
expect_grep "$work/err" 'exists: pass --replace' "an existing name is not overwritten silently"
expect_exit 0 "import poll.json" -- "${profile[@]}" import "$work/poll.json"
expect_grep "$work/out" 'imported profile poll1' "a profile keeps its own name"
expect_exit 0 "apply poll1 by name" -- "${profile[@]}" apply poll1
expect_exit 1 "import an invalid profile" -- "${profile[@]}" import "$work/bad.json" --name bad
expect_exit 1 "show bad (not stored)" -- "${profile[@]}" show bad

# --- other tools' saves -----------------------------------------------------------------------------
expect_exit 0 "import nvmetcli" -- "${profile[@]}" import "$data/nvmetcli_config.json" --name kernel
expect_grep "$work/out" 'imported from nvmetcli' "detected as nvmetcli"
expect_grep "$work/out" 'no equivalent: ports\[1\] \(rdma 10\.0\.0\.1:4420\): transport rdma' "nvmetcli: rdma port reported"
expect_grep "$work/out" 'no equivalent: .*dhchap_key' "nvmetcli: host key reported"
expect_grep "$work/out" 'warning: subsystem nqn\.2026-01\.io\.example:kernel-a nsid 1: /dev/nvme0n1 is a device' "nvmetcli: a served block device is warned about"
expect_exit 0 "show kernel" -- "${profile[@]}" show kernel
expect_grep "$work/out" '"path": "/dev/nvme0n1"' "nvmetcli: namespace device path"
expect_grep "$work/out" '"in_capsule_data_size": 16384' "nvmetcli: inline_data_size"
expect_exit 0 "import nvmetcli exporting system files" -- "${profile[@]}" import "$data/nvmetcli_system_paths.json" --name exports
expect_grep "$work/out" 'warning: subsystem nqn\.2026-01\.io\.example:exports nsid 3: /etc/shadow is a system file' "nvmetcli: /etc/shadow warned about"
expect_grep "$work/out" 'warning: .* nsid 5: /etc/passwd is a system file' "nvmetcli: /srv/../../etc/passwd warned about as /etc/passwd"
expect_exit 0 "import SPDK exporting a device" -- "${profile[@]}" import "$data/spdk_system_paths.json" --name spdk-exports
expect_grep "$work/out" 'warning: subsystem nqn\.2016-06\.io\.spdk:exports nsid 1: /dev/nvme1n1 is a device' "SPDK: aio bdev on a device warned about"
expect_exit 0 "import SPDK" -- "${profile[@]}" import "$data/spdk_save_config.json" --name spdk
expect_grep "$work/out" 'imported from SPDK save_config' "detected as SPDK"
expect_grep "$work/out" 'no equivalent: bdev bdev_nvme_attach_controller Nvme0' "SPDK: NVMe bdev reported"
expect_exit 0 "diff kernel spdk" -- "${profile[@]}" diff kernel spdk
expect_grep "$work/out" '^subsystems\[nqn\.2016-06\.io\.spdk:cnode1\]: \(absent\) → ' "diff shows an added subsystem by NQN"
expect_exit 0 "export spdk as SPDK" -- "${profile[@]}" export spdk "$work/spdk-out.json" --format spdk
expect_grep "$work/spdk-out.json" '"method": "nvmf_create_transport"' "export --format spdk writes load_config calls"
expect_exit 0 "import the SPDK export" -- "${profile[@]}" import "$work/spdk-out.json" --name spdk2
expect_exit 0 "diff spdk spdk2" -- "${profile[@]}" diff spdk spdk2
expect_grep "$work/out" '^no differences between spdk and spdk2$' "SPDK save → profile → export → import: no differences"
expect_exit 0 "export live as nvmetcli" -- "${profile[@]}" export live - --format nvmetcli
expect_grep "$work/out" '"ports": \[' "export --format nvmetcli writes ports"
expect_grep "$work/err" 'not mapped: threading: no equivalent in the Linux kernel target' "not mapped parts are listed on stderr"
expect_exit 2 "export --format unknown" -- "${profile[@]}" export live - --format xml

# --- delete, usage, no engine -----------------------------------------------------------------------
expect_exit 0 "delete live2" -- "${profile[@]}" delete live2
expect_exit 1 "delete live2 again" -- "${profile[@]}" delete live2
expect_exit 2 "profile without a subcommand" -- "$bin" profile --db "$work/nvmetune.db"
expect_exit 1 "apply with no engine" -- "$bin" profile --db "$work/nvmetune.db" --socket "$work/absent.sock" apply poll1
expect_grep "$work/err" "$work/absent.sock" "the connection error names the socket"

kill -TERM "$pid"
reap "$pid"
rc=$?
[ "$rc" -eq 0 ] && pass "serve stopped (exit 0)" || fail "serve exit $rc"

finish
