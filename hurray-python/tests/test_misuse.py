"""Misuse that must fail cleanly without leaking: refused DLPack capsules, other code's ctypes
prototypes, a reader or writer used by two threads, a source that miscounts, and sparse
tensors whose dense form is huge."""

import ctypes
import gc

import numpy as np
import pytest

import hurray
from hurray import _dlpack


def fp8_tensor(n=4096):
    # Lent memory (from_buffer): each capsule of it is one _dlpack._lent entry until its deleter runs.
    return hurray.from_buffer(np.zeros(n, np.uint8), "float8_e4m3fn", (n,))


def test_a_capsule_numpy_refuses_still_runs_its_deleter():
    t = fp8_tensor()
    before = len(_dlpack._lent)
    for _ in range(20):
        with pytest.raises(Exception):  # numpy has no DLPack float8 type: it refuses the capsule
            np.from_dlpack(t)
    gc.collect()
    assert len(_dlpack._lent) == before
    # The process is healthy afterwards: a consumer that takes its capsule works.
    assert np.from_dlpack(hurray.from_numpy(np.arange(4, dtype=np.float32))).tolist() == [0, 1, 2, 3]


def test_other_code_setting_pythonapi_prototypes_does_not_break_capsules():
    api = ctypes.pythonapi
    fns = [api.PyCapsule_IsValid, api.PyCapsule_GetPointer, api.PyCapsule_SetName]
    saved = [(f.argtypes, f.restype) for f in fns]
    try:
        # The common idiom elsewhere: capsules as py_object.
        for f in fns:
            f.argtypes = [ctypes.py_object, ctypes.c_char_p]
        api.PyCapsule_GetPointer.restype = ctypes.c_int
        t = hurray.from_numpy(np.zeros(1024, np.float32))
        before = len(_dlpack._lent)
        for _ in range(10):
            cap = t.__dlpack__(max_version=(1, 1))
            assert len(_dlpack._lent) == before + 1
            del cap  # never consumed: its destructor runs the deleter
            assert len(_dlpack._lent) == before
        back = hurray.from_dlpack(np.arange(6, dtype=np.int32))
        assert back.numpy().tolist() == list(range(6))
        # and hurray set nothing on ctypes.pythonapi's shared function objects
        assert api.PyCapsule_IsValid.argtypes == [ctypes.py_object, ctypes.c_char_p]
    finally:
        for f, (a, r) in zip(fns, saved):
            f.argtypes, f.restype = a, r
