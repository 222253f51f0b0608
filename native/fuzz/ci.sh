#!/usr/bin/env bash
# The build's fuzzing hook (native/pom.xml, phase verify): runs every target for
# $HURRAY_FUZZ_SECONDS seconds each (CI sets 45: about 4 minutes with the build). Unset or 0,
# as for a developer's `./mvnw verify`, it does nothing.
set -euo pipefail
secs=${HURRAY_FUZZ_SECONDS:-0}
if [ "$secs" = 0 ]; then
  echo "fuzzing skipped (set HURRAY_FUZZ_SECONDS=45 to run every target; .ci/run does)"
  exit 0
fi
exec "$(dirname "$0")/run.sh" all "$secs"
