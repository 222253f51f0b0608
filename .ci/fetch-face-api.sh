#!/usr/bin/env bash
# Fetches the npm package @vladmandic/face-api 1.7.15 (MIT) and unpacks its model/ folder into a
# cache, for the hurray-java-cli tests that use the models too large to commit (tests that find
# no cache skip with a message). Idempotent: does nothing when the cache is complete.
#   cache: $HURRAY_FACE_API_DIR, default ~/.cache/hurray/face-api-1.7.15 (models in model/)
# Needs npm (any registry mirror npm is configured for); verifies the tarball's sha256.
set -euo pipefail
version=1.7.15
sha256=0d77fffeef362ef9c0939cf6c567f3a2e8e177f114fa257a3270cbd2e509b031
dest=${HURRAY_FACE_API_DIR:-$HOME/.cache/hurray/face-api-$version}
if [ -f "$dest/.complete" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "fetch-face-api: npm is required" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@vladmandic/face-api@$version" >/dev/null)
tgz="$tmp/vladmandic-face-api-$version.tgz"
echo "$sha256  $tgz" | sha256sum --check --quiet
mkdir "$tmp/x"
tar -xzf "$tgz" -C "$tmp/x" package/model package/LICENSE package/package.json
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.partial"
mv "$tmp/x/package" "$dest.partial"
touch "$dest.partial/.complete"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "fetch-face-api: @vladmandic/face-api@$version models in $dest/model"
