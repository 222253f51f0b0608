"""The C ABI of libhurray through ctypes: loading, structs, prototypes, status checks.

Nothing here knows the format: every rule is the library's (docs/spec/c-abi.md). Struct
layouts mirror ``hurray.h``; ``tests/test_abi.py`` checks them against the byte tables of
docs/spec/c-abi.md.
"""

from __future__ import annotations

import ctypes
import os
import sys
from ctypes import (
    POINTER,
    Structure,
    byref,
    c_char_p,
    c_double,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path

ABI_VERSION = 4

# Status codes (docs/spec/c-abi.md §Status codes).
OK = 0
END_OF_STREAM = 1
NEED_INPUT = 2
ERR_TRANSPORT = -10
ERR_TRUNCATED = -11
ERR_POISONED = -13
ERR_SINK_CLOSED = -14
ERR_LIMIT_EXCEEDED = -15
ERR_INVALID_ARGUMENT = -16
ERR_UNSUPPORTED = -17
ERR_NOT_FOUND = -22
ERR_INVALID_STATE = -24
BUFFER_TOO_SMALL = -5

DECODE_END_OF_INPUT = 1
FIELDS_SAME_EXCEPT_NAME = 1
ENCODE_FINISH = 1


class HurrayError(OSError):
    """A failed library call: ``status`` is the C ABI status (an ``int``), ``status_name``
    its constant's name (``"HURRAY_ERR_TRUNCATED"``), and the message the library's own.

    When a Python source or sink raised, ``status`` is ``HURRAY_ERR_TRANSPORT`` (or
    ``HURRAY_ERR_POISONED`` for a writer that failed mid-item) and ``__cause__`` is exactly
    what it raised. A subclass of ``OSError`` because every failure is an I/O failure of a
    stream, a file or a message."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.status_name = status_name(status)
        super().__init__(f"{self.status_name}: {message}")


class IoSlice(Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_size_t)]


class BufferSpec(Structure):
    _fields_ = [
        ("byte_size", c_uint64),
        ("alignment", c_uint32),
        ("device_tag", c_uint8),
        ("sync_mode", c_uint8),
        ("reserved", c_uint16),
    ]


class Quantization(Structure):
    _fields_ = [
        ("kind", c_uint8),
        ("dequantized_type", c_uint8),
        ("reserved", c_uint16),
        ("axis", c_uint32),
        ("scale", c_double),
        ("bias", c_double),
    ]


class DescriptorFields(Structure):
    _fields_ = [
        ("element_type", c_uint8),
        ("layout", c_uint8),
        ("version", c_uint16),
        ("flags", c_uint32),
        ("rank", c_size_t),
        ("dims", POINTER(c_uint64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
        ("element_count", c_uint64),
        ("buffer_count", c_size_t),
        ("metadata_count", c_size_t),
        ("name", c_void_p),
        ("name_len", c_size_t),
        ("encoded", c_void_p),
        ("encoded_len", c_size_t),
        ("quantization", Quantization),
    ]


class MetadataView(Structure):
    _fields_ = [("key", c_void_p), ("key_len", c_size_t), ("value", c_void_p), ("value_len", c_size_t)]


class DescriptorSpec(Structure):
    _fields_ = [
        ("element_type", c_uint8),
        ("layout", c_uint8),
        ("reserved", c_uint16),
        ("reserved2", c_uint32),
        ("rank", c_size_t),
        ("dims", c_void_p),
        ("strides", c_void_p),
        ("stride_count", c_size_t),
        ("byte_offset", c_uint64),
        ("buffer_count", c_size_t),
        ("buffers", c_void_p),
        ("name", c_void_p),
        ("name_len", c_size_t),
        ("metadata_count", c_size_t),
        ("metadata", c_void_p),
        ("quantization", Quantization),
    ]


class DecodedBuffer(Structure):
    _fields_ = [("data", c_void_p), ("spec", BufferSpec)]


class DecodeResult(Structure):
    _fields_ = [
        ("tensor", c_void_p),
        ("input", c_void_p),
        ("input_len", c_size_t),
        ("fields", DescriptorFields),
        ("buffers", POINTER(DecodedBuffer)),
        ("metadata", POINTER(MetadataView)),
    ]


class EncoderState(Structure):
    _fields_ = [("pending_bytes", c_uint64), ("pending_pieces", c_uint32), ("borrows_payloads", c_uint32)]


class TensorSpec(Structure):
    """One item of ``hurray_encoder_encode_batch``: a descriptor spec and its payloads."""

    _fields_ = [("descriptor", DescriptorSpec), ("payloads", c_void_p), ("payload_count", c_size_t)]


class EncodeBatchResult(Structure):
    _fields_ = [("encoded", c_size_t), ("piece_count", c_size_t), ("state", EncoderState)]


class ReaderOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("max_rank", c_uint32),
        ("max_descriptor_bytes", c_uint64),
        ("max_tensor_bytes", c_uint64),
        ("flags", c_uint32),
        ("reserved", c_uint32),
    ]


class WriterOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32)]


class BlockQuant(Structure):
    _fields_ = [
        ("kind", c_uint8),
        ("dequantized_type", c_uint8),
        ("scale_type", c_uint8),
        ("reserved", c_uint8),
        ("axis", c_uint32),
        ("block", c_uint32),
        ("block2", c_uint32),
    ]


class Sparse(Structure):
    _fields_ = [
        ("index_type", c_uint8),
        ("canonical", c_uint8),
        ("reserved0", c_uint16),
        ("block_rows", c_uint32),
        ("block_cols", c_uint32),
        ("reserved1", c_uint32),
        ("nnz", c_uint64),
    ]


class Paging(Structure):
    _fields_ = [
        ("index_type", c_uint8),
        ("reserved0", c_uint8),
        ("reserved1", c_uint16),
        ("page_size", c_uint32),
        ("block_count", c_uint64),
        ("page_count", c_uint64),
    ]


class CompositeMembership(Structure):
    _fields_ = [
        ("present", c_uint8),
        ("reserved", c_uint8),
        ("depth", c_uint16),
        ("index", c_uint32),
        ("member_count", c_uint32),
    ]


WRITE_FN = ctypes.CFUNCTYPE(c_int32, c_void_p, c_void_p, c_size_t, POINTER(c_size_t))
RELEASE_FN = ctypes.CFUNCTYPE(None, c_void_p)
BUFFER_RELEASE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)


class Transport(Structure):
    _fields_ = [
        ("ctx", c_void_p),
        ("read", c_void_p),
        ("write", WRITE_FN),
        ("release", c_void_p),
        ("read_at", c_void_p),
        ("size", c_void_p),
    ]


class FileWriterOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32), ("min_payload_alignment", c_uint64)]


class FileReaderOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("eager_index_bytes", c_uint64),
        ("max_descriptor_bytes", c_uint64),
        ("max_tensor_bytes", c_uint64),
        ("max_metadata_bytes", c_uint64),
        ("max_index_bytes", c_uint64),
    ]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensorVersioned(Structure):
    pass


DELETER_V = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", c_void_p),
    ("deleter", DELETER_V),
    ("flags", c_uint64),
    ("dl_tensor", DLTensor),
]


class DLManagedTensor(Structure):
    pass


DELETER_L = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER_L)]

P = c_void_p
PP = POINTER(c_void_p)
S = c_int32

# name: (argtypes); every function returns HurrayStatus unless listed in _RESTYPES.
_PROTOS = {
    "hurray_c_abi_version": [],
    "hurray_status_name": [c_int32],
    "hurray_last_error_message": [c_char_p, c_size_t, POINTER(c_size_t)],
    "hurray_buffer_from_ptr": [P, c_uint64, c_uint32, c_uint8, BUFFER_RELEASE_FN, P, PP],
    "hurray_buffer_destroy": [PP],
    "hurray_buffer_list_get": [P, c_size_t, PP],
    "hurray_buffer_list_data_ptrs": [P, PP, c_size_t, POINTER(c_size_t)],
    "hurray_tensor_descriptor": [P, PP],
    "hurray_tensor_buffers": [P, PP],
    "hurray_tensor_destroy": [PP],
    "hurray_tensor_destroy_many": [PP, c_size_t],
    "hurray_descriptor_destroy": [P],
    "hurray_descriptor_decode": [P, c_size_t, PP],
    "hurray_descriptor_fields": [P, POINTER(DescriptorFields)],
    "hurray_descriptor_buffer_spec": [P, c_size_t, POINTER(BufferSpec)],
    "hurray_descriptor_metadata_get": [P, c_size_t, PP, POINTER(c_size_t), PP, POINTER(c_size_t)],
    "hurray_descriptor_block_quant": [P, POINTER(BlockQuant)],
    "hurray_descriptor_sparse": [P, POINTER(Sparse)],
    "hurray_descriptor_paging": [P, POINTER(Paging)],
    "hurray_descriptor_composite": [P, POINTER(CompositeMembership)],
    "hurray_descriptor_composite_role": [P, c_uint32, PP, POINTER(c_size_t)],
    "hurray_descriptor_new": [POINTER(DescriptorSpec), PP],
    "hurray_descriptor_with_name": [P, c_char_p, c_size_t, PP],
    "hurray_descriptor_clone": [P, PP],
    "hurray_descriptor_encode_with_name": [P, c_char_p, c_size_t, P, c_size_t, POINTER(c_size_t)],
    "hurray_name_check": [c_char_p, c_size_t, c_uint32],
    "hurray_descriptor_builder_new": [c_uint8, P, c_size_t, PP],
    "hurray_descriptor_builder_set_name": [P, c_char_p, c_size_t],
    "hurray_descriptor_builder_add_buffer": [P, POINTER(BufferSpec)],
    "hurray_descriptor_builder_add_metadata": [P, c_char_p, c_size_t, c_char_p, c_size_t],
    "hurray_descriptor_builder_set_layout": [P, c_uint8, P, c_size_t],
    "hurray_descriptor_builder_set_byte_offset": [P, c_uint64],
    "hurray_descriptor_builder_set_quantization": [P, POINTER(Quantization)],
    "hurray_descriptor_builder_set_block_quant": [P, POINTER(BlockQuant)],
    "hurray_descriptor_builder_set_sparse": [P, POINTER(Sparse)],
    "hurray_descriptor_builder_set_paging": [P, POINTER(Paging)],
    "hurray_descriptor_builder_build": [P, PP],
    "hurray_descriptor_builder_destroy": [PP],
    "hurray_quantize_plan": [c_uint8, P, c_size_t, POINTER(BlockQuant), PP],
    "hurray_quantize": [P, P, c_size_t, P, P, c_size_t],
    "hurray_dequantize_to": [P, P, P, c_size_t, c_uint8, P, c_size_t],
    "hurray_sparse_densify": [P, POINTER(IoSlice), c_size_t, P, c_uint64],
    "hurray_paged_gather": [P, POINTER(IoSlice), c_size_t, P, c_uint64],
    "hurray_decoder_new": [POINTER(ReaderOptions), c_uint64, PP],
    "hurray_decoder_next": [P, c_size_t, c_uint32, POINTER(DecodeResult)],
    "hurray_decoder_next_header": [P, c_size_t, c_uint32, POINTER(DecodeResult)],
    "hurray_decoder_next_item": [P, c_size_t, c_uint32, POINTER(DecodeResult), PP],
    "hurray_decoder_next_batch": [P, c_size_t, c_uint32, POINTER(DecodeResult), c_size_t, POINTER(c_size_t)],
    "hurray_decoder_input_after": [P, PP, POINTER(c_size_t)],
    "hurray_decoder_destroy": [PP],
    "hurray_reader_options_init": [POINTER(ReaderOptions)],
    "hurray_encoder_new": [POINTER(WriterOptions), PP],
    "hurray_encoder_encode": [P, P, POINTER(IoSlice), c_size_t, POINTER(EncoderState)],
    "hurray_encoder_encode_encoded": [P, P, c_size_t, POINTER(IoSlice), c_size_t, POINTER(EncoderState)],
    "hurray_encoder_encode_batch": [P, c_uint64, P, c_size_t, c_uint32, POINTER(IoSlice), c_size_t,
                                    POINTER(EncodeBatchResult)],
    "hurray_encoder_encode_composite": [P, P, POINTER(EncoderState)],
    "hurray_encoder_set_metadata": [P, POINTER(MetadataView), c_size_t],
    "hurray_encoder_finish": [P, POINTER(EncoderState)],
    "hurray_encoder_output": [P, POINTER(IoSlice), c_size_t, POINTER(c_size_t)],
    "hurray_encoder_consume": [P, c_uint64, POINTER(EncoderState)],
    "hurray_encoder_abort": [P, c_uint32, POINTER(EncoderState)],
    "hurray_encoder_destroy": [PP],
    "hurray_writer_options_init": [POINTER(WriterOptions)],
    "hurray_composite_builder_new": [c_char_p, c_size_t, PP],
    "hurray_composite_builder_add_tensor": [P, c_char_p, c_size_t, P, POINTER(IoSlice), c_size_t],
    "hurray_composite_builder_add_composite": [P, c_char_p, c_size_t, PP],
    "hurray_composite_builder_destroy": [PP],
    "hurray_composite_head": [P, PP],
    "hurray_composite_member_count": [P, POINTER(c_size_t)],
    "hurray_composite_member": [P, c_size_t, PP, POINTER(c_size_t), PP, PP],
    "hurray_composite_destroy": [PP],
    "hurray_file_writer_options_init": [POINTER(FileWriterOptions)],
    "hurray_file_writer_new": [POINTER(Transport), POINTER(FileWriterOptions), PP],
    "hurray_file_writer_add_tensor": [P, P, POINTER(IoSlice), c_uint64],
    "hurray_file_writer_add_composite": [P, P],
    "hurray_file_writer_set_metadata": [P, c_char_p, c_uint64, c_char_p, c_uint64],
    "hurray_file_writer_finish": [P, POINTER(c_uint64)],
    "hurray_file_writer_destroy": [PP],
    "hurray_file_reader_options_init": [POINTER(FileReaderOptions)],
    "hurray_file_reader_open_path": [c_char_p, c_uint64, POINTER(FileReaderOptions), PP],
    "hurray_file_reader_open_span": [P, c_uint64, POINTER(FileReaderOptions), PP],
    "hurray_file_reader_count": [P, POINTER(c_uint64)],
    "hurray_file_reader_entry": [P, c_uint64, PP],
    "hurray_file_reader_find": [P, c_char_p, c_uint64, PP],
    "hurray_file_reader_read_tensor": [P, P, PP],
    "hurray_file_reader_read_composite": [P, c_char_p, c_size_t, PP],
    "hurray_file_reader_metadata_count": [P, POINTER(c_uint64)],
    "hurray_file_reader_metadata_get": [P, c_uint64, PP, POINTER(c_uint64), PP, POINTER(c_uint64)],
    "hurray_file_reader_verify": [P],
    "hurray_file_reader_verify_payloads": [P],
    "hurray_file_reader_destroy": [PP],
    "hurray_file_entry_name": [P, PP, POINTER(c_uint64)],
    "hurray_file_entry_destroy": [PP],
    "hurray_dlpack_export": [P, P, c_uint64, POINTER(POINTER(DLManagedTensorVersioned))],
    "hurray_dlpack_export_legacy": [P, P, POINTER(POINTER(DLManagedTensor))],
    "hurray_dlpack_import": [P, PP],
    "hurray_dlpack_import_legacy": [P, PP],
}
_RESTYPES = {"hurray_c_abi_version": c_uint32, "hurray_status_name": c_char_p}
# Short hot calls, also bound through ctypes.PyDLL (``lib.held``), which keeps the GIL:
# releasing and retaking it costs more than these calls themselves. None of them calls back
# into Python; the callers use them only for work of one item bounded by about 64 KiB (a
# descriptor, a list of pending pieces, a payload without a checksum over it) and the
# GIL-releasing ``lib`` for the rest. The batch calls (hurray_decoder_next_batch,
# hurray_encoder_encode_batch: up to hundreds of tensors a call) release it, so that another
# thread's Python runs beside them.
_HELD = (
    "hurray_encoder_encode",
    "hurray_encoder_encode_encoded",
    "hurray_encoder_output",
    "hurray_encoder_consume",
    "hurray_descriptor_encode_with_name",
    "hurray_tensor_destroy_many",
    "hurray_decoder_input_after",
)


def _candidates() -> list[Path]:
    env = os.environ.get("HURRAY_LIBRARY_PATH")
    if env:
        return [Path(env)]
    name = "libhurray.dylib" if sys.platform == "darwin" else "libhurray.so"
    here = Path(__file__).resolve().parent
    out = [here / "_native" / name]
    # A checkout: hurray-python/src/hurray -> native/target/dist (native/build.sh).
    for up in here.parents:
        p = up / "native" / "target" / "dist" / name
        if p.exists():
            out.append(p)
            break
    return out


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        if path.is_file():
            lib = ctypes.CDLL(str(path))
            break
        tried.append(str(path))
    else:
        raise ImportError(
            "hurray: libhurray not found (tried " + ", ".join(tried) + "); build it with native/build.sh "
            "and reinstall the package, or set HURRAY_LIBRARY_PATH to the library file"
        )
    version = lib.hurray_c_abi_version()
    if version != ABI_VERSION:
        raise ImportError(f"hurray: {path} implements C ABI {version}; this package needs {ABI_VERSION}")
    for name, args in _PROTOS.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as e:
            raise ImportError(f"hurray: {path} lacks {name} (an older build of libhurray?)") from e
        fn.argtypes = args
        fn.restype = _RESTYPES.get(name, S)
    held = ctypes.PyDLL(str(path))
    for name in _HELD:
        fn = getattr(held, name)
        fn.argtypes = _PROTOS[name]
        fn.restype = _RESTYPES.get(name, S)
    lib.held = held  # type: ignore[attr-defined]
    lib._hurray_path = str(path)  # type: ignore[attr-defined]
    return lib


lib = _load()
_status_names: dict[int, str] = {}


def status_name(status: int) -> str:
    """The name of a status code (``"HURRAY_ERR_CORRUPT"``)."""
    n = _status_names.get(status)
    if n is None:
        n = lib.hurray_status_name(status).decode()
        _status_names[status] = n
    return n


def last_error() -> str:
    """This thread's last library error message."""
    n = c_size_t(0)
    lib.hurray_last_error_message(None, 0, byref(n))
    buf = ctypes.create_string_buffer(n.value + 1)
    lib.hurray_last_error_message(buf, n.value + 1, byref(n))
    return buf.value.decode("utf-8", "replace")


def error(status: int) -> HurrayError:
    """A ``HurrayError`` for a failing call that just returned ``status`` on this thread."""
    return HurrayError(status, last_error())


def check(status: int) -> int:
    """Raises ``HurrayError`` for a negative status; returns the others (OK, END_OF_STREAM, NEED_INPUT)."""
    if status < 0:
        raise error(status)
    return status


# The process's memory as one writable byte view: ``MEMORY[p:p + n]`` is the ``n`` bytes at
# address ``p`` with no library or ctypes call (a slice touches nothing until it is read or
# written, and only its own bytes then). For memory the library lends for as long as its
# owner lives: a slice is only as valid as the owner of those bytes.
MEMORY = memoryview((ctypes.c_char * sys.maxsize).from_address(0)).cast("B")


def bytes_at(ptr: int | None, n: int) -> bytes:
    """A copy of ``n`` bytes at ``ptr`` (b"" for 0)."""
    return ctypes.string_at(ptr, n) if n else b""
