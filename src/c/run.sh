#!/usr/bin/env bash
# Builds the C tests against ../../hurray.h into a temporary directory and runs them, once
# linked statically against native/target/dist/libhurray.a and once against libhurray.so.
# Needs native/build.sh to have run (native/test.sh and Maven do that first). Usage: src/c/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist="$root/native/target/dist"
for f in libhurray.a libhurray.so; do
  [ -f "$dist/$f" ] || { echo "$dist/$f is missing: run native/build.sh first" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-gcc}
CXX=${CXX:-g++}
cflags=(-std=c11 -Wall -Wextra -pedantic -Werror -O1 -g -I"$root")
sources=("$here/socketpair_test.c" "$here/stream_writer.c" "$here/stream_reader.c")
# The list cargo prints for the staticlib (--print native-static-libs), minus the implicit -lc.
static_libs=(-lgcc_s -lutil -lrt -lpthread -lm -ldl)

"$CXX" -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$root" "$here/header_cxx.cpp"
echo "hurray.h: g++ -fsyntax-only ok"

"$CC" "${cflags[@]}" -o "$tmp/socketpair_static" "${sources[@]}" "$dist/libhurray.a" "${static_libs[@]}"
"$CC" "${cflags[@]}" -o "$tmp/socketpair_shared" "${sources[@]}" -L"$dist" -lhurray -Wl,-rpath,"$dist" -lpthread
if ldd "$tmp/socketpair_static" | grep libhurray >/dev/null; then
  echo "socketpair_static links libhurray dynamically" >&2; exit 1
fi
ldd "$tmp/socketpair_shared" | grep "$dist/libhurray.so" >/dev/null || { echo "socketpair_shared does not load $dist/libhurray.so" >&2; exit 1; }

"$CC" "${cflags[@]}" -o "$tmp/sans_io_static" "$here/sans_io_test.c" "$root/native/target/dist/libhurray.a" "${static_libs[@]}"
"$CC" "${cflags[@]}" -o "$tmp/sans_io_shared" "$here/sans_io_test.c" -L"$dist" -lhurray -Wl,-rpath,"$dist" -lpthread
"$CC" "${cflags[@]}" -o "$tmp/dlpack_shared" "$here/dlpack_test.c" -L"$dist" -lhurray -Wl,-rpath,"$dist" -lpthread
for t in sans_io_static sans_io_shared dlpack_shared; do
  echo "== $t"
  "$tmp/$t"
done

golden="$root/src/golden/stream_v1_checksums.hrry"
count=$(grep -A6 '"file": "stream_v1_checksums.hrry"' "$root/src/golden/manifest.json" | sed -n 's/.*"tensor_count": \([0-9]*\).*/\1/p')
for t in socketpair_static socketpair_shared; do
  echo "== $t"
  "$tmp/$t" "$golden" "$count"
done
echo "C tests: all passed"
