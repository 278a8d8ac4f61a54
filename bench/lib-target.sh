# Sourced by the bench scripts: one nvmetune target pinned to $target_cpu, serving a 64 GiB
# null namespace (4096-byte blocks) on 127.0.0.1, with a control socket, stopped on exit.
# Needs: out_dir, target_cpu, nqn, and the binary as $1 of start_bench_target.
# Sets: sock, spid, port.
start_bench_target() {  # start_bench_target SERVE_BINARY
  sock=$out_dir/ctl.sock
  cat >"$out_dir/config.json" <<JSON
{
  "listeners": [{"trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": "0"}],
  "subsystems": [{"nqn": "$nqn", "allow_any_host": true,
                  "namespaces": [{"nsid": 1, "backend": "null", "size": "64GiB", "block_size": 4096}]}],
  "threading": {"mode": "bound", "cpumask": "$target_cpu"}
}
JSON
  spid=
  trap 'if [ -n "$spid" ]; then kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null; fi' EXIT
  taskset -c "$target_cpu" "$1" serve --config "$out_dir/config.json" --control-socket "$sock" \
    >"$out_dir/serve.out" 2>"$out_dir/serve.err" &
  spid=$!
  for _ in $(seq 100); do
    grep -qx "nvmetune: ready" "$out_dir/serve.out" 2>/dev/null && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  port=$(sed -n 's/^nvmetune: listening on tcp 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out_dir/serve.out" | head -1)
  if [ -z "$port" ]; then echo "serve did not start:" >&2; cat "$out_dir/serve.out" "$out_dir/serve.err" >&2; exit 1; fi
}
