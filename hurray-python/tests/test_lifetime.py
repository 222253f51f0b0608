"""Lifetimes: tensors outlive readers and files, views outlive tensors, DLPack capsules outlive
the tensor, and every deleter and release runs exactly once."""

import gc
import weakref

import numpy as np

import hurray
from hurray import _dlpack
from conftest import golden


class Holder:
    """Hands numpy a capsule made earlier (so the test decides when it is made and consumed)."""

    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kw):
        cap, self.cap = self.cap, None
        return cap

    def __dlpack_device__(self):
        return (1, 0)


def test_a_tensor_and_its_views_outlive_the_reader():
    r = hurray.StreamReader(golden("stream_v1_checksums.hrry"))
    t = next(iter(r))
    expected = t.numpy().copy()
    r.close()
    del r
    view = t.numpy()
    t.close()
    del t
    gc.collect()
    np.testing.assert_array_equal(view, expected)


def test_tensors_of_a_map_outlive_the_file(tmp_path):
    p = tmp_path / "f.hrry"
    with hurray.FileWriter(p) as w:
        w.add(hurray.from_numpy(np.arange(1000, dtype=np.int32)), name="x")
    f = hurray.File.map(p)
    x = f["x"].numpy()
    f.close()
    del f
    gc.collect()
    assert x[999] == 999 and not x.flags.writeable


def test_a_dlpack_consumer_of_a_mapped_tensor_keeps_the_map(tmp_path):
    p = tmp_path / "m.hrry"
    with hurray.FileWriter(p) as w:
        w.add(hurray.from_numpy(np.arange(4096, dtype=np.float32)), name="x")
    f = hurray.File.map(p)
    t = f["x"]
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.buffers()[0].ctypes.data and not a.flags.writeable
    f.close()
    t.close()
    del f, t
    gc.collect()
    assert a[4095] == 4095


def test_a_capsule_outlives_its_tensor_and_is_released_once():
    r = hurray.StreamReader(golden("stream_v1_checksums.hrry"))
    t = [x for x in r if x.name == "dtype/float32"][0]
    expected = t.numpy().copy()
    cap = t.__dlpack__(max_version=(1, 1))
    t.close()
    del t, r
    gc.collect()

    a = np.from_dlpack(Holder(cap))
    del cap
    np.testing.assert_array_equal(a, expected)


def test_lent_memory_is_released_exactly_once():
    before = len(_dlpack._lent)
    src = np.zeros(64, np.float32)
    aligned = hurray.from_numpy(hurray._tensor.aligned_empty(256).view(np.float32))
    for t in (hurray.from_numpy(src), aligned):
        cap = t.__dlpack__(max_version=(1, 1))
        assert len(_dlpack._lent) == before + 1
        del cap  # never consumed: the capsule runs the deleter
        gc.collect()
        assert len(_dlpack._lent) == before
        c2 = t.__dlpack__(max_version=(1, 1))
        a = np.from_dlpack(Holder(c2))
        del c2
        gc.collect()
        assert len(_dlpack._lent) == before + 1  # the consumer holds it
        del a
        gc.collect()
        assert len(_dlpack._lent) == before


def test_imported_producer_is_released_when_the_last_user_goes():
    a = hurray._tensor.aligned_empty(4096).view(np.float64)
    base = a.base
    ref = weakref.ref(base)
    t = hurray.from_dlpack(a)
    assert t.buffers()[0].ctypes.data == a.ctypes.data
    del a, base
    gc.collect()
    assert ref() is not None  # the tensor holds the producer
    view = t.numpy()
    t.close()
    del t
    gc.collect()
    assert ref() is not None  # the view still does
    del view
    gc.collect()
    assert ref() is None


def test_closed_tensor_refuses_use():
    t = hurray.from_numpy(np.arange(3))
    t.close()
    t.close()
    import pytest

    with pytest.raises(ValueError):
        t.numpy()
