"""Misuse that must fail cleanly without leaking: refused DLPack capsules, other code's ctypes
prototypes, a reader or writer used by two threads, a source that miscounts, and sparse
tensors whose dense form is huge."""

import ctypes
import gc
import io
import threading

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
        with pytest.raises(Exception) as e:  # numpy has no DLPack float8 type: it refuses the capsule
            np.from_dlpack(t)
        assert not isinstance(e.value, SystemError), e.value  # numpy's own error, intact
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
            del cap  # never consumed: its destructor runs the deleter (after the next collection)
            gc.collect()
            assert len(_dlpack._lent) == before
        back = hurray.from_dlpack(np.arange(6, dtype=np.int32))
        assert back.numpy().tolist() == list(range(6))
        # and hurray set nothing on ctypes.pythonapi's shared function objects
        assert api.PyCapsule_IsValid.argtypes == [ctypes.py_object, ctypes.c_char_p]
    finally:
        for f, (a, r) in zip(fns, saved):
            f.argtypes, f.restype = a, r


class Miscounting:
    """A source whose readinto claims ``count`` bytes (writing none), then fails: a reader that
    took the count would come back for more (2**64 wraps to 0 bytes, forever)."""

    def __init__(self, count):
        self.count = count
        self.calls = 0

    def readinto(self, b):
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("readinto called again after a bad count")
        return self.count


@pytest.mark.parametrize("count", [2**64, 2**64 + 16, -1, 65537, 1 << 40])
def test_a_readinto_count_outside_the_region_is_refused(count):
    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.StreamReader(Miscounting(count)))
    assert e.value.status_name == "HURRAY_ERR_TRANSPORT"
    assert isinstance(e.value.__cause__, ValueError)
    assert "readinto returned " + str(count) in str(e.value.__cause__)


@pytest.mark.parametrize("count", ["3", 3.0, True, b"\x03"])
def test_a_readinto_count_that_is_not_an_int_is_refused(count):
    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.StreamReader(Miscounting(count)))
    assert isinstance(e.value.__cause__, TypeError)
    assert "readinto returned" in str(e.value.__cause__)


def test_a_read_returning_more_than_asked_is_refused():
    class Src:
        def read(self, n):
            return b"\0" * (n + 1)

    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.StreamReader(Src()))
    assert "the source's read returned" in str(e.value.__cause__)


def test_a_readinto_returning_an_int_subclass_within_the_region_works():
    import io

    data = io.BytesIO(hurray_stream_bytes())

    class IntSub(int):
        pass

    class Src:
        def readinto(self, b):
            return IntSub(data.readinto(b))

    assert [t.numpy().tolist() for t in hurray.StreamReader(Src())] == [[1.0, 2.0]]


def hurray_stream_bytes():
    w = hurray.StreamWriter()
    w.write(hurray.from_numpy(np.array([1, 2], np.float32)))
    w.finish()
    return w.getvalue()


def sparse_bomb(n=301989892):
    # 227 bytes on the wire: COO float32 of shape (2, n), 3 values; its dense form is 8n bytes.
    t = hurray.coo(np.array([1.5, -2, 3], np.float32), np.array([[0, 1, 1], [1, 2, 3]], np.int64), (2, n))
    w = hurray.StreamWriter()
    w.write(t)
    w.finish()
    return next(iter(hurray.StreamReader(w.getvalue())))


@pytest.mark.parametrize("method", ["densify", "dequantize"])
def test_a_small_sparse_stream_with_a_huge_dense_form_is_refused_before_allocating(method):
    t = sparse_bomb()
    with pytest.raises(hurray.HurrayError) as e:
        getattr(t, method)()
    assert e.value.status_name == "HURRAY_ERR_LIMIT_EXCEEDED"
    assert "2415919136 bytes" in str(e.value) and "max_bytes" in str(e.value)
    huge = sparse_bomb(1 << 60)  # past what numpy could allocate: the same refusal, no MemoryError
    with pytest.raises(hurray.HurrayError) as e:
        getattr(huge, method)(max_bytes=1 << 62)
    assert e.value.status_name == "HURRAY_ERR_LIMIT_EXCEEDED"


