"""Real DLPack consumers and producers: numpy and torch, without copies."""

import numpy as np
import pytest

import hurray
from conftest import golden, need


def received(dtype=np.float32, n=4096):
    w = hurray.StreamWriter()
    w.write(hurray.from_numpy(np.arange(n, dtype=dtype).reshape(-1, 16), name="x"))
    w.finish()
    return next(iter(hurray.StreamReader(w.getvalue())))


def test_numpy_from_dlpack_shares_memory():
    t = received()
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.buffers()[0].ctypes.data
    np.testing.assert_array_equal(a, np.arange(4096, dtype=np.float32).reshape(-1, 16))


def test_strided_and_column_major_export():
    base = np.arange(20, dtype=np.int16).reshape(4, 5)
    for a in (base.T, np.asfortranarray(base), base[::-1]):
        w = hurray.StreamWriter()
        w.write(hurray.from_numpy(a))
        w.finish()
        t = next(iter(hurray.StreamReader(w.getvalue())))
        np.testing.assert_array_equal(np.from_dlpack(t), a)


def test_legacy_capsule_for_old_consumers():
    t = received()
    cap = t.__dlpack__()  # no max_version: a pre-1.0 consumer
    assert "dltensor" in repr(cap) and "versioned" not in repr(cap)
    cap2 = t.__dlpack__(max_version=(1, 1))
    assert "dltensor_versioned" in repr(cap2)


def test_quantized_and_sparse_are_refused():
    q = next(iter(hurray.StreamReader(golden("stream_v2_quant.hrry"))))
    with pytest.raises((BufferError, hurray.HurrayError)):
        np.from_dlpack(q)


def test_torch_from_dlpack_of_received_tensors_without_copy():
    torch = need("torch")
    t = received()
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.buffers()[0].ctypes.data
    assert x.shape == (256, 16) and x.dtype == torch.float32
    assert float(x[1, 0]) == 16.0


def test_torch_bfloat16_round_trip_and_sent_through_from_dlpack():
    torch = need("torch")
    src = torch.arange(1024, dtype=torch.float32).reshape(32, 32).to(torch.bfloat16)
    t = hurray.from_dlpack(src, name="bf16", metadata={"origin": "torch"})
    if src.data_ptr() % 64 == 0:
        assert t.buffers()[0].ctypes.data == src.data_ptr()
    assert t.dtype.name == "bfloat16" and t.shape == (32, 32) and t.name == "bf16"
    w = hurray.StreamWriter()
    w.write(t)
    w.finish()
    back = next(iter(hurray.StreamReader(w.getvalue())))
    assert back.metadata == {"origin": b"torch"}
    y = torch.from_dlpack(back)
    assert y.dtype == torch.bfloat16 and torch.equal(y, src)


def test_torch_non_contiguous_tensor_goes_as_strided():
    torch = need("torch")
    src = torch.arange(64, dtype=torch.int32).reshape(8, 8).t()
    t = hurray.from_dlpack(src)
    assert t.layout == "strided"
    np.testing.assert_array_equal(t.numpy(), src.numpy())
