#!/usr/bin/env bash
# The native test suite, run by Maven's test phase (native/pom.xml) and usable by hand:
#   1. cargo test (Rust unit, property and C-ABI tests, and hurray-core/tests/module_layers.rs,
#      which fails on a module cycle in hurray-core; debug build, so handle sentinels are on)
#   2. hurray.h drift check (cbindgen)
#   3. C examples compiled with gcc against hurray.h and run (src/c/run.sh, src/c/file/run.sh)
#   4. cargo fmt --check and cargo clippy --all-targets -D warnings, with every unsafe block
#      documented (clippy::undocumented_unsafe_blocks; when installed)
#   5. the repository cites only itself (tools/check-standalone.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH" CARGO_NET_OFFLINE=true
cd "$here"
cargo test --offline --locked --workspace
"$here/gen-header.sh" --check
for t in "$root"/src/c/run.sh "$root"/src/c/file/run.sh; do
  [ -x "$t" ] && "$t"
done
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all --check || { echo "native tests: run 'cd native && cargo fmt --all'" >&2; exit 1; }
else
  echo "native tests: rustfmt not installed; format check skipped" >&2
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --offline --locked --all-targets -- -D warnings -W clippy::undocumented_unsafe_blocks
else
  echo "native tests: cargo clippy not installed; lint step skipped" >&2
fi
"$root/tools/check-standalone.sh"
echo "native tests: all passed"
