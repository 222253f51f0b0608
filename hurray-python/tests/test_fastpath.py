"""The per-tensor fast paths: received tensors made from a copy of their batch's results
(fields, name and handle made when first asked for, dtype/shape/layout shared by a run of
alike tensors), and from_numpy tensors of a known shape queued from their array and plan.
Each behaves exactly as a tensor made the slow way."""

import gc
import io
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hurray
from hurray import _stream, _tensor


class Chunked(io.RawIOBase):
    """A source that hands out at most ``step`` bytes per read: batches end in new places."""

    def __init__(self, data, step):
        self.data, self.pos, self.step = memoryview(data), 0, step

    def readable(self):
        return True

    def readinto(self, mv):
        k = min(len(mv), len(self.data) - self.pos, self.step)
        mv[:k] = self.data[self.pos : self.pos + k]
        self.pos += k
        return k


DTYPES = [np.float32, np.int8, np.uint16, np.float64, np.bool_, np.complex64]


@st.composite
def items(draw):
    """A list of (kind, array-or-parts, name): dense tensors of a few shapes (runs of alike
    ones, so the decoder flags them), some above the 64 KiB batch stop, and CSR tensors
    (three buffers: a batch that is not one buffer per tensor)."""
    out = []
    for _ in range(draw(st.integers(1, 24))):
        name = draw(st.one_of(st.none(), st.just(""), st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1, max_size=12)))
        kind = draw(st.sampled_from(["dense"] * 6 + ["big", "csr", "strided"]))
        if kind == "csr":
            out.append(("csr", None, name))
            continue
        dt = draw(st.sampled_from(DTYPES))
        shape = draw(st.sampled_from([(), (0,), (3,), (2, 5), (7, 1, 3)])) if kind != "big" else (17_000,)
        if kind == "big":
            dt = np.float32  # 68 KB: past the 64 KiB batch stop
        a = (np.arange(int(np.prod(shape)), dtype=np.int64) % 100).astype(dt).reshape(shape)
        if kind == "strided":
            a = (np.arange(24) % 7).astype(dt).reshape(4, 6)[::2, ::-3]
        out.append((kind, a, name))
    return out


def tensor_of(kind, a, name):
    if kind == "csr":
        return hurray.csr(np.array([1.0, 2.0], np.float32), np.array([0, 1, 2], np.int32),
                          np.array([0, 2], np.int32), (2, 3), name=name)
    return hurray.from_numpy(a, name=name)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items(), st.sampled_from([None, 1, 97, 4096]), st.sampled_from([0, 512, 64 * 1024]))
def test_received_tensors_equal_what_was_sent(seq, step, batch_bytes):
    w = hurray.StreamWriter(batch_bytes=batch_bytes)
    for _ in range(2):  # the second round takes the known-shape path of from_numpy
        for kind, a, name in seq:
            w.write(tensor_of(kind, a, name))
    w.finish()
    wire = w.getvalue()
    src = wire if step is None else Chunked(wire, step)
    got = list(hurray.StreamReader(src))
    assert len(got) == 2 * len(seq)
    for t, (kind, a, name) in zip(got, seq + seq):
        assert t.name == name
        if kind == "csr":
            assert t.layout == "csr" and t.shape == (2, 3)
            assert np.array_equal(t.densify(), np.array([[1, 0, 0], [0, 0, 2]], np.float32))
            continue
        assert t.shape == a.shape and t.dtype == hurray.dtype(a.dtype) and np.array_equal(t.numpy(), a)
        assert t.layout == ("strided" if kind == "strided" else "row-major")


def test_a_run_of_alike_tensors_shares_its_fields_but_not_its_name():
    w = hurray.StreamWriter()
    for i in range(200):
        w.write(hurray.from_numpy(np.full((2, 3), i, np.int32), name=f"n{i}"))
    w.write(hurray.from_numpy(np.zeros(5, np.int32), name="other"))
    w.finish()
    got = list(hurray.StreamReader(w.getvalue()))
    assert [t.name for t in got] == [f"n{i}" for i in range(200)] + ["other"]
    assert all(t.shape == (2, 3) for t in got[:200]) and got[200].shape == (5,)
    assert got[0]._fam is got[199]._fam and got[200]._fam is not got[0]._fam
    assert [int(t.numpy()[1, 2]) for t in got[:200]] == list(range(200))


