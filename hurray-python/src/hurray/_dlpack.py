"""DLPack capsules over the core's export and import (``hurray_dlpack_*``, docs/spec/dlpack.md).

The structs are built and read by the library; Python only wraps them in capsules with the
names and ownership rules of the Python DLPack protocol: a consumer renames a capsule to
``used_dltensor_versioned``/``used_dltensor`` when it takes the struct, and a capsule that
dies unconsumed calls the struct's deleter itself.

This module keeps a reference to each capsule it made until the next export or garbage
collection: a consumer that refuses a capsule drops it with its exception pending, and the
capsule's destructor, a ctypes callback, would lose that exception (CPython turns a callback
that returns with an exception set into ``SystemError``). Held, the capsule dies later, in
ordinary code, and the consumer's own error reaches its caller.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import itertools
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_void_p, py_object
from typing import Any

from ._lib import (
    BUFFER_RELEASE_FN,
    DLManagedTensor,
    DLManagedTensorVersioned,
    check,
    lib,
)

_VERSIONED = b"dltensor_versioned"
_USED_VERSIONED = b"used_dltensor_versioned"
_LEGACY = b"dltensor"
_USED_LEGACY = b"used_dltensor"
READ_ONLY = 1

# Private prototypes of the C API functions used here: ctypes.pythonapi's function objects are
# shared by the whole process, and code elsewhere may set their argtypes differently.
_api = ctypes.pythonapi
_is_valid = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(c_int, py_object, c_char_p)(("PyCapsule_SetName", _api))
# No argtypes: the arguments are converted without a check for a pending exception.
_err_fetch = ctypes.PYFUNCTYPE(None)(("PyErr_Fetch", _api))
_err_restore = ctypes.PYFUNCTYPE(None)(("PyErr_Restore", _api))

_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(py_object, c_void_p, c_char_p, _DESTRUCTOR)(("PyCapsule_New", _api))


@_DESTRUCTOR
def _capsule_destructor(cap: int) -> None:
    # Runs when a capsule is freed. A consumed capsule was renamed and holds nothing; an
    # unconsumed one still owns its struct, whose deleter runs here, exactly once.
    # A capsule freed with an exception pending (a refusing consumer's, when the capsule was
    # no longer held) would make every call ctypes makes fail on it: it is taken out first
    # (the first call here). A ctypes callback cannot leave it pending for the consumer, so it
    # is dropped: that consumer's caller sees SystemError, and the struct is released.
    # Per call, not shared: another thread's destructor may run between these lines.
    pending = (c_void_p * 3)()
    size = ctypes.sizeof(c_void_p)
    _err_fetch(byref(pending, 0), byref(pending, size), byref(pending, 2 * size))
    err = pending[0], pending[1], pending[2]
    try:
        if _is_valid(cap, _VERSIONED):
            p = _get_pointer(cap, _VERSIONED)
            m = ctypes.cast(p, POINTER(DLManagedTensorVersioned))
            if m.contents.deleter:
                m.contents.deleter(m)
        elif _is_valid(cap, _LEGACY):
            p = _get_pointer(cap, _LEGACY)
            lm = ctypes.cast(p, POINTER(DLManagedTensor))
            if lm.contents.deleter:
                lm.contents.deleter(lm)
    except BaseException:  # a destructor must not raise; there is nobody to tell
        pass
    if err[0]:
        # PyErr_Restore takes the references over; ctypes raises the restored exception at
        # once, and dropping it releases them.
        try:
            _err_restore(c_void_p(err[0]), c_void_p(err[1]), c_void_p(err[2]))
        except BaseException:
            pass


# Capsules made since the last drain (see the module docstring).
_held: list = []


def _drain(*_: Any) -> None:
    if _held:
        _held.clear()  # each capsule nobody else holds dies here, with no exception pending


gc.callbacks.append(_drain)
atexit.register(_drain)


# Memory Python owns, lent to the library by hurray_buffer_from_ptr: key -> owner, dropped by
# the release callback (on whichever thread drops the last share of the buffer).
_lent: dict[int, object] = {}
_keys = itertools.count(1)
_lent_lock = threading.Lock()


@BUFFER_RELEASE_FN
def _release_lent(_data: int, ctx: int) -> None:
    try:
        with _lent_lock:
            _lent.pop(ctx, None)
    except BaseException:  # never unwind into the library
        pass


def lend(ptr: int, size: int, owner: object) -> int:
    """A new owned ``HurrayBuffer*`` over Python-owned memory (64-byte aligned ``ptr``) that
    keeps ``owner`` alive until the library releases the buffer."""
    with _lent_lock:
        key = next(_keys)
        _lent[key] = owner
    out = c_void_p()
    try:
        check(lib.hurray_buffer_from_ptr(ptr or None, size, 64, 0, _release_lent, key, byref(out)))
    except BaseException:
        with _lent_lock:
            _lent.pop(key, None)
        raise
    return out.value  # type: ignore[return-value]


def export(t: Any, legacy: bool) -> Any:
    """A capsule holding a new ``DLManagedTensor[Versioned]`` of tensor ``t``."""
    from ._tensor import aligned_empty

    # The owners before the buffers, held through the export: a close() on another thread
    # meanwhile empties the buffers first, so memory is never lent that nothing keeps.
    handle, keep = t._handle, t._keep
    bufs = t._bufs
    if not bufs:
        t._alive()
    if len(bufs) != 1:
        raise BufferError(f"DLPack carries one buffer; this {t.layout} tensor has {len(bufs)}")
    owned = c_void_p()
    if handle and keep is None:
        # Memory the library owns: the export shares the tensor's own buffer.
        lst = c_void_p()
        check(lib.hurray_tensor_buffers(handle.ptr, byref(lst)))
        buf = c_void_p()
        check(lib.hurray_buffer_list_get(lst, 0, byref(buf)))
    else:
        # Memory Python keeps alive (an array, a file's mapping): lend it with its owner.
        ptr, size = bufs[0]
        owner: object = (handle, keep)
        if ptr % 64:
            # Hurray buffers are 64-byte aligned: lend an aligned copy instead.
            copy = aligned_empty(size)
            ctypes.memmove(copy.ctypes.data, ptr, size)
            ptr, owner = copy.ctypes.data, copy
        owned.value = lend(ptr, size, owner)
        buf = owned
    try:
        if legacy:
            lm = POINTER(DLManagedTensor)()
            check(lib.hurray_dlpack_export_legacy(t._desc, buf, byref(lm)))
            cap = _capsule_new(ctypes.cast(lm, c_void_p), _LEGACY, _capsule_destructor)
        else:
            m = POINTER(DLManagedTensorVersioned)()
            check(lib.hurray_dlpack_export(t._desc, buf, READ_ONLY if t._readonly else 0, byref(m)))
            cap = _capsule_new(ctypes.cast(m, c_void_p), _VERSIONED, _capsule_destructor)
        _drain()
        _held.append(cap)
        return cap
    finally:
        if owned.value:
            lib.hurray_buffer_destroy(byref(owned))


def import_(x: Any) -> Any:
    """A ``Tensor`` over the memory of DLPack producer ``x``."""
    from ._tensor import Tensor

    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} does not implement __dlpack__")
    try:
        cap = x.__dlpack__(max_version=(1, 1))
    except TypeError:  # a producer that predates max_version
        cap = x.__dlpack__()
    addr = id(cap)
    out = c_void_p()
    if _is_valid(addr, _VERSIONED):
        p = _get_pointer(addr, _VERSIONED)
        readonly = bool(ctypes.cast(p, POINTER(DLManagedTensorVersioned)).contents.flags & READ_ONLY)
        # Renamed first: from here on the struct is ours (the library consumes it).
        _set_name(cap, _USED_VERSIONED)
        check(lib.hurray_dlpack_import(p, byref(out)))
    elif _is_valid(addr, _LEGACY):
        p = _get_pointer(addr, _LEGACY)
        readonly = False
        _set_name(cap, _USED_LEGACY)
        check(lib.hurray_dlpack_import_legacy(p, byref(out)))
    else:
        raise TypeError("__dlpack__ returned no unconsumed dltensor capsule")
    return Tensor._from_handle(out.value, readonly=readonly)  # type: ignore[arg-type]
