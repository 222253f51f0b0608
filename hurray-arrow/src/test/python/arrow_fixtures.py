"""Arrow IPC fixtures for hurray-arrow's tests, written by pyarrow itself, and the checks of the
files the Java side writes back.

  python3 arrow_fixtures.py write DIR    writes DIR/*.arrow, DIR/*.arrows and DIR/expected/
  python3 arrow_fixtures.py check DIR    loads DIR/java/*.arrow(s) and compares them with DIR/*

expected/KEY.bin holds the C-order little-endian bytes of what pyarrow's to_numpy_ndarray()
returns for a fixed-shape column (KEY = FILE.COLUMN) or of one variable-shape row
(KEY = FILE.COLUMN.ROW); expected/index.json gives each key's dtype and shape.
"""
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

DTYPES = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(),
}


def npdtype(t):
    """numpy's dtype for an Arrow value type (without pandas, which to_pandas_dtype needs)."""
    for name, v in DTYPES.items():
        if v == t:
            return np.dtype(name)
    raise TypeError(t)


class VariableShapeTensorType(pa.ExtensionType):
    """arrow.variable_shape_tensor, which pyarrow 25 reads but has no constructor for."""

    def __init__(self, value_type, ndim, dim_names=None, permutation=None, uniform_shape=None):
        self.params = {k: v for k, v in (("dim_names", dim_names), ("permutation", permutation),
                                         ("uniform_shape", uniform_shape)) if v is not None}
        storage = pa.struct([pa.field("data", pa.list_(value_type)), pa.field("shape", pa.list_(pa.int32(), ndim))])
        super().__init__(storage, "arrow.variable_shape_tensor")

    def __arrow_ext_serialize__(self):
        return json.dumps(self.params).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        p = json.loads(serialized.decode() or "{}")
        return cls(storage_type.field("data").type.value_type, storage_type.field("shape").type.list_size, **p)


def values(dtype, count, seed):
    """Deterministic values covering each type's extremes (and -0, inf, nan for floats)."""
    rng = np.random.default_rng(seed)
    npt = np.dtype(dtype)
    if npt.kind == "f":
        v = rng.standard_normal(count).astype(npt)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0], dtype=npt)
        v[: min(count, len(special))] = special[: min(count, len(special))]
        return v
    info = np.iinfo(npt)
    v = rng.integers(info.min, info.max, size=count, dtype=npt, endpoint=True)
    v[:1] = info.min
    v[1:2] = info.max
    return v


def fixed(value_type, shape, rows, seed, dim_names=None, permutation=None, nulls=()):
    t = pa.fixed_shape_tensor(value_type, shape, dim_names=dim_names, permutation=permutation)
    size = int(np.prod(shape)) if len(shape) else 1
    if value_type == pa.bool8():
        flat = (np.arange(rows * size) % 3 == 0).astype(np.int8)
        storage_values = pa.ExtensionArray.from_storage(pa.bool8(), pa.array(flat, pa.int8()))
    else:
        flat = values(npdtype(value_type), rows * size, seed)
        storage_values = pa.array(flat, value_type)
    mask = np.zeros(rows, dtype=bool)
    mask[list(nulls)] = True
    storage = pa.FixedSizeListArray.from_arrays(storage_values, size, mask=pa.array(mask) if nulls else None)
    return pa.ExtensionArray.from_storage(t, storage)


def variable(value_type, shapes, seed, nulls=(), **params):
    ndim = len(shapes[0])
    t = VariableShapeTensorType(value_type, ndim, **params)
    data, rows = [], []
    for i, s in enumerate(shapes):
        n = int(np.prod(s)) if ndim else 1
        v = values(npdtype(value_type), n, seed + i)
        data.append(None if i in nulls else v.tolist())
        rows.append(None if i in nulls else list(s))
    storage = pa.StructArray.from_arrays(
        [pa.array([d if d is not None else [] for d in data], pa.list_(value_type)),
         pa.array([s if s is not None else [0] * ndim for s in rows], pa.list_(pa.int32(), ndim))],
        fields=list(t.storage_type), mask=pa.array([i in nulls for i in range(len(shapes))]))
    return pa.ExtensionArray.from_storage(t, storage)


def save(path, table, chunk=None, stream=False):
    opener = ipc.new_stream if stream else ipc.new_file
    with pa.OSFile(path, "wb") as f, opener(f, table.schema) as w:
        w.write_table(table, max_chunksize=chunk)


