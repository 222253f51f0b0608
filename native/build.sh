#!/usr/bin/env bash
# Builds the native library (release) and stages it under native/target/dist/ as the shared
# library System.mapLibraryName("hurray") names on this platform (libhurray.so on Linux,
# libhurray.dylib on macOS) plus libhurray.a (cargo names them after the crate: libhurray_ffi.*).
# Prints nothing else; `build.sh --print-platform` prints the jar folder this machine maps to
# (OS-ARCH, the names NativeLibrary.platform uses: linux-x86_64, linux-aarch64, macos-aarch64, ...).
# Called by Maven (native/pom.xml); usable by hand.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

case "$(uname -s)" in
  Linux) os=linux; shared=so ;;
  Darwin) os=macos; shared=dylib ;;
  FreeBSD) os=freebsd; shared=so ;;
  *) echo "build.sh: unsupported OS $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64|amd64) arch=x86_64 ;;
  aarch64|arm64) arch=aarch64 ;;
  riscv64) arch=riscv64 ;;
  ppc64le) arch=ppc64le ;;
  *) echo "build.sh: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
if [ "${1:-}" = "--print-platform" ]; then
  echo "$os-$arch libhurray.$shared"
  exit 0
fi

export PATH="$HOME/.cargo/bin:$PATH" CARGO_NET_OFFLINE=true
cd "$here"
cargo build --release --offline --locked -p hurray-ffi
mkdir -p target/dist
# Copy then rename: a running JVM or test may have the old library mapped, and overwriting a
# mapped file in place would crash it.
for ext in "$shared" a; do
  cp -f "target/release/libhurray_ffi.$ext" "target/dist/.libhurray.$ext.tmp"
  mv -f "target/dist/.libhurray.$ext.tmp" "target/dist/libhurray.$ext"
done
