#!/usr/bin/env bash
# docs/reference/configuration.md must be exactly what `nvmetune config reference` prints, so the
# configuration reference cannot drift from the settings schema the engine validates with.
# Usage: config_reference_test.sh NVMETUNE COMMITTED.md
set -u
nvmetune=$1 committed=$2
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
if ! "$nvmetune" config reference > "$generated"; then
  echo "FAIL: $nvmetune config reference exited $?" >&2
  exit 1
fi
if ! diff -u "$committed" "$generated"; then
  echo >&2
  echo "FAIL: $committed is not what \`nvmetune config reference\` prints (the settings schema changed)." >&2
  echo "Regenerate it and commit the result:" >&2
  echo "  build/default/app/nvmetune config reference > docs/reference/configuration.md" >&2
  exit 1
fi
echo "ok: $committed matches the settings schema"
