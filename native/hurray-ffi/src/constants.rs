//! Wire codes as C constants (docs/spec/descriptor.md §Codes). They equal the discriminants
//! of `hurray_core`'s enums; a test checks that.

/// `bool`, one byte per element (0 or 1).
pub const HURRAY_DTYPE_BOOL: u8 = 0;
pub const HURRAY_DTYPE_INT8: u8 = 1;
pub const HURRAY_DTYPE_INT16: u8 = 2;
pub const HURRAY_DTYPE_INT32: u8 = 3;
pub const HURRAY_DTYPE_INT64: u8 = 4;
pub const HURRAY_DTYPE_UINT8: u8 = 5;
pub const HURRAY_DTYPE_UINT16: u8 = 6;
pub const HURRAY_DTYPE_UINT32: u8 = 7;
pub const HURRAY_DTYPE_UINT64: u8 = 8;
pub const HURRAY_DTYPE_FLOAT16: u8 = 9;
pub const HURRAY_DTYPE_BFLOAT16: u8 = 10;
pub const HURRAY_DTYPE_FLOAT32: u8 = 11;
pub const HURRAY_DTYPE_FLOAT64: u8 = 12;
/// Two float32 (real, imaginary).
pub const HURRAY_DTYPE_COMPLEX64: u8 = 13;
/// Two float64 (real, imaginary).
pub const HURRAY_DTYPE_COMPLEX128: u8 = 14;
pub const HURRAY_DTYPE_FLOAT8_E4M3FN: u8 = 15;
pub const HURRAY_DTYPE_FLOAT8_E5M2: u8 = 16;
/// Signed 4-bit, two per byte, lower flattened index in the low nibble.
pub const HURRAY_DTYPE_INT4: u8 = 17;
/// Unsigned 4-bit, packed like `HURRAY_DTYPE_INT4`.
pub const HURRAY_DTYPE_UINT4: u8 = 18;
/// FP8 E4M3, bias 8, no infinities or negative zero; 0x80 is NaN (descriptor version 2).
pub const HURRAY_DTYPE_FLOAT8_E4M3FNUZ: u8 = 19;
/// FP8 E5M2, bias 16, no infinities or negative zero; 0x80 is NaN (descriptor version 2).
pub const HURRAY_DTYPE_FLOAT8_E5M2FNUZ: u8 = 20;
/// FP8 E3M4, bias 3, with infinities (descriptor version 2).
pub const HURRAY_DTYPE_FLOAT8_E3M4: u8 = 21;
/// OCP FP6 E2M3, 6 bits in a little-endian bit stream (descriptor version 2).
pub const HURRAY_DTYPE_FLOAT6_E2M3FN: u8 = 22;
/// OCP FP6 E3M2, 6 bits in a little-endian bit stream (descriptor version 2).
pub const HURRAY_DTYPE_FLOAT6_E3M2FN: u8 = 23;
/// OCP FP4 E2M1, packed like `HURRAY_DTYPE_INT4` (descriptor version 2).
pub const HURRAY_DTYPE_FLOAT4_E2M1FN: u8 = 24;
/// OCP E8M0 scale, 2^(code - 127), 0xFF NaN (descriptor version 2).
pub const HURRAY_DTYPE_FLOAT8_E8M0FNU: u8 = 25;

/// C order (last dimension fastest).
pub const HURRAY_LAYOUT_ROW_MAJOR: u8 = 0;
/// Fortran order (first dimension fastest).
pub const HURRAY_LAYOUT_COLUMN_MAJOR: u8 = 1;
/// Explicit strides in elements.
pub const HURRAY_LAYOUT_STRIDED: u8 = 2;
/// Sparse coordinate list: values, then indices `[rank, nnz]` (descriptor version 2).
pub const HURRAY_LAYOUT_COO: u8 = 3;
/// Compressed sparse rows: values, indptr, column indices.
pub const HURRAY_LAYOUT_CSR: u8 = 4;
/// Compressed sparse columns: values, indptr, row indices.
pub const HURRAY_LAYOUT_CSC: u8 = 5;
/// Block sparse rows: blocks of values, block indptr, block column indices.
pub const HURRAY_LAYOUT_BSR: u8 = 6;
/// Block-paged (KV cache): pages, then the page table.
pub const HURRAY_LAYOUT_PAGED: u8 = 7;
/// Deepest composite nesting (a top-level head is depth 0).
pub const HURRAY_MAX_COMPOSITE_DEPTH: u32 = 16;
/// Most members one composite head lists.
pub const HURRAY_MAX_COMPOSITE_MEMBERS: u32 = 1024;

pub const HURRAY_DEVICE_CPU: u8 = 0;
pub const HURRAY_DEVICE_CUDA: u8 = 1;
pub const HURRAY_DEVICE_CUDA_HOST: u8 = 2;
pub const HURRAY_DEVICE_ROCM: u8 = 3;
pub const HURRAY_DEVICE_METAL: u8 = 4;
pub const HURRAY_DEVICE_VULKAN: u8 = 5;
pub const HURRAY_DEVICE_IPC: u8 = 6;

/// The producer waited on the host before handoff (default; the version-1 behaviour).
pub const HURRAY_SYNC_PRODUCER_SYNCED: u8 = 0x00;
/// An event handle travels with the handoff.
pub const HURRAY_SYNC_EVENT: u8 = 0x01;
/// The consumer's stream is ordered after the producer's writes.
pub const HURRAY_SYNC_CONSUMER_STREAM: u8 = 0x02;
/// The invalid sync mode value (0x03–0xFE are reserved).
pub const HURRAY_SYNC_INVALID: u8 = 0xFF;

/// Smallest buffer alignment in bytes (CPU default).
pub const HURRAY_MIN_BUFFER_ALIGNMENT: u32 = 64;
/// Smallest alignment of GPU and IPC buffers in bytes.
pub const HURRAY_DEVICE_BUFFER_ALIGNMENT: u32 = 4096;
/// Largest buffer alignment in bytes.
pub const HURRAY_MAX_BUFFER_ALIGNMENT: u32 = 2_097_152;
/// Largest rank.
pub const HURRAY_MAX_RANK: u32 = 32;
/// Longest name in UTF-8 bytes (docs/spec/descriptor.md §Names).
pub const HURRAY_MAX_NAME_BYTES: u32 = 4096;
/// Most metadata entries of one descriptor.
pub const HURRAY_MAX_METADATA_ENTRIES: u32 = 256;
/// Longest metadata key in UTF-8 bytes (at least 1).
pub const HURRAY_MAX_METADATA_KEY_BYTES: u32 = 256;
/// Longest metadata value in bytes.
pub const HURRAY_MAX_METADATA_VALUE_BYTES: u32 = 65_536;
/// Longest encoded descriptor in bytes (docs/spec/descriptor.md §Limits): a descriptor whose
/// name and metadata would encode longer is refused with `LIMIT_EXCEEDED`.
pub const HURRAY_MAX_DESCRIPTOR_BYTES: u32 = 16_777_216;
/// Size in bytes of a binary buffer handle; `sync_mode` is its byte 13.
pub const HURRAY_BUFFER_HANDLE_BYTES: u32 = 16;
