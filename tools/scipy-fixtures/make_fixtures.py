#!/usr/bin/python3
"""Writes the scipy.sparse .npz test fixtures of hurray-java-cli with scipy itself.

Run with Debian's python3-scipy:
    /usr/bin/python3 tools/scipy-fixtures/make_fixtures.py [OUT_DIR]
(default OUT_DIR: hurray-java-cli/src/test/resources/scipy). Deterministic (fixed seed, fixed
zip timestamps).

Every fixture is written by scipy.sparse.save_npz (uncompressed, and one compressed), and
manifest.json lists, per file, what scipy reports: format, shape, dtype, nnz (stored entries;
BSR: stored blocks), block shape, the index dtype, and the dense matrix (toarray(), with
duplicates summed) as a flat row-major list, which the Java tests compare densify against.
"""
import json
import os
import sys
import time

import numpy as np
import scipy
import scipy.sparse as sp


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "hurray-java-cli", "src", "test", "resources", "scipy")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261201)
    dense = rng.integers(-9, 10, size=(6, 8)).astype(np.float32)
    dense[rng.random((6, 8)) < 0.6] = 0
    fixtures = {
        "csr_f32": sp.csr_matrix(dense),
        "csc_f64": sp.csc_matrix(dense.astype(np.float64)),
        "coo_i32": sp.coo_matrix(dense.astype(np.int32)),
        "bsr_f32_2x4": sp.bsr_matrix(dense, blocksize=(2, 4)),
    }
    # A COO matrix with a duplicate entry, not in canonical order: toarray() sums duplicates.
    fixtures["coo_dup_f64"] = sp.coo_matrix(
        (np.array([1.5, 2.0, -0.5]), (np.array([2, 0, 2]), np.array([1, 3, 1]))), shape=(3, 4))
    manifest = {"scipy": scipy.__version__, "numpy": np.__version__, "files": []}
    # Fixed zip timestamps so reruns give identical bytes.
    os.environ["SOURCE_DATE_EPOCH"] = "315619200"
    for name, m in fixtures.items():
        for compressed in (False, True) if name == "csr_f32" else (False,):
            fname = name + ("_compressed" if compressed else "") + ".npz"
            path = os.path.join(out, fname)
            sp.save_npz(path, m, compressed=compressed)
            t = time.mktime((1980, 1, 2, 0, 0, 0, 0, 0, 0))
            os.utime(path, (t, t))
            entry = {
                "file": fname,
                "format": m.format,
                "shape": list(m.shape),
                "dtype": str(m.dtype),
                "nnz": int(m.data.shape[0]) if m.format == "bsr" else int(m.nnz),
                "block_shape": list(m.blocksize) if m.format == "bsr" else [0, 0],
                "index_dtype": str((m.row if m.format == "coo" else m.indices).dtype),
                "dense": [float(x) for x in m.toarray().ravel()],
            }
            manifest["files"].append(entry)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("wrote", len(manifest["files"]), "fixtures to", out)


if __name__ == "__main__":
    main()
