#!/usr/bin/env bash
# Fails if the repository cites documents that are not in it: the seed documents the project
# started from (the word "seed" followed by a three-digit number) or architecture decision
# records ("ADR-" and a number). Cite the section of docs/spec/*.md that states the rule instead. Scans tracked and untracked files
# that git does not ignore (so target/ folders are skipped); without git, every file outside
# target/ and .git/. Run by native/test.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Written with a character class so that this script does not match itself.
pattern='seeds? 0[0-9][0-9]|ADR-[0-9]'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits=$(git ls-files -z --cached --others --exclude-standard \
    | xargs -0 -r grep -I -n -i -E "$pattern" -- 2>/dev/null || true)
else
  hits=$(grep -r -I -n -i -E "$pattern" --exclude-dir=target --exclude-dir=.git . || true)
fi
if [ -n "$hits" ]; then
  echo "check-standalone: these lines cite documents outside the repository; cite docs/spec instead:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "check-standalone: no citations of outside documents"
