"""Batches (docs/spec/c-abi.md §Decoders and encoders): the writer queues small tensors and
stages each batch with one call, the reader takes every buffered tensor with one call. The
bytes and the behaviour are those of one tensor at a time."""

import gc
import io

import numpy as np
import pytest

import hurray
from hurray import _stream


def mixed_items():
    rng = np.random.default_rng(7)
    items = []
    for i in range(300):
        n = (3, 700, 5000, 40000)[i % 4]  # below and above the 16 KiB copy limit
        items.append(rng.standard_normal(n).astype(np.float32))
    return items


def write_all(arrays, batch_bytes, composite_at=None):
    w = hurray.StreamWriter(batch_bytes=batch_bytes, metadata={"k": "v"})
    for i, a in enumerate(arrays):
        w.write(hurray.from_numpy(a, name=f"t/{i}"))
        w.write(hurray.from_numpy(a))  # unnamed, same template
        if i == composite_at:
            w.write(hurray.Composite("c", {"x": hurray.from_numpy(np.arange(4, dtype=np.int32))}))
    w.finish()
    return w.getvalue()


def test_batched_bytes_equal_one_tensor_at_a_time():
    arrays = mixed_items()
    one_by_one = write_all(arrays, 0, composite_at=10)
    assert write_all(arrays, 64 * 1024, composite_at=10) == one_by_one
    assert write_all(arrays, 1 << 30, composite_at=10) == one_by_one  # everything queued until finish


def test_many_tiny_tensors_fill_more_than_one_queue():
    arrays = [np.full(1, i, np.int16) for i in range(3 * _stream._QUEUE + 5)]
    wire = write_all(arrays, 1 << 30)
    got = list(hurray.StreamReader(wire))
    assert len(got) == 2 * len(arrays)
    for i, a in enumerate(arrays):
        assert got[2 * i].name == f"t/{i}" and got[2 * i + 1].name is None
        assert np.array_equal(got[2 * i].numpy(), a)


def test_a_queued_tensor_is_copied_when_written():
    a = np.arange(100, dtype=np.float32)
    hurray.from_numpy(a, name="warm")  # a known shape: the queued path
    w = hurray.StreamWriter()
    w.write(hurray.from_numpy(a, name="x"))
    a[:] = -1  # after write returns, the array is the caller's again
    w.finish()
    (t,) = list(hurray.StreamReader(w.getvalue()))
    assert np.array_equal(t.numpy(), np.arange(100, dtype=np.float32))


def test_flush_sends_the_queue():
    out = io.BytesIO()
    a = np.arange(10, dtype=np.uint8)
    hurray.from_numpy(a)
    w = hurray.StreamWriter(out)
    w.write(hurray.from_numpy(a, name="q"))
    assert out.getvalue() == b""  # queued
    w.flush()
    sent = out.getvalue()
    assert sent and sent.count(b"q") == 1
    w.finish()


def test_reader_batches_then_composites_in_item_view():
    arrays = mixed_items()[:40]
    wire = write_all(arrays, 64 * 1024, composite_at=20)
    r = hurray.StreamReader(wire)
    first = [next(r) for _ in range(5)]  # plain iteration reads a batch ahead
    rest = list(r.items())
    assert [t.name for t in first] == ["t/0", None, "t/1", None, "t/2"]
    composites = [x for x in rest if isinstance(x, hurray.Composite)]
    assert len(composites) == 1
    assert len(first) + len(rest) == 2 * len(arrays) + 1
    names = [x.name for x in rest if not isinstance(x, hurray.Composite)]
    assert names[0] is None and names[1] == "t/3"


