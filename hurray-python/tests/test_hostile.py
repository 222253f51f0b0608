"""Hostile input gets a clear HurrayError and nothing else: the strict prefixes and bit flips
of the golden vectors (as the Rust, C and Java tests use them), and crafted streams and files."""

import numpy as np
import pytest

import hurray
from conftest import STREAMS, golden


def read_all(data, **kw):
    return [t for t in hurray.StreamReader(data, **kw)]


@pytest.mark.parametrize("name", list(STREAMS))
def test_every_strict_prefix_is_truncated(name):
    data = golden(name)
    step = max(1, len(data) // 300)
    for n in list(range(0, len(data), step)) + [len(data) - 1]:
        with pytest.raises(hurray.HurrayError) as e:
            read_all(data[:n])
        assert e.value.status_name == "HURRAY_ERR_TRUNCATED", n


def test_every_bit_flip_of_a_checksummed_stream_is_detected():
    data = bytearray(golden("stream_v1_checksums.hrry"))
    detected = {"HURRAY_ERR_CORRUPT", "HURRAY_ERR_INVALID_MAGIC", "HURRAY_ERR_VERSION_MISMATCH", "HURRAY_ERR_UNSUPPORTED"}
    for i in range(0, len(data), 3):
        bit = 1 << (i % 8)
        data[i] ^= bit
        with pytest.raises(hurray.HurrayError) as e:
            read_all(bytes(data))
        assert e.value.status_name in detected, i
        data[i] ^= bit


def test_garbage_and_limits():
    with pytest.raises(hurray.HurrayError) as e:
        read_all(b"NOTHURRAY" * 10)
    assert e.value.status_name == "HURRAY_ERR_INVALID_MAGIC"
    big = hurray.StreamWriter()
    big.write(hurray.from_numpy(np.zeros(1 << 16, np.uint8)))
    big.finish()
    with pytest.raises(hurray.HurrayError) as e:
        read_all(big.getvalue(), max_tensor_bytes=1024)
    assert e.value.status_name == "HURRAY_ERR_LIMIT_EXCEEDED"
    with pytest.raises(hurray.HurrayError) as e:
        read_all(golden("stream_v1_plain.hrry"), require_checksums=True)


def test_errors_are_sticky():
    r = hurray.StreamReader(golden("stream_v1_plain.hrry")[:100])
    for _ in range(3):
        with pytest.raises(hurray.HurrayError):
            r.read()


def test_hostile_containers(tmp_path):
    data = (tmp_path / "x")
    good = golden("file_v1.hrryfile")
    for cut in (0, 10, len(good) // 2, len(good) - 1):
        data.write_bytes(good[:cut])
        for opener in (hurray.File.open, hurray.File.map):
            with pytest.raises(hurray.HurrayError):
                opener(data)
    flipped = bytearray(good)
    flipped[len(good) // 3] ^= 0x10
    data.write_bytes(bytes(flipped))
    with pytest.raises(hurray.HurrayError):
        f = hurray.File.open(data)
        f.verify()
        list(f)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_tensor_bytes": 2**64},
        {"max_tensor_bytes": -1},
        {"max_descriptor_bytes": 2**64 + 100},
        {"max_rank": -1},
        {"max_rank": 2**32},
        {"buffer_pool_bytes": -1},
    ],
)
def test_reader_limits_out_of_range_are_refused_not_wrapped(kwargs):
    # ctypes would wrap these silently (2**64 to 0, -1 to unlimited).
    with pytest.raises(ValueError, match="outside"):
        hurray.StreamReader(b"", **kwargs)


def test_reader_limit_of_the_wrong_type_is_refused():
    with pytest.raises(TypeError):
        hurray.StreamReader(b"", max_tensor_bytes=1.5)
    with pytest.raises(TypeError):
        hurray.StreamReader(b"", max_rank=True)


def test_a_file_with_a_descriptor_over_the_default_limit_opens_with_a_raised_limit(tmp_path):
    path = tmp_path / "large.hrry"
    metadata = {f"k{i}": b"v" * 65536 for i in range(20)}  # ~1.3 MB descriptor, over 1 MiB
    w = hurray.FileWriter(path)
    w.add(hurray.from_numpy(np.arange(4, dtype=np.uint8), name="a", metadata=metadata))
    w.finish()
    with pytest.raises(hurray.HurrayError, match="exceeds the limit"):
        with hurray.File.open(path) as f:
            f["a"]
    for opener in (hurray.File.open, hurray.File.map):
        with opener(path, max_descriptor_bytes=16 << 20) as f:
            t = f["a"]
            assert t.metadata["k7"] == b"v" * 65536
            assert np.array_equal(t.numpy(), np.arange(4, dtype=np.uint8))
    with pytest.raises(ValueError):
        hurray.File.open(path, max_descriptor_bytes=-1)
