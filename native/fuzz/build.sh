#!/usr/bin/env bash
# Builds the libFuzzer targets of native/fuzz into native/target/fuzz/bin (docs/reliability.md).
# hurray-ffi is compiled as a dev build (opt-level 1) with LLVM SanitizerCoverage so libFuzzer
# sees the Rust code's edges and comparisons, and with the `free-destroyed-shells` feature so
# LeakSanitizer reports only real leaks; the C harnesses are linked with clang
# -fsanitize=fuzzer,address,undefined (ASan/UBSan check the harness and every byte the library
# hands back; Rust itself is not ASan-instrumented on stable). Needs Debian clang-14 and
# libclang-rt-14-dev (tools/setup.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
native=$(cd "$here/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH" CARGO_NET_OFFLINE=true
cc=${HURRAY_FUZZ_CC:-$(command -v clang-14 || command -v clang)}
out="$native/target/fuzz"
mkdir -p "$out/bin${HURRAY_FUZZ_OPT:-}"
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cforce-frame-pointers=yes" \
CARGO_PROFILE_DEV_OPT_LEVEL=${HURRAY_FUZZ_OPT:-1} CARGO_TARGET_DIR="$out/cargo${HURRAY_FUZZ_OPT:-}" \
  cargo build --offline --locked -q -p hurray-ffi --features free-destroyed-shells
lib="$out/cargo${HURRAY_FUZZ_OPT:-}/debug/libhurray_ffi.a"
for src in "$here"/fuzz_*.c; do
  name=$(basename "$src" .c)
  [ "$name" = fuzz_common ] && continue
  "$cc" -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$native/.." "$src" "$lib" -lpthread -ldl -lm -o "$out/bin${HURRAY_FUZZ_OPT:-}/$name"
done
echo "fuzz targets in $out/bin${HURRAY_FUZZ_OPT:-}: $(cd "$out/bin${HURRAY_FUZZ_OPT:-}" && ls | tr '\n' ' ')"
