"""Round trips of every element type and layout through the stream and the container."""

import numpy as np
import pytest

import hurray
from conftest import STREAMS, golden, need


@pytest.mark.parametrize("name", list(STREAMS))
def test_golden_streams_read_and_rewrite_byte_for_byte(name):
    data = golden(name)
    count, checksums = STREAMS[name]
    tensors = list(hurray.StreamReader(data))
    assert len(tensors) == count
    w = hurray.StreamWriter(payload_checksums=checksums)
    for t in tensors:
        w.write(t)
    w.finish()
    assert w.getvalue() == data


def test_golden_stream_covers_every_v1_element_type():
    seen = {str(t.dtype) for t in hurray.StreamReader(golden("stream_v1_checksums.hrry"))}
    seen |= {str(t.dtype) for t in hurray.StreamReader(golden("stream_v2_quant.hrry"))}
    assert seen >= {d.name for d in hurray.DType.__mro__[0].__subclasses__()} | {
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
        "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "int4", "uint4",
        "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e3m4", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
        "float8_e8m0fnu"}


def roundtrip(*tensors, **writer):
    w = hurray.StreamWriter(**writer)
    for t in tensors:
        w.write(t)
    w.finish()
    return list(hurray.StreamReader(w.getvalue()))


NUMPY_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
               "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", NUMPY_TYPES)
def test_numpy_dtypes_round_trip(dtype):
    a = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    (b,) = roundtrip(hurray.from_numpy(a, name=f"t/{dtype}", metadata={"k": "v", "raw": b"\x00\xff"}))
    assert b.dtype.name == dtype and b.shape == (2, 3, 4) and b.name == f"t/{dtype}"
    assert b.metadata == {"k": b"v", "raw": b"\x00\xff"}
    np.testing.assert_array_equal(b.numpy(), a)


ML_TYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e3m4",
            "float8_e8m0fnu"]


@pytest.mark.parametrize("dtype", ML_TYPES)
def test_ml_dtypes_round_trip(dtype):
    ml = need("ml_dtypes")
    a = np.array([0.5, 1, 2, 4, 0.25, 8], dtype=np.float32).astype(getattr(ml, dtype)).reshape(2, 3)
    (b,) = roundtrip(hurray.from_numpy(a))
    assert b.dtype.name == dtype
    assert b.numpy().dtype == a.dtype
    np.testing.assert_array_equal(b.numpy().view(np.uint8), a.view(np.uint8))
    np.testing.assert_array_equal(b.dequantize(), a.astype(np.float32))


