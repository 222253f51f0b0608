#!/usr/bin/env python3
"""Writes the GGUF round-trip fixtures of hurray-java-formats with llama.cpp's own Python package
(gguf-py), so that GGUF -> Hurray -> GGUF is checked against files an independent writer made:

  typed.gguf          default alignment (32): metadata of every GGUF value type (uint8 ... int64,
                      float32 with -0.0, infinities, NaN and a subnormal, float64, bool, strings
                      with quotes, escapes, control characters and non-ASCII text, an empty
                      string, arrays of numbers, of bools and of strings, arrays of arrays with
                      different element types), and the tensors Q4_K [2, 256] and Q6_K [512]
                      (raw bytes: gguf-py writes them as given with raw_dtype), Q8_0 [2, 32]
                      (quantized by gguf-py) and F32 [3]
  typed-align64.gguf  general.alignment = 64 (a uint32, gguf-py's add_custom_alignment), a Q5_0
                      [32] raw tensor and an F16 [5] tensor
  typed.json          what gguf-py's GGUFReader reads in both: per file, each key with its value
                      type, an array's element type and length, the value (floats as Python's
                      repr strings; not for arrays of arrays, whose values the Java test knows),
                      and each tensor's name, ggml type, dimensions (ne0 first), offset and size

usage: make_typed_fixture.py [GGUF_PY_DIR [OUT_DIR]]   (needs numpy)
  GGUF_PY_DIR: a llama.cpp checkout's gguf-py folder, or nothing for an installed `gguf`
  (the committed files were made with gguf 0.19.0); OUT_DIR defaults to
  hurray-java-formats/src/test/resources/gguf. Deterministic: a fixed seed, no timestamps.
"""
import json
import os
import sys

from fixture_setup import output_dir

out = output_dir(sys.argv)
import numpy as np  # noqa: E402
import gguf  # noqa: E402
from gguf.quants import quantize  # noqa: E402

T = gguf.GGMLQuantizationType
V = gguf.GGUFValueType
rng = np.random.default_rng(20261202)


def raw_blocks(qt, rows, row_elements):
    """Random bytes for `rows` rows of `row_elements` elements of block type `qt` (a uint8 array of
    the byte shape gguf-py's raw_dtype expects). Any bytes are valid blocks for a byte round trip."""
    block_elements, block_bytes = gguf.GGML_QUANT_SIZES[qt]
    return rng.integers(0, 256, size=(rows, row_elements // block_elements * block_bytes), dtype=np.uint8)


# -- typed.gguf: every value type, default alignment
w = gguf.GGUFWriter(os.path.join(out, "typed.gguf"), "llama")
w.add_name("hurray typed round-trip fixture")
w.add_uint32("llama.context_length", 4096)
w.add_uint8("test.u8", 255)
w.add_int8("test.i8", -128)
w.add_uint16("test.u16", 65535)
w.add_int16("test.i16", -32768)
w.add_uint32("test.u32", 4294967295)
w.add_int32("test.i32", -2147483648)
w.add_uint64("test.u64", 18446744073709551615)
w.add_int64("test.i64", -9223372036854775808)
w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
w.add_float32("test.f32.neg_zero", -0.0)
w.add_float64("test.f64", 0.1)
w.add_float64("test.f64.inf", float("-inf"))
w.add_bool("test.bool.true", True)
w.add_bool("test.bool.false", False)
w.add_key_value("test.string.empty", "", V.STRING)
w.add_string("test.string", "quote \" backslash \\ tab \t newline \n bell \x07 ünïcödé 🦙")
w.add_string("test.string.json_like", "[1,2]")
w.add_array("tokenizer.ggml.tokens", ["<unk>", "<s>", "</s>", "\"", "\\", "\n", "<0x0A>", "Ġthe", "▁llama", "🦙", "\x00"])
w.add_array("tokenizer.ggml.scores", [0.0, -1.5, 1e-45, -0.0, float("inf"), float("-inf"), float("nan"), 3.4028234663852886e38])
w.add_array("tokenizer.ggml.token_type", [2, 3, 3, 1, 1, 1, 6, 1, 1, 1, 4])
w.add_array("test.bools", [True, False, True])
w.add_key_value("test.u64s", [0, 1, 18446744073709551615], V.ARRAY, sub_type=V.UINT64)
w.add_key_value("test.i16s", [-32768, 0, 32767], V.ARRAY, sub_type=V.INT16)
w.add_key_value("test.u8s", [0, 7, 255], V.ARRAY, sub_type=V.UINT8)
w.add_key_value("test.f64s", [0.1, -2.5e-300, 1e300], V.ARRAY, sub_type=V.FLOAT64)
w.add_array("test.nested", [[1, 2, 3], ["a", "b"], [[True], [7]], [0.5]])
w.add_array("test.nested.same", [[1, 2], [3], [4, 5, 6]])
x = (rng.standard_normal((2, 32)) * 3).astype(np.float32)
w.add_tensor("blk.0.attn_k.weight", raw_blocks(T.Q4_K, 2, 256), raw_dtype=T.Q4_K)
w.add_tensor("blk.0.ffn_down.weight", raw_blocks(T.Q6_K, 1, 512), raw_dtype=T.Q6_K)
w.add_tensor("blk.0.attn_q.weight", quantize(x, T.Q8_0), raw_dtype=T.Q8_0)
w.add_tensor("output_norm.weight", rng.standard_normal(3).astype(np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

# -- typed-align64.gguf: a custom alignment
w = gguf.GGUFWriter(os.path.join(out, "typed-align64.gguf"), "llama")
w.add_custom_alignment(64)
w.add_uint32("llama.block_count", 1)
w.add_tensor("blk.0.attn_v.weight", raw_blocks(T.Q5_0, 1, 32).reshape(-1), raw_dtype=T.Q5_0)
w.add_tensor("token_embd.weight", rng.standard_normal(5).astype(np.float16))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()


manifest = {}
for name in ("typed.gguf", "typed-align64.gguf"):
    r = gguf.GGUFReader(os.path.join(out, name))
    fields = []
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        e = {"key": f.name, "type": int(f.types[0])}
        if f.types[0] == V.ARRAY:
            e["element_type"] = int(f.types[1])
            if f.types[1] != V.ARRAY:
                e["length"] = len(f.data)
        # gguf-py's reader returns nested arrays' inner values only for one level of scalars;
        # the nested keys are compared by the Java test against the values written above.
        if f.types[0] != V.ARRAY or f.types[1] != V.ARRAY:
            v = f.contents()
            e["value"] = [repr(x) for x in v] if isinstance(v, list) and v and isinstance(v[0], float) \
                else repr(v) if isinstance(v, float) else v
        fields.append(e)
    manifest[name] = {
        "alignment": int(r.alignment),
        "data_offset": int(r.data_offset),
        "metadata": fields,
        "tensors": [{"name": t.name, "type": int(t.tensor_type), "dims": [int(d) for d in t.shape],
                     "offset": int(t.data_offset) - int(r.data_offset), "bytes": int(t.n_bytes)} for t in r.tensors],
    }
with open(os.path.join(out, "typed.json"), "w", encoding="utf-8") as fh:
    json.dump(manifest, fh, indent=1, ensure_ascii=True)
    fh.write("\n")
for name, m in manifest.items():
    print(name, os.path.getsize(os.path.join(out, name)), "bytes;", len(m["metadata"]), "keys;",
          [(t["name"], T(t["type"]).name, t["dims"]) for t in m["tensors"]])
