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
pub mod quantize;
mod shape;
pub mod sparse;
pub mod stream;
mod tensor;
mod types;
pub mod wire;

pub use buffer::{
    check_alignment, install_large_alloc, AlignedBuf, BufferHandle, LargeAlloc, BUFFER_HANDLE_BYTES, GROW_MIN_BYTES,
    LARGE_ALLOC_MIN_BYTES, POOLED_LARGE_ALLOC_MIN_BYTES, SYNC_MODE_OFFSET,
};
pub use composite::{Composite, CompositeSpec, Item, ItemReader, Member};
pub use decoder::ReaderOptions;
pub use decoder::{Decoded, StreamDecoder};
pub use descriptor::{
    min_version_for, CompositeInfo, IndexType, LayoutDescriptor, PagingInfo, Quantization, SparseInfo,
    TensorDescriptor, DESCRIPTOR_MAGIC,
};
pub use encoder::WriterOptions;
pub use encoder::{OutSeg, StreamEncoder};
pub use error::{Error, ErrorKind, Result};
pub use file::{FileEntry, FileReader, FileReaderOptions, FileWriter, FileWriterOptions, ReadAt};
pub use parts::DescriptorParts;
pub use pool::{BufferPool, PoolStats, PooledBuf, MAX_POOLED_BUFFERS};
pub use quant::{BlockKind, BlockQuant};
pub use shape::Shape;
pub use stream::{ReadTransport, StreamReader, StreamWriter, WriteTransport};
pub use tensor::ReadTensor;
pub use types::{DeviceTag, ElementType, SyncMode};
pub use wire::{
    DESCRIPTOR_VERSION, DESCRIPTOR_VERSION_2, DEVICE_BUFFER_ALIGNMENT, MAX_BUFFERS, MAX_BUFFER_ALIGNMENT,
    MAX_DESCRIPTOR_BYTES, MAX_DESCRIPTOR_VERSION, MAX_METADATA_ENTRIES, MAX_METADATA_KEY_BYTES,
    MAX_METADATA_VALUE_BYTES, MAX_NAME_BYTES, MAX_RANK, MIN_BUFFER_ALIGNMENT,
};

#[cfg(test)]
#[path = "../tests/common/rng.rs"]
mod test_rng;
