"""The four transport rules (docs/spec/stream.md §Transport rules) with Python sources and
sinks: short counts, failures that resume, failures that poison, closed sinks, sockets."""

import io
import os
import socket
import threading

import numpy as np
import pytest

import hurray
from conftest import golden


class Trickle(io.RawIOBase):
    """Gives at most ``step`` bytes per read; raises once at byte offsets in ``fail_at``."""

    def __init__(self, data, step=1, fail_at=()):
        self.data, self.pos, self.step, self.fail_at = data, 0, step, set(fail_at)

    def readable(self):
        return True

    def readinto(self, b):
        if self.pos in self.fail_at:
            self.fail_at.discard(self.pos)
            raise ConnectionResetError(f"injected at {self.pos}")
        n = min(self.step, len(b), len(self.data) - self.pos)
        b[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


class Sink:
    """Accepts at most ``step`` bytes per write; raises (or returns 0) once it has ``fail_at`` bytes."""

    def __init__(self, step=1 << 30, fail_at=None, closed_at=None):
        self.out, self.step, self.fail_at, self.closed_at = bytearray(), step, fail_at, closed_at

    def write(self, b):
        if self.fail_at is not None and len(self.out) >= self.fail_at:
            self.fail_at = None
            raise BrokenPipeError("injected")
        if self.closed_at is not None and len(self.out) >= self.closed_at:
            return 0
        n = min(self.step, len(b))
        self.out += bytes(b[:n])
        return n


def test_short_reads_give_the_same_tensors():
    data = golden("stream_v1_checksums.hrry")
    whole = [bytes(b) for t in hurray.StreamReader(data) for b in t.buffers()]
    for step in (1, 7, 4096):
        got = [bytes(b) for t in hurray.StreamReader(Trickle(data, step)) for b in t.buffers()]
        assert got == whole


def test_a_failed_read_resumes_mid_tensor():
    data = golden("stream_v1_checksums.hrry")
    expected = [t.name for t in hurray.StreamReader(data)]
    src = Trickle(data, step=13, fail_at={13 * k for k in range(3, len(data) // 13, 17)})
    r = hurray.StreamReader(src)
    names, failures = [], 0
    while True:
        try:
            t = r.read()
        except hurray.HurrayError as e:
            assert e.status_name == "HURRAY_ERR_TRANSPORT"
            assert isinstance(e.__cause__, ConnectionResetError)
            failures += 1
            continue
        if t is None:
            break
        names.append(t.name)
    assert failures > 5 and names == expected


def test_end_of_input_inside_an_item_is_truncated():
    data = golden("stream_v1_plain.hrry")
    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.StreamReader(Trickle(data[:-9], 5)))
    assert e.value.status_name == "HURRAY_ERR_TRUNCATED"


def tensors(n=50, size=300):
    return [hurray.from_numpy(np.full(size, i, np.float32), name=f"t{i}") for i in range(n)]


def read_names(data):
    return [t.name for t in hurray.StreamReader(bytes(data))]


def test_short_writes_give_the_same_bytes():
    ref = hurray.StreamWriter()
    sink = Sink(step=3)
    w = hurray.StreamWriter(sink)
    for t in tensors():
        ref.write(t)
        w.write(t)
    ref.finish()
    w.finish()
    assert bytes(sink.out) == ref.getvalue()


def test_a_failure_before_the_item_is_sent_takes_it_back():
    big = hurray.from_numpy(np.arange(100_000, dtype=np.float32), name="big")  # > 64 KiB: sent at once
    sink = Sink()
    w = hurray.StreamWriter(sink)
    w.write(tensors(1)[0])
    w.flush()
    sink.fail_at = len(sink.out)
    with pytest.raises(hurray.HurrayError) as e:
        w.write(big)
    assert e.value.status_name == "HURRAY_ERR_TRANSPORT" and isinstance(e.value.__cause__, BrokenPipeError)
    w.write(big)  # the writer is still good: the item was not sent
    w.finish()
    assert read_names(sink.out) == ["t0", "big"]


def test_a_failure_after_the_first_byte_poisons_the_writer():
    big = hurray.from_numpy(np.arange(100_000, dtype=np.float32), name="big")
    sink = Sink(step=1000, fail_at=5000)
    w = hurray.StreamWriter(sink)
    with pytest.raises(hurray.HurrayError) as e:
        w.write(big)
    assert "poisoned" in str(e.value)
    with pytest.raises(hurray.HurrayError) as e:
        w.write(tensors(1)[0])
    assert e.value.status_name == "HURRAY_ERR_POISONED"
    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.StreamReader(bytes(sink.out)))
    assert e.value.status_name == "HURRAY_ERR_TRUNCATED"


def test_a_closed_sink_is_reported():
    w = hurray.StreamWriter(Sink(closed_at=0))
    w.write(tensors(1)[0])
    with pytest.raises(hurray.HurrayError) as e:
        w.finish()
    assert e.value.status_name == "HURRAY_ERR_SINK_CLOSED"


def test_fd_and_file_targets(tmp_path):
    p = tmp_path / "s.hrrys"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT)
    with hurray.StreamWriter(fd) as w:
        for t in tensors(5):
            w.write(t)
    os.close(fd)
    with open(p, "rb") as f:
        assert [t.name for t in hurray.StreamReader(f)] == [f"t{i}" for i in range(5)]
    fd = os.open(p, os.O_RDONLY)
    assert len(list(hurray.StreamReader(fd))) == 5
    os.close(fd)


def test_loopback_socket_both_ways():
    a, b = socket.socketpair()
    payloads = [np.random.default_rng(i).standard_normal(n).astype(np.float32) for i, n in enumerate([1, 3000, 70_000, 5_000_000])]

    def send():
        with a, hurray.StreamWriter(a, metadata={"from": "thread"}) as w:
            for i, p in enumerate(payloads):
                w.write(hurray.from_numpy(p, name=f"p{i}"))

    th = threading.Thread(target=send)
    th.start()
    with b:
        r = hurray.StreamReader(b)
        got = list(r)
        assert r.metadata == {"from": b"thread"}
    th.join()
    for t, p in zip(got, payloads):
        np.testing.assert_array_equal(t.numpy(), p)
    assert len(got) == len(payloads)


def test_the_reader_uses_the_callers_exceptions_only_as_causes():
    class Boom:
        def read(self, n):
            raise KeyboardInterrupt  # even BaseExceptions come back from the call, not from C

    with pytest.raises(hurray.HurrayError) as e:
        hurray.StreamReader(Boom()).read()
    assert isinstance(e.value.__cause__, KeyboardInterrupt)


def test_a_failure_inside_a_large_payload_keeps_the_bytes_that_arrived():
    a = np.random.default_rng(1).standard_normal(300_000).astype(np.float32)  # 1.2 MB: read in place
    w = hurray.StreamWriter()
    w.write(hurray.from_numpy(a, name="big"))
    w.write(hurray.from_numpy(a[:10], name="small"))
    w.finish()
    data = w.getvalue()
    r = hurray.StreamReader(Trickle(data, step=50_000, fail_at={200_000, 650_000, 1_100_000}))
    got, failures = [], 0
    while True:
        try:
            t = r.read()
        except hurray.HurrayError as e:
            assert e.status_name == "HURRAY_ERR_TRANSPORT" and isinstance(e.__cause__, ConnectionResetError)
            failures += 1
            continue
        if t is None:
            break
        got.append(t)
    assert failures == 3 and [t.name for t in got] == ["big", "small"]
    np.testing.assert_array_equal(got[0].numpy(), a)


class Recorder(Trickle):
    """Serves every read in full and records each read's size (the region the reader offered)."""

    def __init__(self, data):
        super().__init__(data, step=len(data))
        self.sizes = []

    def readinto(self, b):
        self.sizes.append(len(b))
        return super().readinto(b)


def test_a_stream_of_large_tensors_reads_each_payload_whole_into_its_tensor():
    arrays = [np.full(1 << 18, i, np.float32) for i in range(5)]  # 1 MiB each
    names = ["big/0", "big/1", "big/2", "big/3", "big/four"]  # the last descriptor is longer
    w = hurray.StreamWriter()
    for name, a in zip(names, arrays):
        w.write(hurray.from_numpy(a, name=name))
    w.finish()
    src = Recorder(w.getvalue())
    got = list(hurray.StreamReader(src))
    assert [t.name for t in got] == names
    for t, a in zip(got, arrays):
        np.testing.assert_array_equal(t.numpy(), a)
    # The first tensor: the 64 KiB read-ahead, then its payload's rest. Each later one of the
    # same descriptor length: its frame header and descriptor alone, then its whole payload
    # (docs/spec/stream.md §Read-ahead); a longer descriptor: one more read for its rest.
    sizes = src.sizes
    assert sizes[0] == 64 * 1024 and sizes[1] < 1 << 20
    frame = sizes[2]
    assert frame < 4096 and sizes[2:8] == [frame, 1 << 20] * 3, sizes
    assert sizes[8] == frame and sizes[9] == len("four") - len("3") and sizes[10] == 1 << 20, sizes


@pytest.mark.skipif(
    not (os.uname().sysname == "Linux" and os.uname().machine in ("x86_64", "aarch64", "riscv64")),
    reason="the library's page allocator is Linux on x86_64, aarch64 and riscv64 only",
)
def test_a_pooled_reader_puts_tensors_of_4_mib_or_more_in_huge_page_aligned_memory():
    # docs/spec/stream.md §Buffer pool: a pool's new allocation of at least 4 MiB is a map of
    # the page allocator (2 MiB aligned, advised for huge pages; 32 MiB without a pool), so
    # its first filling costs a fault per 2 MiB, not per 4 KiB, and every reuse keeps that.
    huge = 2 << 20
    w = hurray.StreamWriter()
    for n in (4 << 20, 8 << 20, (4 << 20) - 64):
        w.write(hurray.from_numpy(np.full(n // 4, 7, np.float32)))
    w.finish()
    wire = w.getvalue()

    def addresses(reader):
        got = list(reader)  # all alive: none of their memory is reused for the next
        assert all((t.numpy() == 7).all() for t in got)
        return [t.numpy().ctypes.data for t in got]

    four, eight, below = addresses(hurray.StreamReader(wire))
    assert four % huge == 0 and eight % huge == 0
    assert below % huge != 0  # below 4 MiB: the C allocator
    # Without a pool, 4 and 8 MiB stay with the C allocator (which reuses freed blocks).
    assert all(p % huge != 0 for p in addresses(hurray.StreamReader(wire, buffer_pool_bytes=0)))


class CountingSocket(socket.socket):
    """A socket that records the views of each scatter read."""

    def __init__(self, sock):
        super().__init__(fileno=sock.detach())
        self.scatters = []

    def recvmsg_into(self, buffers, *args):
        self.scatters.append([len(memoryview(b)) for b in buffers])
        return super().recvmsg_into(buffers, *args)


@pytest.mark.parametrize("checksums", [False, True])
def test_a_socket_reads_a_large_payload_and_the_next_descriptor_in_one_scatter_read(checksums):
    arrays = [np.full(1 << 18, i, np.float32) for i in range(6)]  # 1 MiB each
    a, b = socket.socketpair()
    rx = CountingSocket(b)

    def send():
        with hurray.StreamWriter(a, payload_checksums=checksums) as w:
            for i, x in enumerate(arrays):
                w.write(hurray.from_numpy(x, name=f"big/{i}"))
        a.close()

    th = threading.Thread(target=send)
    th.start()
    got = [(t.name, t.numpy().copy()) for t in hurray.StreamReader(rx)]
    th.join()
    rx.close()
    assert [n for n, _ in got] == [f"big/{i}" for i in range(6)]
    for (_, x), want in zip(got, arrays):
        np.testing.assert_array_equal(x, want)
    # Each payload after the first is read with the region after it (its checksum, the next
    # frame header and descriptor: far less than the read-ahead), in as many scatter reads
    # as the socket needs.
    assert len(rx.scatters) >= 5
    assert all(len(v) == 2 and v[1] < 4096 for v in rx.scatters), rx.scatters


def test_close_ends_the_stream_but_not_after_a_failure_or_an_exception():
    sink = Sink()
    w = hurray.StreamWriter(sink)
    w.write(tensors(1)[0])
    w.close()
    w.close()
    assert read_names(sink.out) == ["t0"]
    sink = Sink()
    with pytest.raises(RuntimeError):
        with hurray.StreamWriter(sink) as w:
            w.write(tensors(1)[0])
            raise RuntimeError("producer failed")
    with pytest.raises(hurray.HurrayError) as e:
        read_names(sink.out)  # not ended as if complete
    assert e.value.status_name == "HURRAY_ERR_TRUNCATED"


def test_a_callback_transport_runs_while_other_threads_stream(tmp_path):
    # The stream's small calls keep the GIL (lib.held); the file writer's callback needs it
    # from inside a library call on another thread. Neither may stall the other.
    a, b = socket.socketpair()
    n = 20_000
    done = {}

    def send():
        with a, hurray.StreamWriter(a) as w:
            for i in range(n):
                w.write(hurray.from_numpy(np.full(8, i, np.int32), name=f"s{i}"))

    def store():
        with hurray.FileWriter(tmp_path / "f.hurray") as fw:
            for i in range(200):
                fw.add(hurray.from_numpy(np.full(20_000, i, np.float32)), name=f"f{i}")
        done["file"] = True

    threads = [threading.Thread(target=send), threading.Thread(target=store)]
    for th in threads:
        th.start()
    with b:
        got = [int(t.numpy()[0]) for t in hurray.StreamReader(b)]
    for th in threads:
        th.join(60)
        assert not th.is_alive()
    assert got == list(range(n)) and done["file"]
    f = hurray.File.open(tmp_path / "f.hurray")
    assert len(f) == 200 and float(f["f199"].numpy()[0]) == 199.0
