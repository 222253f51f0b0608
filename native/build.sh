#!/usr/bin/env bash
# Builds the native library (release) and stages it under native/target/dist/ as
# libhurray.so and libhurray.a (cargo names them after the crate: libhurray_ffi.*).
# Called by Maven (native/pom.xml); usable by hand.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$HOME/.cargo/bin:$PATH" CARGO_NET_OFFLINE=true
cd "$here"
cargo build --release --offline --locked -p hurray-ffi
mkdir -p target/dist
# Copy then rename: a running JVM or test may have the old library mapped, and overwriting a
# mapped file in place would crash it.
for ext in so a; do
  cp -f "target/release/libhurray_ffi.$ext" "target/dist/.libhurray.$ext.tmp"
  mv -f "target/dist/.libhurray.$ext.tmp" "target/dist/libhurray.$ext"
done
