#!/usr/bin/env python3
"""Writes the committed seed corpora of native/fuzz/seeds/<target>/ from the golden vectors
(src/golden, described by its manifest.json). Deterministic: rerun after regenerating the
golden vectors and commit the result.

Input formats (see each harness):
  fuzz_descriptor: an encoded descriptor.
  fuzz_stream:     byte 0 = plan length L (taken mod 64), L plan bytes, then the stream.
  fuzz_file:       byte 0 = plan length L (mod 64), L plan bytes, then the container.
  fuzz_decoder:    as fuzz_stream (plan, then the stream).
  fuzz_writer:     byte 0 = plan length L (mod 64), L plan bytes, then one or more
                   [u16 little-endian length, encoded descriptor] records.
"""
import hashlib
import json
import os
import shutil
import struct

here = os.path.dirname(os.path.abspath(__file__))
golden = os.path.join(here, "..", "..", "src", "golden")
seeds = os.path.join(here, "seeds")
manifest = json.load(open(os.path.join(golden, "manifest.json")))


def put(target, data):
    d = os.path.join(seeds, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


for t in ("fuzz_descriptor", "fuzz_stream", "fuzz_file", "fuzz_writer", "fuzz_decoder"):
    shutil.rmtree(os.path.join(seeds, t), ignore_errors=True)

descs = []
for group in ("streams", "containers"):
    for s in manifest[group]:
        for t in s["tensors"]:
            descs.append(bytes.fromhex(t["descriptor_hex"]))
for d in sorted(set(descs)):
    put("fuzz_descriptor", d)

plans = [b"", bytes([7, 1, 0, 200, 3]), bytes([0, 9, 16, 0, 255, 2, 8, 0, 33])]
for s in manifest["streams"]:
    data = open(os.path.join(golden, s["file"]), "rb").read()
    for p in plans:
        put("fuzz_stream", bytes([len(p)]) + p + data)
        put("fuzz_decoder", bytes([len(p)]) + p + data)
# Version-2 streams (quantized, sparse, paged and composite tensors) exercise the decoder's
# item view; they are not in the manifest's version-1 list.
for name in ("stream_v2_quant.hrry", "stream_v2_sparse_composite.hrry"):
    path = os.path.join(golden, name)
    if os.path.exists(path):
        data = open(path, "rb").read()
        for p in plans:
            put("fuzz_decoder", bytes([len(p)]) + p + data)
for c in manifest["containers"]:
    data = open(os.path.join(golden, c["file"]), "rb").read()
    for p in plans[:2]:
        put("fuzz_file", bytes([len(p)]) + p + data)

uniq = sorted(set(descs))
for i in range(0, len(uniq), 4):
    group = uniq[i:i + 4]
    for p in plans:
        body = b"".join(struct.pack("<H", len(d)) + d for d in group)
        put("fuzz_writer", bytes([len(p)]) + p + body)
