"""The ctypes structs have the sizes and offsets of docs/spec/c-abi.md's tables (LP64)."""

import ctypes

import pytest

import hurray
from hurray import _lib

LP64 = ctypes.sizeof(ctypes.c_void_p) == 8

TABLE = {
    # struct: (size, {field: offset})
    _lib.BufferSpec: (16, {"alignment": 8, "device_tag": 12, "sync_mode": 13}),
    _lib.Quantization: (24, {"axis": 4, "scale": 8, "bias": 16}),
    _lib.IoSlice: (16, {"len": 8}),
    _lib.DescriptorFields: (120, {"flags": 4, "rank": 8, "dims": 16, "byte_offset": 32, "buffer_count": 48,
                                  "name": 64, "encoded": 80, "quantization": 96}),
    _lib.DescriptorSpec: (120, {"rank": 8, "strides": 24, "stride_count": 32, "byte_offset": 40,
                                "buffers": 56, "name": 64, "metadata_count": 80, "metadata": 88, "quantization": 96}),
    _lib.DecodeResult: (160, {"input": 8, "input_len": 16, "fields": 24, "buffers": 144, "metadata": 152}),
    _lib.DecodedBuffer: (24, {"spec": 8}),
    _lib.MetadataView: (32, {"key_len": 8, "value": 16, "value_len": 24}),
    _lib.TensorSpec: (136, {"payloads": 120, "payload_count": 128}),
    _lib.EncodeBatchResult: (32, {"piece_count": 8, "state": 16}),
    _lib.EncoderState: (16, {"pending_pieces": 8, "borrows_payloads": 12}),
    _lib.Transport: (48, {"write": 16, "size": 40}),
    _lib.ReaderOptions: (32, {"max_descriptor_bytes": 8, "max_tensor_bytes": 16, "flags": 24}),
    _lib.BlockQuant: (16, {"axis": 4, "block": 8, "block2": 12}),
    _lib.Sparse: (24, {"block_rows": 4, "block_cols": 8, "nnz": 16}),
    _lib.Paging: (24, {"page_size": 4, "block_count": 8, "page_count": 16}),
    _lib.CompositeMembership: (12, {"depth": 2, "index": 4, "member_count": 8}),
    _lib.DLTensor: (48, {"device": 8, "ndim": 16, "dtype": 20, "shape": 24, "strides": 32, "byte_offset": 40}),
    _lib.DLManagedTensorVersioned: (80, {"manager_ctx": 8, "deleter": 16, "flags": 24, "dl_tensor": 32}),
    _lib.DLManagedTensor: (64, {"manager_ctx": 48, "deleter": 56}),
}


@pytest.mark.skipif(not LP64, reason="the documented offsets are LP64")
@pytest.mark.parametrize("struct", list(TABLE), ids=lambda s: s.__name__)
def test_struct_layout_matches_the_c_abi(struct):
    size, offsets = TABLE[struct]
    assert ctypes.sizeof(struct) == size
    for field, off in offsets.items():
        assert getattr(struct, field).offset == off, field


def test_library_is_abi_4_and_names_statuses():
    assert _lib.lib.hurray_c_abi_version() == hurray.ABI_VERSION == 4
    assert hurray.status_name(-11) == "HURRAY_ERR_TRUNCATED"
    assert hurray.status_name(12345) == "HURRAY_UNKNOWN_STATUS"
