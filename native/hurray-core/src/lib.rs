//! # hurray-core
//!
//! The Hurray tensor interchange format in safe Rust (std only): element types, shapes,
//! layouts, buffer handles, tensor descriptors and their binary encoding, and the stream
//! reader/writer state machines, and the buffer pool readers reuse allocations from. The C ABI
//! lives in `hurray-ffi`; this crate has no FFI glue, and `unsafe` only in [`AlignedBuf`] and the
//! CRC32C vector-instruction kernels (`crc32c`).
//!
//! The normative specification, byte layouts included, is `docs/spec/` of the repository
//! (stream.md, descriptor.md, hrryfile.md, c-abi.md).

#![deny(unsafe_op_in_unsafe_fn)]

mod buffer;
pub mod codec;
pub mod composite;
pub mod crc32c;
pub mod decoder;
mod descriptor;
pub mod dlpack;
pub mod encoder;
mod error;
pub mod file;
pub mod layouts;
pub mod lowp;
pub mod names;
pub mod paged;
pub mod parts;
pub mod pool;
pub mod quant;
mod shape;
pub mod sparse;
pub mod stream;
mod types;

pub use buffer::{check_alignment, AlignedBuf, BufferHandle, BUFFER_HANDLE_BYTES, GROW_MIN_BYTES, SYNC_MODE_OFFSET};
pub use composite::{Composite, CompositeSpec, Item, ItemReader, Member};
pub use decoder::{Decoded, StreamDecoder};
pub use descriptor::{
    min_version_for, CompositeInfo, LayoutDescriptor, PagingInfo, Quantization, SparseInfo, TensorDescriptor,
    DESCRIPTOR_MAGIC,
};
pub use encoder::{OutSeg, StreamEncoder};
pub use error::{Error, ErrorKind, Result};
pub use file::{FileEntry, FileReader, FileReaderOptions, FileWriter, FileWriterOptions, ReadAt};
pub use parts::DescriptorParts;
pub use pool::{BufferPool, PoolStats, PooledBuf, MAX_POOLED_BUFFERS};
pub use quant::{BlockKind, BlockQuant};
pub use shape::Shape;
pub use sparse::IndexType;
pub use stream::{ReadTensor, ReadTransport, ReaderOptions, StreamReader, StreamWriter, WriteTransport, WriterOptions};
pub use types::{DeviceTag, ElementType, SyncMode};

/// Smallest buffer alignment in bytes; the default for CPU buffers (docs/spec/descriptor.md
/// §Device tags).
pub const MIN_BUFFER_ALIGNMENT: u64 = 64;
/// Smallest alignment of GPU and IPC buffers, in bytes (docs/spec/descriptor.md §Device tags).
pub const DEVICE_BUFFER_ALIGNMENT: u64 = 4096;
/// Largest supported buffer alignment, in bytes (2 MiB, a huge page).
pub const MAX_BUFFER_ALIGNMENT: u64 = 1 << 21;
/// Largest rank a descriptor may have.
pub const MAX_RANK: usize = 32;
/// Largest buffer table.
pub const MAX_BUFFERS: usize = 64;
/// Largest tensor name, in UTF-8 bytes.
pub const MAX_NAME_BYTES: usize = 4096;
/// Most key/value metadata entries on one descriptor.
pub const MAX_METADATA_ENTRIES: usize = 256;
/// Largest metadata key, in bytes.
pub const MAX_METADATA_KEY_BYTES: usize = 256;
/// Largest metadata value, in bytes.
pub const MAX_METADATA_VALUE_BYTES: usize = 64 * 1024;
/// Largest encoded descriptor the format allows, in bytes (16 MiB).
pub const MAX_DESCRIPTOR_BYTES: usize = 16 << 20;
/// The descriptor encoding version of every descriptor that uses no version-2 feature (and
/// the base version this build writes and reads).
pub const DESCRIPTOR_VERSION: u16 = 1;
/// The descriptor version of descriptors with a version-2 feature: a sparse, paging or
/// composite block, an element type 19–25 or a quantization kind 4–9
/// (docs/spec/descriptor.md §Version policy).
pub const DESCRIPTOR_VERSION_2: u16 = 2;
/// The highest descriptor version this build reads and writes.
pub const MAX_DESCRIPTOR_VERSION: u16 = 2;

#[cfg(test)]
#[path = "../tests/common/rng.rs"]
mod test_rng;
