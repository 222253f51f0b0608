#!/usr/bin/python3
"""Writes the npy/npz test fixtures of hurray-java-cli and a manifest of what NumPy sees in them.

Run with Debian's python3-numpy:  /usr/bin/python3 tools/npy-fixtures/make_fixtures.py [OUT_DIR]
(default OUT_DIR: hurray-java-formats/src/test/resources/npy). Deterministic: a fixed seed, and
values drawn as raw bit patterns (so floats include NaNs with payloads, infinities, -0.0 and
subnormals), which is what a bit-exact reader has to get right.

manifest.json lists every file with what NumPy itself reports:
  kind      "array" (an .npy the reader must accept), "reject" (it must refuse it), "npz"
  dtype     the Hurray element type name the reader must produce
  shape     the array's shape
  layout    "row-major" or "column-major" (fortran_order)
  source_descr   the descr written in the file (e.g. ">f4")
  data_offset    where the array bytes start in the file (file size minus nbytes)
  storage_hex    the values as little-endian bytes in the file's own element order (C or F)
  c_order_hex    the values as little-endian bytes in C order
  sha256         of storage_hex's bytes
  expect    for "reject": a substring the error message must contain
"""
import hashlib
import json
import os
import sys
import time
import zipfile

import numpy as np

HURRAY_NAME = {
    "bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float16": "float16", "float32": "float32", "float64": "float64",
    "complex64": "complex64", "complex128": "complex128",
}


def random_array(rng, dtype, shape):
    """Values for every bit pattern class: integers and floats come from raw random bits."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt == np.bool_:
        return (rng.integers(0, 2, size=n, dtype=np.uint8).astype(np.bool_)).reshape(shape)
    raw = rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8)
    a = raw.view(dt.newbyteorder("<")).astype(dt.newbyteorder("="))
    if dt.kind in "fc" and n >= 4:
        flat = a.reshape(-1)
        specials = [0.0, -0.0, np.inf, -np.inf]
        for i, v in enumerate(specials[: min(4, n)]):
            flat[i] = v
    return a.reshape(shape)


def le_bytes(a, order):
    le = a.astype(a.dtype.newbyteorder("<"), copy=True)
    return le.tobytes(order=order)


def describe(path, a, name_dtype, fortran, descr, out_dir):
    size = os.path.getsize(path)
    storage = le_bytes(a, "F" if fortran else "C")
    return {
        "file": os.path.relpath(path, out_dir),
        "kind": "array",
        "dtype": HURRAY_NAME[name_dtype],
        "shape": list(a.shape),
        "layout": "column-major" if fortran else "row-major",
        "source_descr": descr,
        "data_offset": size - a.nbytes,
        "storage_hex": storage.hex(),
        "c_order_hex": le_bytes(a, "C").hex(),
        "sha256": hashlib.sha256(storage).hexdigest(),
    }


class _FixedClock:
    """Stands in for zipfile's clock so np.savez writes the same entry timestamps every run."""
    EPOCH = 946684800  # 2000-01-01T00:00:00Z

    @staticmethod
    def time():
        return float(_FixedClock.EPOCH)

    @staticmethod
    def localtime(_t=None):
        return time.gmtime(_FixedClock.EPOCH)


def savez_reproducibly(fn, path, arrays):
    real = zipfile.time
    zipfile.time = _FixedClock
    try:
        fn(path, **arrays)
    finally:
        zipfile.time = real


def save(path, a, version=None):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=version, allow_pickle=False)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "hurray-java-cli", "src", "test", "resources", "npy")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith((".npy", ".npz")) or f == "manifest.json":
            os.remove(os.path.join(out, f))
    rng = np.random.default_rng(20261129)
    entries = []

    for name in HURRAY_NAME:
        dt = np.dtype(name)
        variants = [
            ("c", (3, 4), False, "<"),
            ("f", (3, 4, 2), True, "<"),
            ("scalar", (), False, "<"),
            ("empty", (0, 3), False, "<"),
            ("empty_f", (2, 0, 4), True, "<"),
        ]
        if dt.itemsize > 1:
            variants += [("be_c", (5,), False, ">"), ("be_f", (2, 3), True, ">"), ("be_scalar", (), False, ">")]
        for tag, shape, fortran, order in variants:
            a = random_array(rng, dt, shape)
            if order == ">":
                a = a.astype(dt.newbyteorder(">"))
            if fortran:
                a = np.asfortranarray(a)
            path = os.path.join(out, f"{name}_{tag}.npy")
            save(path, a)
            descr = np.lib.format.dtype_to_descr(a.dtype)
            hdr_fortran = a.flags.f_contiguous and not a.flags.c_contiguous
            entries.append(describe(path, a, name, hdr_fortran, descr, out))

    # Header versions 2.0 and 3.0 (NumPy writes 1.0 unless asked or the header is huge).
    for version in [(2, 0), (3, 0)]:
        a = random_array(rng, np.float32, (4, 5))
        path = os.path.join(out, f"float32_v{version[0]}.npy")
        save(path, a, version=version)
        entries.append(describe(path, a, "float32", False, "<f4", out))

    # Rejected dtypes: the message must name them.
    rejects = [
        ("object.npy", np.array([1, "a", None], dtype=object), "'|O'"),
        ("structured.npy", np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")]), "structured"),
        ("unicode.npy", np.array(["ab", "c"]), "'<U2'"),
        ("bytes.npy", np.array([b"ab", b"c"]), "'|S2'"),
        ("datetime.npy", np.array(["2026-11-29"], dtype="datetime64[D]"), "'<M8[D]'"),
    ]
    for fname, a, expect in rejects:
        path = os.path.join(out, fname)
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, allow_pickle=True)
        entries.append({"file": fname, "kind": "reject", "expect": expect,
                        "source_descr": str(np.lib.format.dtype_to_descr(a.dtype))})

    # npz: stored (np.savez) and deflated (np.savez_compressed), mixing orders and byte orders.
    arrays = {
        "weights": random_array(rng, np.float32, (4, 3)),
        "bias": random_array(rng, np.float64, (3,)),
        "fortran": np.asfortranarray(random_array(rng, np.int16, (2, 5))),
        "big_endian": random_array(rng, np.uint32, (6,)).astype(">u4"),
        "mask": random_array(rng, np.bool_, (7,)),
        "scalar": random_array(rng, np.complex64, ()),
        "layer/0/kernel": random_array(rng, np.float16, (2, 2)),
    }
    for fname, fn in [("stored.npz", np.savez), ("deflated.npz", np.savez_compressed)]:
        path = os.path.join(out, fname)
        savez_reproducibly(fn, path, arrays)
        with zipfile.ZipFile(path) as z:
            names = [i.filename[:-4] for i in z.infolist()]
        members = []
        for n in names:
            a = arrays[n]
            fortran = a.flags.f_contiguous and not a.flags.c_contiguous
            storage = le_bytes(a, "F" if fortran else "C")
            members.append({
                "name": n,
                "dtype": HURRAY_NAME[a.dtype.newbyteorder("=").name],
                "shape": list(a.shape),
                "layout": "column-major" if fortran else "row-major",
                "source_descr": np.lib.format.dtype_to_descr(a.dtype),
                "storage_hex": storage.hex(),
                "c_order_hex": le_bytes(a, "C").hex(),
            })
        entries.append({"file": fname, "kind": "npz", "members": members})

    manifest = {"numpy_version": np.__version__, "generator": "tools/npy-fixtures/make_fixtures.py",
                "entries": entries}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"wrote {len(entries)} fixtures to {out}")


if __name__ == "__main__":
    main()