class DestroyCounter:
    """Wraps the library the stream module calls, recording each tensor it destroys."""

    def __init__(self, lib):
        self.lib, self.destroyed = lib, []

    def __getattr__(self, name):
        real = getattr(self.lib, name)
        if name == "hurray_tensor_destroy":
            def destroy(pp):
                self.destroyed.append(pp._obj.value)
                return real(pp)
            return destroy
        if name == "hurray_tensor_destroy_many":
            def destroy_many(arr, n):
                self.destroyed.extend(arr[i] for i in range(n))
                return real(arr, n)
            return destroy_many
        return real


def small_wire(n):
    w = hurray.StreamWriter()
    for i in range(n):
        w.write(hurray.from_numpy(np.full(16, i, np.float32), name=f"t{i}"))
    w.write(hurray.from_numpy(np.zeros(20_000, np.float32)))  # a large one: destroyed at once
    w.finish()
    return w.getvalue()


def test_every_received_tensor_is_destroyed_exactly_once(monkeypatch):
    counter = DestroyCounter(_stream.lib)
    monkeypatch.setattr(_stream, "lib", counter)
    held = DestroyCounter(_stream.held)  # the GIL-keeping binding: same record
    held.destroyed = counter.destroyed
    monkeypatch.setattr(_stream, "held", held)
    monkeypatch.setattr(_tensor, "lib", counter)
    r = hurray.StreamReader(small_wire(300))
    got = list(r)
    ptrs = [t._hp or t._handle.ptr for t in got]  # the large last one owns a handle at once
    assert all(ptrs) and len(set(ptrs)) == len(got)
    views = [t.numpy() for t in got[::3]]  # these move their pointer into a handle object
    for t in got[1::3]:
        t.close()  # given back now; close again is a no-op
        t.close()
    r.close()
    del got, t
    gc.collect()
    assert sorted(p for p in counter.destroyed if p in set(ptrs)) != []
    alive = set(ptrs) - set(counter.destroyed)
    assert len(alive) == len(views)  # only the tensors a view still holds
    del views
    gc.collect()
    assert sorted(p for p in counter.destroyed if p) == sorted(ptrs)


def test_a_batch_gives_its_tensors_back_together_and_a_large_last_one_alone(monkeypatch):
    # No finalizer per received tensor: each holds its batch, which gives back every pointer
    # it still owns when the last of them goes. A large last tensor owns its own pointer, so
    # its memory returns to the pool as soon as it goes, while its batch lives on.
    assert not hasattr(_stream._Received, "__del__")
    counter = DestroyCounter(_stream.lib)
    monkeypatch.setattr(_stream, "lib", counter)
    held = DestroyCounter(_stream.held)
    held.destroyed = counter.destroyed
    monkeypatch.setattr(_stream, "held", held)
    monkeypatch.setattr(_tensor, "lib", counter)
    r = hurray.StreamReader(small_wire(10))
    got = list(r)
    assert len({id(t._b) for t in got[:10]}) == 1  # one batch of ten small tensors, then the large one
    small = [t._hp for t in got[:10]]
    big = got[-1]._handle.ptr
    del got[-1]
    gc.collect()
    assert counter.destroyed == [big]
    keep = got[3]
    del got
    gc.collect()
    assert r.read() is None and counter.destroyed == [big]  # the batch still lives
    assert keep.name == "t3" and np.array_equal(keep.numpy(), np.full(16, 3, np.float32))
    del keep
    gc.collect()
    r.close()  # drains the ledger
    assert sorted(p for p in counter.destroyed if p) == sorted(small + [big])


