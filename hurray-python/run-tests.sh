#!/usr/bin/env bash
# Maven's hook for the Python package (hurray-python/pom.xml), usable by hand:
#   run-tests.sh install   pip-installs this package, with the freshly built libhurray, into
#                          target/site (pip --target: nothing outside target/ changes)
#   run-tests.sh test      runs pytest against that installation
# Python: $HURRAY_PYTHON, else the python3 on PATH. It needs numpy, pytest, hypothesis and setuptools 70.1+
# (tools/setup.sh installs them, with the optional ml_dtypes, torch and safetensors).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
py=${HURRAY_PYTHON:-python3}
site="$here/target/site"
case "${1:-}" in
  install)
    # setuptools 70.1 or later builds the wheel itself (older ones also need the wheel package).
    "$py" -c 'import numpy, pytest, hypothesis, setuptools
assert tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (70, 1)' 2>/dev/null || {
      echo "hurray-python: $py lacks numpy, pytest, hypothesis or setuptools 70.1 or later: run tools/setup.sh," \
        "or $py -m pip install -U numpy pytest hypothesis 'setuptools>=70.1'" >&2; exit 1; }
    lib="$root/native/target/dist/libhurray.so"
    [ "$(uname -s)" = Darwin ] && lib="$root/native/target/dist/libhurray.dylib"
    [ -f "$lib" ] || { echo "hurray-python: $lib is missing: run native/build.sh" >&2; exit 1; }
    rm -rf "$site" "$here/build"
    log=$(HURRAY_LIBRARY_PATH="$lib" "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps \
      --no-build-isolation --no-index --target "$site" "$here" 2>&1) || { printf '%s\n' "$log" >&2
      echo "hurray-python: pip could not install the package (above)" >&2; exit 1; }
    printf '%s\n' "$log" | grep -v "is ignored: it is neither" | grep . >&2 || true
    [ -f "$site/hurray/_native/$(basename "$lib")" ] || { echo "hurray-python: the install did not bundle libhurray" >&2; exit 1; }
    echo "hurray-python: installed into $site with $("$py" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    ;;
  test)
    cd "$here"
    # The installed copy, not src/: what pip installs is what is tested.
    env -u HURRAY_LIBRARY_PATH PYTHONPATH="$site" "$py" -m pytest -q -p no:cacheprovider tests
    ;;
  *) echo "usage: run-tests.sh install|test" >&2; exit 2 ;;
esac
