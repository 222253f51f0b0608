#!/usr/bin/env bash
# Fetches real GGUF v3 files for the hurray-java-formats tests: the npm package
# node-llama-cpp 3.22.1 (MIT) ships llama/gitRelease.bundle, a git bundle of llama.cpp (MIT) whose
# models/ggml-vocab-*.gguf are vocabulary-only model files written by llama.cpp's own tools
# (0.6-15.8 MB each, string arrays of up to 262,144 entries). The script clones the bundle,
# copies those files into a cache, and writes manifest.json with what llama.cpp's own Python
# reader (gguf-py, same checkout) sees in them. Tests that find no cache skip with a message.
# Idempotent: does nothing when the cache is complete.
#   cache: $HURRAY_GGUF_DIR, default ~/.cache/hurray/llama-cpp-gguf
# Needs npm, git, python3 with numpy; verifies the tarball's sha256.
set -euo pipefail
version=3.22.1
sha256=a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f
here=$(cd "$(dirname "$0")/.." && pwd)
dest=${HURRAY_GGUF_DIR:-$HOME/.cache/hurray/llama-cpp-gguf}
if [ -f "$dest/.complete" ]; then
  exit 0
fi
for c in npm git python3; do
  command -v "$c" >/dev/null || { echo "fetch-gguf: $c is required" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
tgz="$tmp/node-llama-cpp-$version.tgz"
echo "$sha256  $tgz" | sha256sum --check --quiet
mkdir "$tmp/x"
tar -xzf "$tgz" -C "$tmp/x" package/llama/gitRelease.bundle
git clone -q "$tmp/x/package/llama/gitRelease.bundle" "$tmp/llama.cpp" 2>/dev/null
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.partial"
mkdir "$dest.partial"
cp "$tmp"/llama.cpp/models/ggml-vocab-*.gguf "$dest.partial/"
cp "$tmp/llama.cpp/LICENSE" "$dest.partial/LICENSE.llama.cpp"
python3 "$here/tools/gguf/manifest.py" "$tmp/llama.cpp" "$dest.partial"
touch "$dest.partial/.complete"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "fetch-gguf: $(ls "$dest"/*.gguf | wc -l) GGUF files from node-llama-cpp@$version in $dest"
