"""A tensor closed by another thread while a call reads it: the call raises, or what it returns
keeps the memory alive. The other thread's close is run between two lines of the call (where
the interpreter may switch threads), at every line in turn."""

import dis
import gc
import io
import sys

import numpy as np
import pytest

import hurray
from hurray import _dlpack, _tensor

N = 50_000


def _stream(a):
    buf = io.BytesIO()
    with hurray.StreamWriter(buf) as w:
        w.write(hurray.from_numpy(a))
    return buf.getvalue()


def _received(seed):
    r = hurray.StreamReader(io.BytesIO(_stream(np.arange(N, dtype=np.float32) + seed)))
    t = next(iter(r))
    r.close()
    return t


def _own(seed):
    # The tensor holds the only reference to its source: its close frees the memory.
    return hurray.from_numpy(np.arange(N, dtype=np.float32) + seed)


def _lines(code):
    return sorted({line for _, line in dis.findlinestarts(code) if line is not None and line > code.co_firstlineno})


def _close_before(t, code, line):
    """Arms a trace that closes ``t`` just before ``line`` of ``code`` runs (once)."""

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno == line:
            frame.f_trace = None
            sys.settrace(None)
            t.close()
        return local

    def tracer(frame, event, arg):
        if frame.f_code is code:
            return local
        return None

    sys.settrace(tracer)


def _memory_owner(a):
    b = a
    while b is not None and not isinstance(b, _tensor._Memory):
        b = getattr(b, "base", None)
    return None if b is None else b.owner


def _churn():
    # Freed buffers are reused by the next tensors of the same size: read some.
    gc.collect()
    for k in range(4):
        with _received(1000 + k) as t:
            t.numpy()


CALLS = {
    "numpy": (_tensor.Tensor.numpy.__code__, lambda t: [t.numpy()]),
    "buffers": (_tensor.Tensor.buffers.__code__, lambda t: t.buffers()),
    "dlpack": (_dlpack.export.__code__, lambda t: [np.from_dlpack(t)]),
}


@pytest.mark.parametrize("make", [_received, _own], ids=["received", "from_numpy"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_close_between_any_two_lines_of_a_read_leaves_no_view_over_freed_memory(make, call):
    code, run = CALLS[call]
    want = (np.arange(N, dtype=np.float32) + 7).tobytes()
    for line in _lines(code):
        t = make(7)
        t.dtype, t.shape  # cached, as after earlier use: the call then meets the close later
        _close_before(t, code, line)
        try:
            out = run(t)
        except (ValueError, BufferError, TypeError, hurray.HurrayError):
            continue
        finally:
            sys.settrace(None)
        if call != "dlpack":
            for a in out:
                owner = _memory_owner(a)
                assert owner is not None and any(o is not None for o in owner), (
                    f"{call}: a close before line {line} left a view that keeps nothing alive"
                )
        del t
        _churn()
        for a in out:
            assert a.view(np.uint8).tobytes() == want, f"{call}: a close before line {line}: other bytes"


def _small_received(seed):
    r = hurray.StreamReader(io.BytesIO(_stream(np.arange(64, dtype=np.float32) + seed)))
    t = next(iter(r))
    r.close()
    return t


def _small_own(seed):
    return hurray.from_numpy(np.arange(64, dtype=np.float32) + seed, name="s")


@pytest.mark.parametrize(
    "make",
    [_received, _own, _small_received, _small_own],
    ids=["received", "from_numpy", "small received", "small from_numpy"],
)
def test_a_close_between_any_two_lines_of_a_write_sends_the_tensor_whole_or_raises(make):
    """``StreamWriter.write`` with the tensor closed by another thread before any of its lines:
    the stream written holds the tensor's own values, or the write raises; never other bytes
    (freed memory reused by the next tensors read)."""
    code = hurray.StreamWriter.write.__code__
    n = len(make(0).numpy())
    expected = np.arange(n, dtype=np.float32) + 7
    outcomes = set()
    for line in _lines(code):
        t = make(7)  # a small from_numpy tensor of a shape seen before takes the queued path
        out = io.BytesIO()
        w = hurray.StreamWriter(out)
        _close_before(t, code, line)
        try:
            w.write(t)
        except (ValueError, hurray.HurrayError) as e:
            sys.settrace(None)
            assert "closed" in str(e) or isinstance(e, hurray.HurrayError), (line, e)
            outcomes.add("raised")
            w.close()
            continue
        finally:
            sys.settrace(None)
        _churn()
        w.finish()
        back = list(hurray.StreamReader(io.BytesIO(out.getvalue())))
        assert len(back) == 1, line
        assert np.array_equal(back[0].numpy(), expected), f"a close before line {line} sent other bytes"
        outcomes.add("sent")
    assert outcomes, "no line was traced"


def _big_dense():
    # The tensor holds the only reference to its 32 MiB source: numpy's memory for it is its
    # own map, unmapped when the tensor lets go of it (a read after that faults).
    return hurray.from_numpy(np.arange(8 << 20, dtype=np.float32)), lambda: np.arange(8 << 20, dtype=np.float64)


def _big_csr():
    rows = 2048
    nnz_per_row = 2048
    values = np.arange(rows * nnz_per_row, dtype=np.float32)
    indptr = np.arange(0, rows * nnz_per_row + 1, nnz_per_row, dtype=np.int64)
    indices = np.tile(np.arange(0, 2 * nnz_per_row, 2, dtype=np.int64), rows)
    t = hurray.csr(values, indptr, indices, (rows, 2 * nnz_per_row))
    del values, indptr, indices

    def expected():
        d = np.zeros((rows, 2 * nnz_per_row), np.float32)
        d[:, ::2] = np.arange(rows * nnz_per_row, dtype=np.float32).reshape(rows, nnz_per_row)
        return d

    return t, expected


@pytest.mark.parametrize(
    "make, call",
    [(_big_dense, lambda t: t.dequantize(np.float64)), (_big_csr, lambda t: t.densify())],
    ids=["dequantize", "densify"],
)
def test_a_close_on_another_thread_during_a_dense_copy_leaves_its_memory_alive(make, call):
    """``dequantize``/``densify`` release the GIL while the core reads the tensor's memory: a
    close on another thread then must not free that memory (or the descriptor) under the
    call. The call either raises ``ValueError`` or returns the tensor's values."""
    import threading
    import time

    outcomes = set()
    for delay in (0, 0.0005, 0.001, 0.002, 0.004, 0.008):
        t, expected = make()
        closer = threading.Thread(target=lambda: (time.sleep(delay), t.close(), gc.collect()))
        closer.start()
        try:
            out = call(t)
        except ValueError as e:
            assert "closed" in str(e)
            outcomes.add("raised")
            continue
        finally:
            closer.join()
            del t
        _churn()
        assert np.array_equal(out, expected()), f"delay {delay}: other values"
        outcomes.add("copied")
    assert outcomes