def tables():
    """FILE -> (table, rows per record batch)."""
    t = {}
    t["dtypes"] = (pa.table({n: fixed(v, (2, 3), 5, i) for i, (n, v) in enumerate(DTYPES.items())}
                            | {"bool8": fixed(pa.bool8(), (2, 3), 5, 99)}), 2)
    t["perm"] = (pa.table({
        "chw": fixed(pa.float32(), (2, 3, 4), 3, 7, dim_names=["C", "H", "W"], permutation=[2, 0, 1]),
        "names": fixed(pa.int16(), (4, 2), 3, 8, dim_names=["rows", "cols"]),
    }), None)
    t["ranks"] = (pa.table({"scalar": fixed(pa.int32(), (), 4, 3), "vector": fixed(pa.float64(), (5,), 4, 4)}), 3)
    t["empty"] = (pa.table({"fixed": fixed(pa.float32(), (768,), 0, 1),
                            "var": variable(pa.int32(), [(1, 1)], 1).slice(0, 0)}), None)
    t["variable"] = (pa.table({
        "v": variable(pa.float32(), [(2, 3), (1, 3), (0, 3), (4, 3)], 11, dim_names=["H", "W"], uniform_shape=[None, 3]),
        "p": variable(pa.int64(), [(2, 3), (3, 1), (1, 1), (2, 2)], 21, permutation=[1, 0]),
        "r0": variable(pa.uint8(), [(), (), (), ()], 31),
    }), 3)
    t["nulls"] = (pa.table({"f": fixed(pa.float32(), (2,), 3, 5, nulls=(1,)),
                            "v": variable(pa.float32(), [(1,), (2,), (3,)], 5, nulls=(2,))}), None)
    t["named"] = (pa.table({"name": pa.array(["a", "b", "c"]), "tensor": fixed(pa.float32(), (4,), 3, 6)}), 2)
    t["twocols"] = (pa.table({"name": pa.array(["a", "b"]), "x": fixed(pa.int32(), (2,), 2, 6),
                              "y": variable(pa.float64(), [(1,), (3,)], 6)}), None)
    t["bitbool"] = (pa.table({"b": pa.ExtensionArray.from_storage(
        pa.fixed_shape_tensor(pa.bool_(), (2,)), pa.array([[True, False]], pa.list_(pa.bool_(), 2)))}), None)
    return t


def expected(table, file):
    out = {}
    for col in table.column_names:
        arr = table.column(col).combine_chunks()
        if isinstance(arr.type, pa.FixedShapeTensorType):
            if arr.null_count == 0 and arr.type.value_type != pa.bool_():
                out[f"{file}.{col}"] = logical(arr)
        elif isinstance(arr.type, VariableShapeTensorType):
            for i in range(len(arr)):
                if arr.is_null()[i].as_py():
                    continue
                row = arr.storage[i]
                shape = row["shape"].as_py()
                data = np.array(row["data"].as_py(), dtype=npdtype(arr.type.storage_type.field("data").type.value_type))
                nd = data.reshape(shape)
                perm = arr.type.params.get("permutation")
                if perm is not None:
                    nd = nd.transpose(perm)
                out[f"{file}.{col}.{i}"] = nd.copy(order="C")
    return out


def flat(arr):
    """The storage's element values (the bytes of bool8 as int8)."""
    values = arr.storage.flatten()
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    return np.asarray(values)


def logical(arr):
    """A fixed-shape column as the spec defines it: rows of the physical shape, dimensions permuted.

    Not to_numpy_ndarray(): for permutations that are not their own inverse (e.g. [2, 0, 1]),
    pyarrow 25 returns strides that do not address the storage's elements one to one.
    """
    nd = flat(arr).reshape((len(arr),) + tuple(arr.type.shape))
    perm = arr.type.permutation
    if perm is not None:
        nd = nd.transpose([0] + [p + 1 for p in perm])
    involution = perm is None or all(perm[perm[i]] == i for i in range(len(perm)))
    if involution and arr.type.value_type != pa.bool8():
        pyarrow_view = arr.to_numpy_ndarray()
        assert pyarrow_view.shape == nd.shape and pyarrow_view.tobytes() == nd.tobytes()
    return nd.copy(order="C")


def write(d):
    os.makedirs(os.path.join(d, "expected"), exist_ok=True)
    index = {}
    for file, (table, chunk) in tables().items():
        save(os.path.join(d, file + ".arrow"), table, chunk)
        save(os.path.join(d, file + ".arrows"), table, chunk, stream=True)
        for key, nd in expected(table, file).items():
            with open(os.path.join(d, "expected", key + ".bin"), "wb") as f:
                f.write(nd.astype(nd.dtype.newbyteorder("<")).tobytes())
            index[key] = {"dtype": str(nd.dtype), "shape": list(nd.shape)}
    hostile(d)
    direct(d)
    with open(os.path.join(d, "expected", "index.json"), "w") as f:
        json.dump(index, f, indent=1)


def raw(path, storage, meta):
    """A column whose field metadata declares an extension with arbitrary metadata bytes."""
    field = pa.field("t", storage.type, metadata={b"ARROW:extension:name": meta[0], b"ARROW:extension:metadata": meta[1]})
    table = pa.Table.from_arrays([storage], schema=pa.schema([field]))
    save(path, table)