def test_threads_taking_one_tensors_handle_take_it_once(monkeypatch):
    counter = DestroyCounter(_stream.lib)
    monkeypatch.setattr(_stream, "lib", counter)
    held = DestroyCounter(_stream.held)  # the GIL-keeping binding: same record
    held.destroyed = counter.destroyed
    monkeypatch.setattr(_stream, "held", held)
    monkeypatch.setattr(_tensor, "lib", counter)
    r = hurray.StreamReader(small_wire(64))
    got = list(r)
    barrier = threading.Barrier(8)
    views = []

    def take(t):
        barrier.wait()
        views.append(t.numpy())

    for t in got[:40]:
        threads = [threading.Thread(target=take, args=(t,)) for _ in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    handles = {id(t._handle) for t in got[:40]}
    assert len(handles) == 40
    ptrs = sorted(t._handle.ptr for t in got)
    r.close()
    del got, t, threads
    views.clear()
    gc.collect()
    assert sorted(counter.destroyed) == ptrs


def test_a_copied_received_tensor_shares_its_memory_and_is_destroyed_once(monkeypatch):
    import copy

    counter = DestroyCounter(_stream.lib)
    monkeypatch.setattr(_stream, "lib", counter)
    held = DestroyCounter(_stream.held)  # the GIL-keeping binding: same record
    held.destroyed = counter.destroyed
    monkeypatch.setattr(_stream, "held", held)
    monkeypatch.setattr(_tensor, "lib", counter)
    r = hurray.StreamReader(small_wire(3))
    t = next(r)
    c = copy.copy(t)
    assert c._handle is t._handle and c._hp == 0 == t._hp and c.name == "t0"
    p = t._handle.ptr
    r.close()
    del t, r
    gc.collect()
    assert np.array_equal(c.numpy(), np.zeros(16, np.float32))
    del c
    gc.collect()
    assert counter.destroyed.count(p) == 1


def test_a_received_tensor_closed_refuses_use_and_its_views_live():
    r = hurray.StreamReader(small_wire(10))
    t, u = next(r), next(r)
    v = t.numpy()
    t.close()
    for use in (t.numpy, t.buffers, lambda: t.metadata, lambda: t.quantization, t.densify):
        with pytest.raises(ValueError, match="closed"):
            use()
    assert repr(t) == "Tensor(closed)"
    with pytest.raises(ValueError, match="closed"):
        u.close() or u.name
    del t, r
    gc.collect()
    assert np.array_equal(v, np.full(16, 0, np.float32))


def test_received_tensors_are_written_again_and_exported():
    got = list(hurray.StreamReader(small_wire(5)))
    w = hurray.StreamWriter()
    for t in got:
        w.write(t)
    w.finish()
    again = list(hurray.StreamReader(w.getvalue()))
    assert [t.name for t in again] == [t.name for t in got]
    a = np.from_dlpack(got[2])
    assert a.ctypes.data == got[2]._bufs[0][0] and a[0] == 2
    assert got[2].metadata == {} and got[2].composite is None


def test_known_shapes_of_every_layout_are_queued_from_the_array():
    import importlib

    arrays = [
        np.arange(12, dtype=np.float32).reshape(3, 4),  # C order: copied through memoryview
        np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),  # F order: by address
        np.arange(40, dtype=np.int32).reshape(5, 8)[::2, ::-1],  # strided, negative
        np.frombuffer(bytes(range(32)), np.uint8),  # read-only
        np.array(7.5, np.float64),  # 0-d
        np.zeros((0, 3), np.float32),
    ]
    if importlib.util.find_spec("ml_dtypes"):
        import ml_dtypes

        arrays.append(np.arange(9, dtype=np.float32).astype(ml_dtypes.bfloat16))  # no buffer export
    for a in arrays:
        hurray.from_numpy(a)  # plan
    ts = [hurray.from_numpy(a, name=f"a{i}") for i, a in enumerate(arrays)]
    assert all(type(t) is _tensor._Planned for t in ts)
    assert ts[3]._readonly and not ts[3].numpy().flags.writeable and not ts[0]._readonly
    w = hurray.StreamWriter()
    for t in ts:
        w.write(t)
    w.finish()
    got = list(hurray.StreamReader(w.getvalue()))
    for t, a in zip(got, arrays):
        assert t.shape == a.shape and np.array_equal(t.numpy().astype(np.float64), a.astype(np.float64))
    # The planned tensor itself answers like any other, its descriptor made when asked.
    assert ts[2].layout == "strided" and ts[2].name == "a2" and ts[2].shape == (3, 8)
    assert np.array_equal(ts[2].numpy(), arrays[2])