def test_max_bytes_raises_or_lowers_the_dense_limit():
    t = sparse_bomb(1000)  # 8000 bytes dense
    assert hurray.DEFAULT_MAX_DENSE_BYTES == 1 << 30
    d = t.densify()
    assert d.shape == (2, 1000) and d[0, 1] == 1.5 and d[1, 3] == 3
    assert t.densify(max_bytes=8000).shape == (2, 1000)
    assert t.dequantize(max_bytes=8000)[1, 2] == -2
    assert t.dequantize("float64", max_bytes=16000).dtype == np.float64
    for method, kw in (("densify", {}), ("dequantize", {}), ("dequantize", {"dtype": "float64"})):
        with pytest.raises(hurray.HurrayError) as e:
            getattr(t, method)(max_bytes=7999 if not kw else 15999, **kw)
        assert e.value.status_name == "HURRAY_ERR_LIMIT_EXCEEDED"
    with pytest.raises(ValueError):
        t.densify(max_bytes=-1)
    with pytest.raises(TypeError):
        t.densify(max_bytes=1.5e9)


def test_dense_tensors_are_not_capped_their_stored_bytes_bound_the_result():
    t = hurray.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert t.densify(max_bytes=0).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert t.dequantize("float64", max_bytes=0).dtype == np.float64


def test_a_zero_strided_tensor_is_capped_too():
    base = np.zeros(1, np.float32)
    wide = np.lib.stride_tricks.as_strided(base, shape=(1 << 20, 1 << 9), strides=(0, 0))  # 2 GiB dense
    t = hurray.from_numpy(wide)
    assert t.layout == "strided"
    with pytest.raises(hurray.HurrayError) as e:
        t.densify()
    assert e.value.status_name == "HURRAY_ERR_LIMIT_EXCEEDED"


class Blocking:
    """A source (readinto) or sink (write) that, once armed, signals ``entered`` and waits for
    ``go``: the thread inside a reader or writer call stays there while the test tries a
    second one."""

    def __init__(self, data=b""):
        import io
        import threading

        self.data = io.BytesIO(data)
        self.armed = True
        self.entered = threading.Event()
        self.go = threading.Event()

    def _wait(self):
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.go.wait(10)

    def readinto(self, b):
        self._wait()
        return self.data.readinto(b)

    def write(self, b):
        self._wait()
        return len(b)


def in_other_thread(fn):
    import threading

    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the test
            box["error"] = e

    th = threading.Thread(target=run)
    th.start()
    return th, box


@pytest.mark.parametrize("second", ["read", "next", "metadata", "items", "close"])
def test_a_reader_used_by_a_second_thread_meanwhile_refuses_it(second):
    src = Blocking(hurray_stream_bytes())
    r = hurray.StreamReader(src)
    th, box = in_other_thread(r.read)
    assert src.entered.wait(10)
    calls = {"read": r.read, "next": lambda: next(r), "metadata": lambda: r.metadata,
             "items": lambda: next(r.items()), "close": r.close}
    with pytest.raises(RuntimeError, match="another call is still inside this StreamReader"):
        calls[second]()
    src.go.set()
    th.join(10)
    assert "error" not in box
    assert box["value"].numpy().tolist() == [1.0, 2.0]  # the first thread's read is unharmed
    assert r.read() is None
    r.close()


@pytest.mark.parametrize("second", ["write", "flush", "finish", "close"])
def test_a_writer_used_by_a_second_thread_meanwhile_refuses_it(second):
    sink = Blocking()
    w = hurray.StreamWriter(sink, batch_bytes=0)
    t = hurray.from_numpy(np.arange(4, dtype=np.float32))
    th, box = in_other_thread(lambda: w.write(t))
    assert sink.entered.wait(10)
    calls = {"write": lambda: w.write(t), "flush": w.flush, "finish": w.finish, "close": w.close}
    with pytest.raises(RuntimeError, match="another call is still inside this StreamWriter"):
        calls[second]()
    sink.go.set()
    th.join(10)
    assert "error" not in box
    w.close()  # the writer is intact: it finishes the stream