def hostile(d):
    h = os.path.join(d, "hostile")
    os.makedirs(h, exist_ok=True)
    fsl = pa.array([[1.0, 2.0, 3.0, 4.0]], pa.list_(pa.float32(), 4))
    name = b"arrow.fixed_shape_tensor"
    raw(os.path.join(h, "badjson.arrow"), fsl, (name, b'{"shape": [2, 2'))
    raw(os.path.join(h, "notobject.arrow"), fsl, (name, b'[2, 2]'))
    raw(os.path.join(h, "noshape.arrow"), fsl, (name, b'{"dim_names": ["a", "b"]}'))
    raw(os.path.join(h, "product.arrow"), fsl, (name, b'{"shape": [2, 3]}'))
    raw(os.path.join(h, "negative.arrow"), fsl, (name, b'{"shape": [-2, -2]}'))
    raw(os.path.join(h, "huge.arrow"), fsl, (name, b'{"shape": [4294967296, 4294967296, 4]}'))
    raw(os.path.join(h, "badperm.arrow"), fsl, (name, b'{"shape": [2, 2], "permutation": [0, 0]}'))
    raw(os.path.join(h, "dimnames.arrow"), fsl, (name, b'{"shape": [2, 2], "dim_names": ["a"]}'))
    st = pa.StructArray.from_arrays([pa.array([[1.0, 2.0]], pa.list_(pa.float32())), pa.array([[-1, -2]], pa.list_(pa.int32(), 2))],
                                    names=["data", "shape"])
    raw(os.path.join(h, "varnegative.arrow"), st, (b"arrow.variable_shape_tensor", b"{}"))
    st = pa.StructArray.from_arrays([pa.array([[1.0, 2.0]], pa.list_(pa.float32())), pa.array([[3, 5]], pa.list_(pa.int32(), 2))],
                                    names=["data", "shape"])
    raw(os.path.join(h, "varproduct.arrow"), st, (b"arrow.variable_shape_tensor", b"{}"))
    raw(os.path.join(h, "varuniform.arrow"), pa.StructArray.from_arrays(
        [pa.array([[1.0, 2.0]], pa.list_(pa.float32())), pa.array([[1, 2]], pa.list_(pa.int32(), 2))], names=["data", "shape"]),
        (b"arrow.variable_shape_tensor", b'{"uniform_shape": [2, null]}'))
    raw(os.path.join(h, "varjson.arrow"), st, (b"arrow.variable_shape_tensor", b'{"permutation": "no"}'))


def direct(d):
    """DIR/direct/: one-batch files for ArrowTables.toHurray(path, writer), sent from the file or not."""
    h = os.path.join(d, "direct")
    os.makedirs(h, exist_ok=True)
    single = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "emb": fixed(pa.float32(), (768,), 4, 12)})
    save(os.path.join(h, "single.arrow"), single)
    save(os.path.join(h, "sliced.arrow"), pa.table({"emb": fixed(pa.float64(), (3, 2), 6, 13).slice(2, 3)}))
    with pa.OSFile(os.path.join(h, "compressed.arrow"), "wb") as f, \
            ipc.new_file(f, single.schema, options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(single)
    save(os.path.join(h, "fixednulls.arrow"), pa.table({"f": fixed(pa.float32(), (2,), 3, 5, nulls=(1,))}))


def check(d):
    """Every DIR/java/FILE.arrow(s) must equal pyarrow's own DIR/FILE.arrow column by column."""
    java = os.path.join(d, "java")
    checked = 0
    for fname in sorted(os.listdir(java)):
        stem, ext = os.path.splitext(fname)
        opener = ipc.open_stream if ext == ".arrows" else ipc.open_file
        with pa.memory_map(os.path.join(java, fname)) as f:
            got = opener(f).read_all()
        ref_name = stem.split("-")[0]
        with pa.memory_map(os.path.join(d, ref_name + ".arrow")) as f:
            want = ipc.open_file(f).read_all()
        for col in got.column_names:
            g, w = got.column(col).combine_chunks(), want.column(col).combine_chunks()
            assert str(g.type) == str(w.type), f"{fname}:{col}: type {g.type} != {w.type}"
            if isinstance(g.type, pa.FixedShapeTensorType):
                assert flat(g).tobytes() == flat(w).tobytes(), f"{fname}:{col}: values differ"
                exp = os.path.join(d, "expected", f"{ref_name}.{col}.bin")
                assert logical(g).tobytes() == open(exp, "rb").read(), f"{fname}:{col}: differs from Hurray's bytes"
            elif isinstance(g.type, pa.BaseExtensionType):
                gs, ws = g.storage, w.storage
                assert gs.field("shape").equals(ws.field("shape")), f"{fname}:{col}: shapes differ"
                assert gs.field("data").offsets.equals(ws.field("data").offsets), f"{fname}:{col}: offsets differ"
                assert np.asarray(gs.field("data").flatten()).tobytes() == np.asarray(ws.field("data").flatten()).tobytes()
            else:
                assert g.equals(w), f"{fname}:{col}: differs"
            checked += 1
    print(f"checked {checked} columns")


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](sys.argv[2])