def test_known_shape_bad_names_and_closed_tensors_are_refused():
    a = np.zeros(4, np.float32)
    hurray.from_numpy(a)
    for bad in ("x" * 4097, "a\0b"):
        with pytest.raises(hurray.HurrayError):
            hurray.from_numpy(a, name=bad)
    with pytest.raises(UnicodeEncodeError):
        hurray.from_numpy(a, name="\udc80")
    t = hurray.from_numpy(a, name="ok")
    t.close()
    w = hurray.StreamWriter()
    with pytest.raises(ValueError, match="closed"):
        w.write(t)
    w.write(hurray.from_numpy(a, name="after"))  # the writer is unharmed
    w.finish()
    assert [x.name for x in hurray.StreamReader(w.getvalue())] == ["after"]


def test_small_tensors_after_a_pending_large_one_still_batch():
    sizes = []

    class Sink:
        def write(self, mv):
            sizes.append(len(mv))
            return len(mv)

    a = np.zeros(256, np.float32)
    hurray.from_numpy(a)
    w = hurray.StreamWriter(Sink(), batch_bytes=8192)
    w.write(hurray.from_numpy(np.zeros(1500, np.float32)))  # 6 KB, staged by the general path
    for i in range(100):
        w.write(hurray.from_numpy(a, name=f"s{i}"))
    w.finish()
    assert sum(sizes) > 100 * 1024 and max(sizes) < 8192 + 2 * 1100
    assert len(sizes) < 25  # about one send per 8 KiB, not one per tensor


def test_a_tensor_cannot_be_pickled_or_deep_copied_and_a_shallow_copy_shares_it():
    import copy
    import pickle

    t = hurray.from_numpy(np.arange(6, dtype=np.float32), name="p")
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(t)
    with pytest.raises(TypeError, match="cannot be deep-copied"):
        copy.deepcopy(t)
    u = copy.copy(t)
    del t
    gc.collect()
    assert u.name == "p"
    assert u.numpy().tolist() == [0, 1, 2, 3, 4, 5]
    # A received tensor: the same rules, and the copy outlives the original.
    buf = io.BytesIO()
    with hurray.StreamWriter(buf) as w:
        w.write(hurray.from_numpy(np.arange(3, dtype=np.int32), name="r"))
    with hurray.StreamReader(io.BytesIO(buf.getvalue())) as r:
        got = r.read()
        with pytest.raises(TypeError):
            pickle.dumps(got)
        c = copy.copy(got)
        got.close()
        del got
        gc.collect()
        assert c.numpy().tolist() == [0, 1, 2]


def test_handle_owners_cannot_be_copied_or_pickled(tmp_path):
    import copy
    import pickle

    path = tmp_path / "o.hrry"
    fw = hurray.FileWriter(path)
    owners = [fw, hurray.StreamWriter()]
    for o in owners:
        for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="native handle"):
                attempt(o)
    fw.add(hurray.from_numpy(np.arange(4, dtype=np.int32), name="a"))
    fw.finish()
    buf = io.BytesIO()
    with hurray.StreamWriter(buf) as w:
        w.write(hurray.from_numpy(np.arange(2, dtype=np.int32), name="s"))
    for o in (hurray.File.open(path), hurray.File.map(path), hurray.StreamReader(io.BytesIO(buf.getvalue()))):
        for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="native handle"):
                attempt(o)
        o.close()


def test_verify_checks_payloads_whatever_the_open_mode(tmp_path):
    path = tmp_path / "v.hrry"
    with hurray.FileWriter(path) as fw:
        fw.add(hurray.from_numpy(np.arange(16, dtype=np.int32), name="a"))
    hurray.File.map(path).verify()
    hurray.File.open(path, verify_payloads=False).verify()
    raw = bytearray(path.read_bytes())
    with hurray.File.map(path) as f:
        t = f["a"]
        start = t.numpy().ctypes.data - f._map.ctypes.data
        t.close()
    raw[start] ^= 0xFF
    path.write_bytes(bytes(raw))
    for f in (hurray.File.map(path), hurray.File.open(path, verify_payloads=False), hurray.File.open(path)):
        with f:
            with pytest.raises(hurray.HurrayError, match="CORRUPT"):
                f.verify()


