"""Hurray element types and their numpy dtypes.

The codes and widths are the C ABI's (``HURRAY_DTYPE_*``, docs/spec/descriptor.md §Codes).
bfloat16, the fp8 types and e8m0 are ``ml_dtypes`` dtypes when that package is installed and
raw unsigned integers of the same width otherwise. Packed sub-byte types (int4, uint4, fp4,
fp6) have no zero-copy numpy form: their views are the packed bytes as ``uint8``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

try:
    import ml_dtypes as _ml
except ImportError:  # optional
    _ml = None


class DType(NamedTuple):
    """One element type: its code, format name, width in bits, and whether it is packed
    below a byte."""

    code: int
    name: str
    bits: int

    @property
    def packed(self) -> bool:
        return self.bits < 8

    def __str__(self) -> str:
        return self.name


_TABLE = [
    (0, "bool", 8, "bool"),
    (1, "int8", 8, "int8"),
    (2, "int16", 16, "int16"),
    (3, "int32", 32, "int32"),
    (4, "int64", 64, "int64"),
    (5, "uint8", 8, "uint8"),
    (6, "uint16", 16, "uint16"),
    (7, "uint32", 32, "uint32"),
    (8, "uint64", 64, "uint64"),
    (9, "float16", 16, "float16"),
    (10, "bfloat16", 16, None),
    (11, "float32", 32, "float32"),
    (12, "float64", 64, "float64"),
    (13, "complex64", 64, "complex64"),
    (14, "complex128", 128, "complex128"),
    (15, "float8_e4m3fn", 8, None),
    (16, "float8_e5m2", 8, None),
    (17, "int4", 4, None),
    (18, "uint4", 4, None),
    (19, "float8_e4m3fnuz", 8, None),
    (20, "float8_e5m2fnuz", 8, None),
    (21, "float8_e3m4", 8, None),
    (22, "float6_e2m3fn", 6, None),
    (23, "float6_e3m2fn", 6, None),
    (24, "float4_e2m1fn", 4, None),
    (25, "float8_e8m0fnu", 8, None),
]

BY_CODE: dict[int, DType] = {c: DType(c, n, b) for c, n, b, _ in _TABLE}
BY_NAME: dict[str, DType] = {d.name: d for d in BY_CODE.values()}
BY_NAME["float8_e8m0"] = BY_CODE[25]

_RAW = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16)}
_NUMPY: dict[int, np.dtype] = {}
_FROM_NUMPY: dict[np.dtype, DType] = {}
for _c, _n, _b, _np in _TABLE:
    if _np is not None:
        _NUMPY[_c] = np.dtype(_np)
    elif _ml is not None and _b >= 8 and hasattr(_ml, _n):
        _NUMPY[_c] = np.dtype(getattr(_ml, _n))
    if _c in _NUMPY:
        _FROM_NUMPY[_NUMPY[_c]] = BY_CODE[_c]

# ml_dtypes' unpacked sub-byte types (one element per byte): sent by packing through the core.
UNPACKED: dict[np.dtype, DType] = {}
if _ml is not None:
    for _n in ("int4", "uint4", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"):
        if hasattr(_ml, _n):
            UNPACKED[np.dtype(getattr(_ml, _n))] = BY_NAME[_n]


def lookup(dtype: object) -> DType:
    """A ``DType`` from a code, a format name, a ``DType`` or a numpy dtype."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, int):
        try:
            return BY_CODE[dtype]
        except KeyError:
            raise ValueError(f"unknown Hurray element type code {dtype}") from None
    if isinstance(dtype, str) and dtype in BY_NAME:
        return BY_NAME[dtype]
    try:
        nd = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"not an element type: {dtype!r}") from None
    d = _FROM_NUMPY.get(nd) or UNPACKED.get(nd)
    if d is None:
        raise ValueError(f"numpy dtype {nd} has no Hurray element type")
    return d


def numpy_dtype(d: DType) -> np.dtype:
    """The numpy dtype of ``d``'s elements: the natural one, an ``ml_dtypes`` one, or a raw
    unsigned integer of the same width (``uint8`` for packed types, whose views are bytes)."""
    nd = _NUMPY.get(d.code)
    if nd is not None:
        return nd
    return _RAW.get(d.bits, np.dtype(np.uint8))


def has_exact_numpy(d: DType) -> bool:
    """Whether ``numpy_dtype(d)`` is the element type itself (not a raw stand-in)."""
    return d.code in _NUMPY