def test_a_source_calling_back_into_its_own_reader_is_refused_with_a_message_that_says_so():
    data = io.BytesIO(hurray_stream_bytes())
    box = {}

    class Reentrant(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            try:
                box["r"].metadata  # the same thread, from inside the reader's own read
            except RuntimeError as e:
                box["error"] = e
            return data.readinto(b)

    r = box["r"] = hurray.StreamReader(Reentrant())
    assert r.read().numpy().tolist() == [1.0, 2.0]  # the refused call left the read unharmed
    msg = str(box["error"])
    assert "another call is still inside this StreamReader" in msg and "from a callback" in msg
    r.close()


def test_one_thread_after_another_is_fine():
    r = hurray.StreamReader(hurray_stream_bytes())
    th, box = in_other_thread(lambda: r.metadata)
    th.join(10)
    assert box["value"] == {}
    th, box = in_other_thread(r.read)
    th.join(10)
    assert box["value"].numpy().tolist() == [1.0, 2.0]
    assert r.read() is None


def _file_with_one_tensor(tmp_path):
    path = tmp_path / "one.hrry"
    with hurray.FileWriter(path) as w:
        w.add(hurray.from_numpy(np.arange(4, dtype=np.float32), name="x"))
    return path


@pytest.mark.parametrize("mode", ["open", "map"])
@pytest.mark.parametrize("call", ["len", "getitem", "get", "contains", "tensor", "names", "metadata",
                                  "composite", "verify", "iter", "close"])
def test_a_file_in_use_by_another_thread_refuses_a_second_call(tmp_path, mode, call):
    # Its native reader serves one thread at a time (c-abi.md §Threads): while another thread
    # holds the file's token (is inside a call), every call is refused and nothing changes.
    f = getattr(hurray.File, mode)(_file_with_one_tensor(tmp_path))
    calls = {"len": lambda: len(f), "getitem": lambda: f["x"], "get": lambda: f.get("x"),
             "contains": lambda: "x" in f, "tensor": lambda: f.tensor(0), "names": f.names,
             "metadata": lambda: f.metadata, "composite": lambda: f.composite("x"), "verify": f.verify,
             "iter": lambda: list(f), "close": f.close}
    token = f._busy.pop()
    try:
        with pytest.raises(RuntimeError, match="another call is still inside this File"):
            calls[call]()
    finally:
        f._busy.append(token)
    assert f["x"].numpy().tolist() == [0.0, 1.0, 2.0, 3.0]  # the file is unharmed
    f.close()


@pytest.mark.parametrize("call", ["add", "finish", "close"])
def test_a_file_writer_in_use_by_another_thread_refuses_a_second_call(tmp_path, call):
    path = tmp_path / "w.hrry"
    w = hurray.FileWriter(path)
    t = hurray.from_numpy(np.arange(3, dtype=np.int32), name="t")
    calls = {"add": lambda: w.add(t), "finish": w.finish, "close": w.close}
    token = w._busy.pop()
    try:
        with pytest.raises(RuntimeError, match="another call is still inside this FileWriter"):
            calls[call]()
    finally:
        w._busy.append(token)
    w.add(t)  # nothing was added or closed by the refused call
    w.finish()
    with hurray.File.open(path) as f:
        assert f.names() == ["t"]


def test_files_used_by_threads_one_after_another_and_concurrently_each_its_own(tmp_path):
    path = _file_with_one_tensor(tmp_path)
    f = hurray.File.open(path)
    th, box = in_other_thread(lambda: f["x"].numpy().tolist())
    th.join(10)
    assert box["value"] == [0.0, 1.0, 2.0, 3.0]
    f.close()
    # Threads with a File each read at once.
    results = []
    def reader():
        with hurray.File.map(path) as g:
            for _ in range(200):
                results.append(g["x"].numpy().sum())
    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [6.0] * 800


def test_public_classes_document_themselves_and_name_their_package():
    assert hurray.FileWriter.__doc__.startswith("Writes an HRRYFILE")
    assert hurray.File.__doc__.startswith("An HRRYFILE opened for reading")
    assert hurray.HurrayError.__module__ == "hurray"
    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.StreamReader(b"not a stream at all"))
    assert "hurray.HurrayError" in repr(e.type)