@pytest.mark.parametrize("dtype", ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"])
def test_packed_types_are_packed_by_the_core(dtype):
    ml = need("ml_dtypes")
    values = np.array([0, 1, 2, 3, 1, 0, 2], dtype=np.float32)
    a = values.astype(getattr(ml, dtype))
    t = hurray.from_numpy(a)
    (b,) = roundtrip(t)
    assert b.dtype.name == dtype and b.shape == (7,) and b.dtype.packed
    assert b.numpy().dtype == np.uint8 and b.numpy().size == (7 * b.dtype.bits + 7) // 8
    np.testing.assert_array_equal(b.dequantize(), values)


@pytest.mark.parametrize("dtype", ["int4", "uint4"])
def test_packed_integers_from_their_packed_bytes(dtype):
    packed = np.array([0x21, 0x43, 0x05], np.uint8)  # 1, 2, 3, 4, 5: the lower index in the low nibble
    (b,) = roundtrip(hurray.from_buffer(packed, dtype, (5,), name="i4"))
    assert b.dtype.name == dtype and b.shape == (5,)
    np.testing.assert_array_equal(b.numpy(), packed)
    np.testing.assert_array_equal(b.dequantize(), np.arange(1, 6, dtype=np.float32))
    with pytest.raises(hurray.HurrayError):
        hurray.from_buffer(packed[:2], dtype, (5,))


def test_layouts_round_trip():
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    cases = {
        "row-major": base,
        "column-major": np.asfortranarray(base),
        "strided": base.transpose(2, 0, 1),
        "reversed": base[::-1, :, ::-2],
        "scalar": np.float32(3.5),
        "empty": np.zeros((2, 0, 3), np.int32),
    }
    got = roundtrip(*(hurray.from_numpy(a, name=k) for k, a in cases.items()))
    for t in got:
        a = np.asarray(cases[t.name])
        np.testing.assert_array_equal(t.numpy(), a)
        assert t.shape == a.shape
    layouts = {t.name: t.layout for t in got}
    assert layouts["column-major"] == "column-major"
    assert layouts["strided"] == "strided" and layouts["reversed"] == "strided"
    assert layouts["row-major"] == "row-major"


@pytest.mark.parametrize("kind", ["nf4", "mx", "nvfp4", "group-affine", "gguf-q8_0", "gguf-q4_0"])
def test_quantized_kinds_round_trip_and_dequantize_in_the_core(kind):
    x = ((np.arange(4 * 64) * 7919) % 1000 / 100 - 5).astype(np.float32).reshape(4, 64)
    q = hurray.quantize(x, kind=kind, name=f"q/{kind}", block=32 if kind == "group-affine" else None)
    (b,) = roundtrip(q)
    assert b.quantization.kind == kind and b.name == f"q/{kind}"
    y = b.dequantize()
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_array_equal(y, q.dequantize())
    assert np.abs(y - x).max() <= np.abs(x).max() * 0.35  # 4-bit kinds are coarse; values stay in range


def test_golden_quantized_tensors_match_what_python_quantizes():
    # stream_v2_quant.hrry: NF4 of ((i*7919) % 1000)/100 - 5 over [4, 64] is its first tensor.
    first = next(iter(hurray.StreamReader(golden("stream_v2_quant.hrry"))))
    x = (((np.arange(256) * 7919) % 1000).astype(np.float32) / np.float32(100) - np.float32(5)).reshape(4, 64)
    mine = hurray.quantize(x, kind="nf4", name=first.name)
    assert [bytes(b) for b in mine.buffers()] == [bytes(b) for b in first.buffers()]


def test_sparse_and_paged_densify_in_the_core():
    items = list(hurray.StreamReader(golden("stream_v2_sparse_composite.hrry")).items())
    csr, layer = items
    np.testing.assert_array_equal(csr.densify(), np.array([[0, 1.5, 0, 0], [0, 0, -2, 3]], np.float32))
    assert csr.sparse.nnz == 3 and csr.layout == "csr"
    cache = layer["kv"]["cache"]
    assert cache.layout == "paged" and cache.paging.page_size == 2
    dense = cache.densify()
    assert dense.shape == (5, 4)
    with pytest.raises(ValueError):
        csr.numpy()


def test_csr_and_coo_from_python():
    m = np.array([[0, 1.5, 0, 0], [0, 0, -2, 3]], np.float32)
    c = hurray.csr(np.array([1.5, -2, 3], np.float32), np.array([0, 1, 3], np.int32), np.array([1, 2, 3], np.int32),
                   (2, 4), name="csr")
    o = hurray.coo(np.array([1.5, -2, 3], np.float32), np.array([[0, 1, 1], [1, 2, 3]], np.int64), (2, 4))
    a, b = roundtrip(c, o)
    np.testing.assert_array_equal(a.densify(), m)
    np.testing.assert_array_equal(b.densify(), m)
    with pytest.raises(hurray.HurrayError):
        hurray.csr(np.ones(3, np.float32), np.array([0, 1, 9], np.int32), np.array([1, 2, 3], np.int32), (2, 4)).densify()


def test_composites_round_trip_whole():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = hurray.Composite("layer0", {
        "weight": hurray.from_numpy(w),
        "kv": hurray.Composite(None, {"cache": hurray.from_numpy(np.ones(4, np.int8))}),
    })
    out = hurray.StreamWriter()
    out.write(c)
    out.write(hurray.from_numpy(np.zeros(2, np.uint8), name="after"))
    out.finish()
    items = list(hurray.StreamReader(out.getvalue()).items())
    assert [type(i).__name__ for i in items] == ["Composite", "Tensor"]
    back = items[0]
    assert back.name == "layer0" and list(back) == ["weight", "kv"]
    np.testing.assert_array_equal(back["weight"].numpy(), w)
    np.testing.assert_array_equal(back["kv"]["cache"].numpy(), np.ones(4, np.int8))
    flat = list(hurray.StreamReader(out.getvalue()))
    assert flat[0].composite.roles == ("weight", "kv") and flat[0].composite.member_count == 2


def test_stream_metadata():
    w = hurray.StreamWriter(metadata={"producer": "pytest", "bin": b"\x01\x02"})
    w.finish()
    r = hurray.StreamReader(w.getvalue())
    assert r.metadata == {"producer": b"pytest", "bin": b"\x01\x02"}
    assert list(r) == []


def test_from_numpy_does_not_copy_and_a_view_outlives_the_source():
    a = np.arange(16, dtype=np.float32)
    t = hurray.from_numpy(a)
    assert t.buffers()[0].ctypes.data == a.ctypes.data
    a[0] = 42
    assert t.numpy()[0] == 42


def test_unknown_dtype_is_refused():
    with pytest.raises(ValueError):
        hurray.from_numpy(np.array(["a", "b"]))
