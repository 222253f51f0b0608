#!/usr/bin/env bash
# Runs one libFuzzer target, or all of them, for a bounded time (docs/reliability.md):
#   native/fuzz/run.sh TARGET|all SECONDS [extra libFuzzer flags...]
# TARGET is descriptor, stream, decoder, file, writer or codec (or fuzz_<name>). Builds the targets first
# (build.sh). Starts from the committed seeds (native/fuzz/seeds/<target>, made from the golden
# vectors) plus what earlier runs found (native/target/fuzz/corpus/<target>, kept between runs);
# a crash, oracle violation, leak or timeout is written to native/target/fuzz/artifacts/ and
# fails the run. Prints one summary line per target: executions, exec/s, coverage.
# HURRAY_FUZZ_OPT=3 runs the opt-level 3 build (build.sh; for long runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
native=$(cd "$here/.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 descriptor|stream|decoder|file|writer|codec|all SECONDS [libFuzzer flags]" >&2; exit 64; }
what=$1 secs=$2
shift 2
"$here/build.sh" >/dev/null
out="$native/target/fuzz"
bin="$out/bin${HURRAY_FUZZ_OPT:-}" # build.sh's output for that optimisation level
# Each allocation records a short stack (2 frames, not 30): unwinding and storing the stacks of
# the library's many small allocations was a fifth of every execution. Reproducing an artifact
# with the binary directly (ASAN_OPTIONS unset) gives full stacks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=2}
mkdir -p "$out/artifacts" "$out/logs"
targets=()
if [ "$what" = all ]; then
  for s in "$here"/fuzz_*.c; do n=$(basename "$s" .c); [ "$n" = fuzz_common ] || targets+=("$n"); done
else
  targets=("fuzz_${what#fuzz_}")
fi
status=0
for t in "${targets[@]}"; do
  corpus="$out/corpus/$t"
  mkdir -p "$corpus"
  log="$out/logs/$t.log"
  set +e
  "$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$t-" "$@" "$corpus" "$here/seeds/$t" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
  rate=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  if [ $rc -ne 0 ]; then
    status=1
    echo "$t: FAILED (exit $rc) after ${execs:-?} executions; log $log" >&2
    grep -E 'oracle violated|ERROR|SUMMARY|panicked' "$log" | head -5 >&2 || true
  else
    echo "$t: ${execs:-0} executions in ${secs} s (${rate:-0} exec/s), coverage ${cov:-0} edges, corpus $(ls "$corpus" | wc -l) inputs"
  fi
done
exit $status
