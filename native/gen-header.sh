#!/usr/bin/env bash
# Regenerates hurray.h from native/hurray-ffi with cbindgen.
#   native/gen-header.sh            write ./hurray.h
#   native/gen-header.sh --check    fail if the committed hurray.h differs
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_NET_OFFLINE=true
command -v cbindgen >/dev/null || { echo "cbindgen not found (Debian: apt-get install cbindgen)" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
(cd "$root/native/hurray-ffi" && cbindgen --quiet --config cbindgen.toml --output "$tmp" .)
if [ "${1:-}" = "--check" ]; then
  if ! diff -u "$root/hurray.h" "$tmp"; then
    echo "hurray.h is stale: run native/gen-header.sh and commit the result" >&2
    exit 1
  fi
  echo "hurray.h is up to date"
else
  cp "$tmp" "$root/hurray.h"
fi
