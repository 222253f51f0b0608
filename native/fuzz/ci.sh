#!/usr/bin/env bash
# The build's reliability hook (native/pom.xml, phase verify), for CI: the C tests under
# ASan/UBSan/LSan and valgrind (src/c/sanitize.sh, ~1 min), then every fuzz target for
# $HURRAY_FUZZ_SECONDS seconds each (.ci/run sets 40: about 5 minutes in all with the builds).
# Unset or 0, as for a developer's `./mvnw verify`, it does nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${HURRAY_FUZZ_SECONDS:-0}
if [ "$secs" = 0 ]; then
  echo "sanitizers and fuzzing skipped (HURRAY_FUZZ_SECONDS=40 runs them; .ci/run sets it)"
  exit 0
fi
"$here/../../src/c/sanitize.sh"
exec "$here/run.sh" all "$secs"
