"""HRRYFILE: golden files, lookup, in-place reads from a map, atomic writes."""

import json
import os

import numpy as np
import pytest

import hurray
from conftest import GOLDEN, golden, need


def test_golden_container_names_and_metadata():
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    c = [x for x in manifest["containers"] if x["file"] == "file_v1.hrryfile"][0]
    for opener in (hurray.File.open, hurray.File.map):
        with opener(GOLDEN / "file_v1.hrryfile") as f:
            assert len(f) == c["tensor_count"]
            names = f.names()
            assert "dtype/float32" in f and "nope" not in f
            t = f["dtype/float32"]
            assert t.shape == (2, 3) and t.name == "dtype/float32"
            assert len(f.metadata) == 4
            assert [x.name for x in f] == names
            f.verify()


def test_write_then_read_in_place(tmp_path):
    p = tmp_path / "m.hrry"
    a = np.arange(10_000, dtype=np.float32).reshape(100, 100)
    with hurray.FileWriter(p, metadata={"model": "m"}, min_payload_alignment=4096) as w:
        w.add(hurray.from_numpy(a, name="w"))
        w.add(hurray.from_numpy(a[:, ::2]), name="half")
        w.add(hurray.Composite("layer", {"weight": hurray.from_numpy(a[:2]), "bias": hurray.from_numpy(a[0])}))
    with hurray.File.map(p) as f:
        t = f["w"]
        np.testing.assert_array_equal(t.numpy(), a)
        base = f._map.ctypes.data
        assert base <= t.buffers()[0].ctypes.data < base + f._map.nbytes  # points into the map
        assert t.buffers()[0].ctypes.data % 4096 == 0
        np.testing.assert_array_equal(f["half"].numpy(), a[:, ::2])
        c = f.composite("layer")
        np.testing.assert_array_equal(c["bias"].numpy(), a[0])
        assert f.metadata == {"model": b"m"}
        with pytest.raises(KeyError):
            f["missing"]
    with hurray.File.open(p) as f:
        np.testing.assert_array_equal(f["w"].numpy(), a)


def test_finish_is_atomic(tmp_path):
    p = tmp_path / "a.hrry"
    with pytest.raises(RuntimeError):
        with hurray.FileWriter(p) as w:
            w.add(hurray.from_numpy(np.zeros(3), name="x"))
            raise RuntimeError("abandon")
    assert not p.exists() and list(tmp_path.iterdir()) == []
    w = hurray.FileWriter(p)
    w.add(hurray.from_numpy(np.zeros(3), name="x"))
    with pytest.raises(hurray.HurrayError) as e:
        w.add(hurray.from_numpy(np.zeros(3), name="x"))
    assert e.value.status_name == "HURRAY_ERR_DUPLICATE_NAME"
    with pytest.raises(hurray.HurrayError):
        w.add(hurray.from_numpy(np.zeros(3)))  # unnamed
    assert not p.exists()
    size = w.finish()
    assert p.stat().st_size == size
    assert [x.name for x in tmp_path.iterdir()] == ["a.hrry"]


def test_stream_bytes_are_not_a_container(tmp_path):
    p = tmp_path / "s"
    p.write_bytes(golden("stream_v1_plain.hrry"))
    with pytest.raises(hurray.HurrayError):
        hurray.File.open(p)


def test_a_failing_file_write_comes_back_as_the_cause(tmp_path):
    p = tmp_path / "f.hrry"
    w = hurray.FileWriter(p)
    ro = os.open(p.parent, os.O_RDONLY)  # a descriptor that refuses writes, in the writer's slot:
    os.dup2(ro, w._fd)  # every write now raises OSError inside the library's callback
    os.close(ro)
    with pytest.raises(hurray.HurrayError) as e:
        w.add(hurray.from_numpy(np.zeros(1 << 20, np.uint8), name="big"))
        w.finish()
    assert e.value.status_name == "HURRAY_ERR_TRANSPORT" and isinstance(e.value.__cause__, OSError)
    w.close()
    assert not p.exists() and list(tmp_path.iterdir()) == []


def test_a_safetensors_checkpoint_becomes_an_hrryfile(tmp_path):
    st = need("safetensors.numpy")
    tensors = {"layer0/w": np.arange(12, dtype=np.float32).reshape(3, 4), "layer0/b": np.ones(4, np.int64)}
    st.save_file(tensors, str(tmp_path / "m.safetensors"))
    with hurray.FileWriter(tmp_path / "m.hrry") as w:
        for name, value in st.load_file(str(tmp_path / "m.safetensors")).items():
            w.add(hurray.from_numpy(value, name=name))
    with hurray.File.map(tmp_path / "m.hrry") as f:
        assert sorted(f.names()) == sorted(tensors)
        for name, value in tensors.items():
            np.testing.assert_array_equal(f[name].numpy(), value)


def test_a_finished_file_has_the_mode_a_plain_open_gives(tmp_path):
    import stat

    umask = os.umask(0o022)
    try:
        p = tmp_path / "m.hrry"
        with hurray.FileWriter(p) as w:
            w.add(hurray.from_numpy(np.arange(3, dtype=np.float32), name="x"))
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
    finally:
        os.umask(umask)
