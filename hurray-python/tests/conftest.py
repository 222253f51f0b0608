"""Shared helpers: the golden vectors of the repository (src/golden) and optional packages."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "src" / "golden"


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def need(module: str):
    """The module, or a skip naming it (installed by tools/setup.sh)."""
    return pytest.importorskip(module, reason=f"{module} is not installed (tools/setup.sh installs it)")


STREAMS = {
    # file: (tensor count, written with payload checksums)
    "stream_v1_checksums.hrry": (35, True),
    "stream_v1_plain.hrry": (4, False),
    "stream_v1_empty.hrry": (0, False),
    "stream_v2_quant.hrry": (28, True),
    "stream_v2_sparse_composite.hrry": (7, True),
}

os.environ.setdefault("PYTHONHASHSEED", "0")
