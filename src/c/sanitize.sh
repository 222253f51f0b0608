#!/usr/bin/env bash
# The C tests (socketpair_test + stream_reader/writer, file/file_test) under the sanitizers:
#   1. clang -fsanitize=address,undefined (LeakSanitizer included) with -fno-sanitize-recover,
#      linked statically against the release libhurray.a;
#   2. valgrind memcheck (--leak-check=full, every error fatal) on the gcc builds, against the
#      release libhurray.a and libhurray.so.
# Zero errors and zero leaks are required. Needs native/build.sh's outputs, clang (or clang-14)
# and valgrind (tools/setup.sh installs them). ~1 minute. Usage: src/c/sanitize.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
"$root/native/build.sh" >/dev/null 2>&1 || "$root/native/build.sh"
dist="$root/native/target/dist"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clang=$(command -v clang-14 || command -v clang)
static_libs=(-lgcc_s -lutil -lrt -lpthread -lm -ldl)
stream_sources=("$here/socketpair_test.c" "$here/stream_writer.c" "$here/stream_reader.c")
golden="$root/src/golden/stream_v1_checksums.hrry"
count=$(grep -A6 '"file": "stream_v1_checksums.hrry"' "$root/src/golden/manifest.json" | sed -n 's/.*"tensor_count": \([0-9]*\).*/\1/p')
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== ASan+UBSan+LSan (clang)"
"$clang" -std=c11 -O1 -g "${san[@]}" -I"$root" -o "$tmp/stream_asan" "${stream_sources[@]}" "$dist/libhurray.a" "${static_libs[@]}"
"$clang" -std=c11 -O1 -g "${san[@]}" -I"$root" -o "$tmp/file_asan" "$here/file/file_test.c" "$dist/libhurray.a" "${static_libs[@]}"
"$tmp/stream_asan" "$golden" "$count"
mkdir -p "$tmp/f1" && "$tmp/file_asan" "$tmp/f1"

echo "== valgrind memcheck (gcc; static and shared)"
vg=(valgrind -q --error-exitcode=99 --suppressions="$here/valgrind.supp" --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes)
gcc -std=c11 -O1 -g -I"$root" -o "$tmp/stream_static" "${stream_sources[@]}" "$dist/libhurray.a" "${static_libs[@]}"
gcc -std=c11 -O1 -g -I"$root" -o "$tmp/stream_shared" "${stream_sources[@]}" -L"$dist" -lhurray -Wl,-rpath,"$dist" -lpthread
gcc -std=c11 -O1 -g -I"$root" -o "$tmp/file_static" "$here/file/file_test.c" "$dist/libhurray.a" "${static_libs[@]}"
"${vg[@]}" "$tmp/stream_static" "$golden" "$count"
"${vg[@]}" "$tmp/stream_shared" "$golden" "$count"
mkdir -p "$tmp/f2" && "${vg[@]}" "$tmp/file_static" "$tmp/f2"
echo "C tests under sanitizers: no errors"
