#!/usr/bin/env python3
"""Writes what llama.cpp's own GGUF reader (gguf-py, from the same llama.cpp checkout) sees in
each *.gguf file of a folder, as manifest.json in that folder: version, alignment, data offset,
each metadata key with its value type, element type and array length (and the value itself for
scalars and strings), and each tensor's name, dimensions, ggml type and offset. The formats
module's GgufTest compares its own reader against it.

usage: manifest.py LLAMA_CPP_CHECKOUT GGUF_FOLDER   (needs numpy)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "gguf-py"))
from gguf.gguf_reader import GGUFReader  # noqa: E402
from gguf.constants import GGUFValueType  # noqa: E402

folder = sys.argv[2]
out = {}
for name in sorted(os.listdir(folder)):
    if not name.endswith(".gguf"):
        continue
    r = GGUFReader(os.path.join(folder, name))
    fields = []
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        e = {"key": f.name, "type": int(f.types[0])}
        if f.types[0] == GGUFValueType.ARRAY:
            e["element_type"] = int(f.types[-1])
            e["length"] = len(f.data)
            if len(f.data) and f.types[-1] == GGUFValueType.STRING:
                e["first"] = f.contents(0)
                e["last"] = f.contents(len(f.data) - 1)
            elif len(f.data) and f.types[-1] != GGUFValueType.ARRAY:
                e["first"] = f.contents(0)
        else:
            v = f.contents()
            e["value"] = v if not isinstance(v, float) else repr(v)
        fields.append(e)
    out[name] = {
        "version": int(r.fields["GGUF.version"].parts[-1][0]),
        "alignment": int(r.alignment),
        "data_offset": int(r.data_offset),
        "metadata": fields,
        "tensors": [
            {"name": t.name, "dims": [int(d) for d in t.shape], "type": int(t.tensor_type),
             "offset": int(t.data_offset) - int(r.data_offset), "bytes": int(t.n_bytes)}
            for t in r.tensors
        ],
    }
with open(os.path.join(folder, "manifest.json"), "w") as fh:
    json.dump(out, fh, indent=1, ensure_ascii=False)
print(f"manifest.py: {len(out)} files described in {folder}/manifest.json")
