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