def test_read_tensors_outlive_the_reader_and_are_destroyed_once():
    arrays = mixed_items()[:60]
    wire = write_all(arrays, 64 * 1024)
    r = hurray.StreamReader(wire)
    kept = []
    for i, t in enumerate(r):
        if i % 3 == 0:
            kept.append((t, t.numpy()))  # others are dropped: the ledger destroys them
    r.close()
    del r
    gc.collect()
    for k, (t, view) in enumerate(kept):
        a = arrays[(3 * k) // 2]
        assert np.array_equal(view, a)
    del t, view
    kept.clear()  # after the reader is closed: destroyed at once
    gc.collect()


def test_read_after_close_is_refused_even_with_a_batch_read_ahead():
    wire = write_all([np.arange(3, dtype=np.uint8)] * 10, 64 * 1024)
    r = hurray.StreamReader(wire)
    next(r)
    r.close()
    with pytest.raises(ValueError):
        r.read()


def test_queued_names_empty_and_absent_stay_apart():
    a = np.arange(6, dtype=np.uint16)
    w = hurray.StreamWriter()
    for name in ("", None, "long/" + "n" * 4000, None, ""):
        w.write(hurray.from_numpy(a, name=name))
    w.finish()
    got = [t.name for t in hurray.StreamReader(w.getvalue())]
    assert got == ["", None, "long/" + "n" * 4000, None, ""]


class FailingSink:
    def __init__(self):
        self.out, self.fail, self.step, self.fail_after = bytearray(), False, 1 << 30, None

    def write(self, b):
        if self.fail_after is not None:
            self.fail_after -= 1
            self.fail = self.fail_after < 0
        if self.fail:
            self.fail = False
            self.fail_after = None
            raise BrokenPipeError("injected")
        n = min(self.step, len(b))
        self.out += bytes(b[:n])
        return n


def small(i):
    return hurray.from_numpy(np.full(256, i, np.float32), name=f"s{i}")


def test_a_failed_batch_send_takes_the_last_tensor_back():
    small(0)  # a known shape: queued
    sink = FailingSink()
    w = hurray.StreamWriter(sink, batch_bytes=4096)
    i = 0
    sink.fail = True
    with pytest.raises(hurray.HurrayError) as e:
        while True:  # the write that fills the batch sends it, and fails
            w.write(small(i))
            i += 1
    assert e.value.status_name == "HURRAY_ERR_TRANSPORT" and isinstance(e.value.__cause__, BrokenPipeError)
    assert i > 1 and sink.out == b""
    w.write(small(i))  # taken back: write it again
    w.write(small(i + 1))
    w.finish()
    names = [t.name for t in hurray.StreamReader(bytes(sink.out))]
    assert names == [f"s{k}" for k in range(i + 2)]


def test_a_poisoned_writer_refuses_small_tensors_at_once():
    small(0)
    sink = FailingSink()
    sink.step = 100  # the first write sends part of the batch, the next one fails
    w = hurray.StreamWriter(sink, batch_bytes=1 << 20)
    for i in range(3):
        w.write(small(i))
    assert sink.out == b""  # queued
    sink.fail_after = 1
    with pytest.raises(hurray.HurrayError) as e:
        w.flush()
    assert "poisoned" in str(e.value)
    with pytest.raises(hurray.HurrayError) as e:
        w.write(small(9))
    assert e.value.status_name == "HURRAY_ERR_POISONED"


def test_a_known_shape_written_after_finish_is_refused_at_once():
    a = np.zeros(4, np.float32)
    hurray.from_numpy(a)  # a known shape: the queued path
    w = hurray.StreamWriter()
    w.write(hurray.from_numpy(a, name="x"))
    w.finish()
    with pytest.raises(hurray.HurrayError, match="INVALID_STATE"):
        w.write(hurray.from_numpy(a, name="late"))
    w.close()
    assert [t.name for t in hurray.StreamReader(w.getvalue())] == ["x"]


def test_queue_slots_reused_across_batches_by_other_shapes_and_names():
    # Each slot keeps the descriptor spec of the plan it last held: a tensor of another plan,
    # or without the name the last one had, must not inherit it.
    shapes = [(7,), (2, 3), (7,), (0,), (2, 3)]
    for s in shapes:
        hurray.from_numpy(np.zeros(s, np.int32))  # plans
    sent = []
    w = hurray.StreamWriter(batch_bytes=100)  # a batch every few tensors
    for i in range(200):
        a = np.full(shapes[(i * 7) % 5], i, np.int32)
        name = None if i % 3 == 0 else f"n{i}"
        sent.append((a, name))
        w.write(hurray.from_numpy(a, name=name))
    w.finish()
    got = list(hurray.StreamReader(w.getvalue()))
    assert [(t.shape, t.name) for t in got] == [(a.shape, n) for a, n in sent]
    assert all(np.array_equal(t.numpy(), a) for t, (a, _) in zip(got, sent))
