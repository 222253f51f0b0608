#!/usr/bin/env bash
# Builds the HRRYFILE C test (file_test.c) against ../../../hurray.h, linked statically
# against native/target/dist/libhurray.a, and runs it in a temporary directory: a container
# written through a write callback into a file, read back through read_at/size (pread) and
# through the span reader over an mmap, then a sparse file above 4 GiB (a few KiB on disk).
# Usage: src/c/file/run.sh   (runs native/build.sh first, which is quick when up to date)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
"$root/native/build.sh" >/dev/null 2>&1 || "$root/native/build.sh"
dist="$root/native/target/dist"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-gcc}
# The list cargo prints for the staticlib (--print native-static-libs), minus the implicit -lc.
static_libs=(-lgcc_s -lutil -lrt -lpthread -lm -ldl)
"$CC" -std=c11 -Wall -Wextra -pedantic -Werror -O1 -g -I"$root" -o "$tmp/file_test" \
  "$here/file_test.c" "$dist/libhurray.a" "${static_libs[@]}"
"$tmp/file_test" "$tmp"
echo "C file tests: all passed"
