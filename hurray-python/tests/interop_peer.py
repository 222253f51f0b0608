"""The Python side of PythonInteropTest (src/test/java): started by the JUnit test with the
installed package on PYTHONPATH. Modes:
    send PORT / recv PORT        connect to the Java side on 127.0.0.1:PORT and send or receive
                                 10,000 named float32[768] tensors, then the mixed stream
    write-file PATH / read-file PATH
Exits 0 after printing "ok ..." when every value checked out; any failure raises (exit 1)."""

import socket
import sys

import numpy as np

import hurray

N, D = 10_000, 768
FP8 = [0, 0.5, 1, 1.5, 2, 3, 4, -1, -2, 448, 0.25, 8, 16, 32, 64, -0.5]
CSR = np.array([[0, 1.5, 0, 0], [0, 0, -2, 3]], np.float32)


def values(i):
    return ((np.arange(D, dtype=np.int64) + i * D) % 65521).astype(np.float32)


def nf4_input():
    return (((np.arange(256) * 7919) % 1000).astype(np.float32) / np.float32(100) - np.float32(5)).reshape(4, 64)


def fp8_tensor():
    try:
        import ml_dtypes

        return hurray.from_numpy(np.array(FP8, np.float32).astype(ml_dtypes.float8_e4m3fn), name="mixed/fp8")
    except ImportError:  # the same bytes without ml_dtypes
        raw = np.array([0, 48, 56, 60, 64, 68, 72, 184, 192, 126, 40, 80, 88, 96, 104, 176], np.uint8)
        return hurray.from_buffer(raw, "float8_e4m3fn", (16,), name="mixed/fp8")


def mixed():
    bf16 = (np.arange(32, dtype=np.float32) * 0.5).view(np.uint32) >> 16
    return [
        hurray.from_buffer(bf16.astype(np.uint16), "bfloat16", (4, 8), name="mixed/bf16"),
        fp8_tensor(),
        hurray.from_buffer(np.array([0x21, 0x43, 0x05], np.uint8), "int4", (5,), name="mixed/int4"),
        hurray.csr(np.array([1.5, -2, 3], np.float32), np.array([0, 1, 3], np.int32), np.array([1, 2, 3], np.int32),
                   (2, 4), name="mixed/csr"),
        hurray.quantize(nf4_input(), kind="nf4", name="mixed/nf4"),
        hurray.Composite("mixed/layer", {
            "weight": hurray.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)),
            "bias": hurray.from_numpy(np.array([0.5, 0.25, 2], np.float32)),
        }),
    ]


def check_mixed(items):
    names = [i.name for i in items]
    assert names == ["mixed/bf16", "mixed/fp8", "mixed/int4", "mixed/csr", "mixed/nf4", "mixed/layer"], names
    bf16, fp8, int4, csr, nf4, layer = items
    assert bf16.dtype.name == "bfloat16" and bf16.shape == (4, 8)
    np.testing.assert_array_equal(bf16.dequantize(), (np.arange(32, dtype=np.float32) * 0.5).reshape(4, 8))
    assert fp8.dtype.name == "float8_e4m3fn"
    np.testing.assert_array_equal(fp8.dequantize(), np.array(FP8, np.float32))
    assert int4.dtype.name == "int4"
    np.testing.assert_array_equal(int4.dequantize(), np.arange(1, 6, dtype=np.float32))
    assert csr.layout == "csr"
    np.testing.assert_array_equal(csr.densify(), CSR)
    assert nf4.quantization.kind == "nf4"
    np.testing.assert_array_equal(nf4.dequantize(), hurray.quantize(nf4_input(), kind="nf4").dequantize())
    assert isinstance(layer, hurray.Composite) and list(layer) == ["weight", "bias"]
    np.testing.assert_array_equal(layer["weight"].numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(layer["bias"].numpy(), np.array([0.5, 0.25, 2], np.float32))


def send(port):
    with socket.create_connection(("127.0.0.1", port)) as s, hurray.StreamWriter(s) as w:
        for i in range(N):
            w.write(hurray.from_numpy(values(i), name=f"emb/{i}", metadata={"i": str(i)}))
        for t in mixed():
            w.write(t)
    print("ok sent", N + 6)


def recv(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        r = hurray.StreamReader(s)
        for i in range(N):
            t = r.read()
            assert t is not None, f"stream ended after {i} tensors"
            assert t.name == f"emb/{i}" and t.shape == (D,) and t.dtype.name == "float32", t
            assert t.metadata == {"i": str(i).encode()}, t.metadata
            np.testing.assert_array_equal(t.numpy(), values(i))
        items = list(r.items())
    check_mixed(items)
    print("ok received", N + len(items))


def write_file(path):
    with hurray.FileWriter(path, metadata={"writer": "python"}) as w:
        for i in range(100):
            w.add(hurray.from_numpy(values(i), name=f"emb/{i}", metadata={"i": str(i)}))
        for t in mixed():
            w.add(t)
    print("ok wrote", path)


def read_file(path):
    with hurray.File.map(path) as f:
        assert f.metadata == {"writer": b"java"}, f.metadata
        for i in range(100):
            t = f[f"emb/{i}"]
            assert t.metadata == {"i": str(i).encode()}
            np.testing.assert_array_equal(t.numpy(), values(i))
        items = [f[n] for n in ("mixed/bf16", "mixed/fp8", "mixed/int4", "mixed/csr", "mixed/nf4")]
        items.append(f.composite("mixed/layer"))
        check_mixed(items)
    print("ok read", path)


if __name__ == "__main__":
    mode, arg = sys.argv[1], sys.argv[2]
    {"send": lambda: send(int(arg)), "recv": lambda: recv(int(arg)), "write-file": lambda: write_file(arg),
     "read-file": lambda: read_file(arg)}[mode]()
