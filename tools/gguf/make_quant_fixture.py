#!/usr/bin/env python3
"""Writes the GGUF block-quantization fixture of hurray-java-formats with llama.cpp's own Python
package (gguf-py), so the Java reader and the native dequantizer are checked against an
independent implementation rather than against the tests' own decode.

  quant.gguf                 written by gguf-py's GGUFWriter: Q8_0 [3, 4, 64], Q4_0 [5, 96],
                             Q4_1 [2, 64] (carried as raw bytes) and F32 [7] tensors, each
                             quantized by gguf-py's numpy quantizer from seeded normal values
  quant-dequantized.npz      gguf-py's own dequantization of the Q8_0 and Q4_0 tensors (and
                             the F32 values), float32, one member per tensor name

usage: make_quant_fixture.py [GGUF_PY_DIR [OUT_DIR]]   (needs numpy)
  GGUF_PY_DIR: a llama.cpp checkout's gguf-py folder, or nothing for an installed `gguf`
  (the committed files were made with gguf 0.19.0); OUT_DIR defaults to
  hurray-java-formats/src/test/resources/gguf. Deterministic: a fixed seed, no timestamps.
"""
import os
import sys

from fixture_setup import output_dir

out = output_dir(sys.argv)
import numpy as np  # noqa: E402
import gguf  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

T = gguf.GGMLQuantizationType
rng = np.random.default_rng(20261201)
w = gguf.GGUFWriter(os.path.join(out, "quant.gguf"), "llama")
w.add_name("hurray q8_0/q4_0 fixture")
ref = {}
for name, qt, shape in [("blk.0.attn_q.weight", T.Q8_0, (3, 4, 64)),
                        ("blk.0.ffn_up.weight", T.Q4_0, (5, 96)),
                        ("blk.0.ffn_down.weight", T.Q4_1, (2, 64)),
                        ("output_norm.weight", T.F32, (7,))]:
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if qt == T.F32:
        w.add_tensor(name, x)
        ref[name] = x
        continue
    q = quantize(x, qt)
    w.add_tensor(name, q, raw_dtype=qt)
    if qt in (T.Q8_0, T.Q4_0):
        ref[name] = dequantize(q, qt).reshape(shape).astype(np.float32)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
np.savez(os.path.join(out, "quant-dequantized.npz"), **ref)
for t in gguf.GGUFReader(os.path.join(out, "quant.gguf")).tensors:
    print(t.name, t.tensor_type.name, [int(d) for d in t.shape], int(t.n_bytes))