def test_verify_checks_a_large_payload_in_windows_and_names_the_tensor(tmp_path):
    path = tmp_path / "big.hrry"
    with hurray.FileWriter(path) as fw:
        fw.add(hurray.from_numpy(np.arange(3 << 18, dtype=np.float32), name="big"))
        fw.add(hurray.from_numpy(np.arange(4, dtype=np.int32), name="small"))
    for f in (hurray.File.map(path), hurray.File.open(path, verify_payloads=False)):
        with f:
            f.verify()
    raw = bytearray(path.read_bytes())
    with hurray.File.map(path) as f:
        t = f["big"]
        start = t.numpy().ctypes.data - f._map.ctypes.data
        t.close()
    raw[start + (5 << 19) + 3] ^= 0x10  # in the third 1 MiB window
    path.write_bytes(bytes(raw))
    for f in (hurray.File.map(path), hurray.File.open(path, verify_payloads=False), hurray.File.open(path)):
        with f:
            with pytest.raises(hurray.HurrayError, match='CORRUPT.*"big" checksum mismatch'):
                f.verify()


def test_names_are_right_whether_asked_in_order_or_not_at_all():
    # Batches of up to 64 tensors; each name is read from its tensor's own descriptor when
    # asked. Unnamed and non-ASCII names, and tensors never asked, come out the same.
    names = [None if i % 7 == 3 else f"t/{i}/{'é' * (i % 3)}" for i in range(300)]
    w = hurray.StreamWriter()
    for i, nm in enumerate(names):
        w.write(hurray.from_numpy(np.full(8, i, np.float32), name=nm))
    w.finish()
    got = list(hurray.StreamReader(w.getvalue()))
    assert [t.name for t in reversed(got)] == names[::-1]
    r = hurray.StreamReader(w.getvalue())
    seen = []
    for i, t in enumerate(r):
        if i in (0, 5) or i > 100:
            seen.append((i, t.name))
    assert seen == [(i, names[i]) for i in [0, 5] + list(range(101, 300))]


def test_a_received_tensor_refuses_its_name_once_closed_and_its_batch_keeps_theirs():
    r = hurray.StreamReader(small_wire(200))
    ts = {i: next(r) for i in range(60)}  # one batch
    assert len({id(t._b) for t in ts.values()}) == 1
    ts[10].close()
    with pytest.raises(ValueError, match="closed"):
        ts[10].name
    views = [ts.pop(i).numpy() for i in (11, 12)]  # their tensors gone, each view owns its pointer
    del ts[20]  # gone: its pointer stays with the batch until the batch goes
    gc.collect()
    assert {i: t.name for i, t in ts.items() if i != 10} == {i: f"t{i}" for i in range(60) if i not in (10, 11, 12, 20)}
    assert [int(v[0]) for v in views] == [11, 12]


def test_lazy_tensor_classes_define_no_getattr_hook():
    # A __getattr__ slows every attribute lookup on the per-tensor objects; their lazily made
    # attributes are properties instead (and still made on first use).
    assert "__getattr__" not in vars(_stream._Received)
    assert "__getattr__" not in vars(_tensor._Planned)
    a = np.arange(16, dtype=np.float32)
    hurray.from_numpy(a, name="x")  # a plan for this shape
    t = hurray.from_numpy(a, name="y")
    assert type(t) is _tensor._Planned and "_bufs" not in t.__dict__
    assert t._bufs == [(a.ctypes.data, 64)] and t._readonly is False
    a.flags.writeable = False
    assert hurray.from_numpy(a)._readonly is True
    r = hurray.StreamReader(small_wire(3))
    u = next(r)
    assert "_handle" not in u.__dict__
    h = u._handle
    assert h is u._handle and u._hp == 0 and np.array_equal(u.numpy(), np.zeros(16, np.float32))


def test_a_batchs_buffer_table_is_split_by_each_tensors_count():
    # Buffers of every result lie in one table, in order: a tensor's are found from the counts
    # before it (here one tensor with none, then one with two), never by position alone.
    import struct

    b = object.__new__(_stream._Batch)
    b.counts = [0, 2]
    b.table = struct.pack("=6Q", 0x1000, 8, 0, 0x2000, 16, 0)
    b._data = None
    assert b.buffers(0) == [] and b.buffers(1) == [(0x1000, 8), (0x2000, 16)]
    b.ptrs = []  # nothing to give back
