#!/usr/bin/env bash
# `nvmetune serve` with its defaults against hostile hosts (issue 33): the malformed-PDU battery
# with a health check after each case, mid-command disconnects and a connect/close storm
# (tests/tools/hostile_host.cpp), then the engine must still be running and exit cleanly on
# SIGTERM. Usage: hostile_serve_test.sh PATH/TO/nvmetune PATH/TO/hostile_host
set -uo pipefail

bin=${1:?usage: hostile_serve_test.sh PATH/TO/nvmetune PATH/TO/hostile_host}
hostile=${2:?usage: hostile_serve_test.sh PATH/TO/nvmetune PATH/TO/hostile_host}
# shellcheck source=cli_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/cli_lib.sh"

ulimit -c 0
# The embedded default but a 1 s connect timeout, so the handshake deadlines of the battery's
# connections fall inside the churn (the crash of issue 33 needed a deadline firing while queues
# closed by the thousand; with the default 10 s that takes 12 s of churn, hostile_host's default).
cat >"$work/serve.json" <<'JSON'
{"subsystems": [{"nqn": "nqn.2026-12.io.nvmetune:default", "allow_any_host": true,
                 "namespaces": [{"nsid": 1, "backend": "ram", "size": "256MiB"}]}],
 "tcp": {"connect_timeout_ms": 1000}}
JSON
if start_serve serve --config "$work/serve.json" --listen 127.0.0.1:0 --no-control-socket; then
  expect_timeout=120 expect_exit 0 "battery, disconnects and churn against serve" -- \
    "$hostile" --port "$port" --rounds "${NVMETUNE_HOSTILE_ROUNDS:-2}" --churn-seconds "${NVMETUNE_HOSTILE_SECONDS:-3}"
  cat "$work/out"
  if kill -0 "$pid" 2>/dev/null; then pass "serve still running"; else fail "serve died"; cat "$work/serve.err"; fi
  kill -TERM "$pid"
  reap "$pid"
  rc=$?
  [ "$rc" -eq 0 ] && pass "serve exits 0 on SIGTERM" || { fail "serve exit $rc"; tail -20 "$work/serve.err"; }
fi
finish
