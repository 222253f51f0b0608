//! HRRYFILE, the random-access container (docs/spec/hrryfile.md).
//!
//! A container is addressed rather than consumed (docs/spec/hrryfile.md): a [`FileWriter`] appends
//! tensors one by one through a sequential [`WriteTransport`](crate::WriteTransport) (so it can
//! write into a pipe or socket), and a [`FileReader`] asks a [`ReadAt`] source for absolute ranges.
//! Every payload sits at an offset aligned to its buffer's alignment, so a memory map can use it in
//! place ([`FileReader::span_tensor`]). Opening reads at most three ranges whatever the tensor
//! count; finding a tensor by name is a binary search over a fixed-size, name-sorted entry table
//! (O(log n) reads).
//!
//! Layout, in file order: header (16 bytes) · payloads (aligned, zero padding between) ·
//! index (entry table, then records) · metadata block · trailer (72 bytes).

mod format;
mod ranges;
mod reader;
mod writer;

pub use format::{
    Trailer, BUFFER_HAS_CRC, BUFFER_RECORD_BYTES, ENTRY_BYTES, FILE_MAGIC, FILE_VERSION, HEADER_BYTES, INDEX_ALIGNMENT,
    MAX_FILE_METADATA_BYTES, MAX_FILE_METADATA_ENTRIES, MAX_FILE_METADATA_KEY_BYTES, MAX_FILE_METADATA_VALUE_BYTES,
    NAME_PREFIX_BYTES, TRAILER_BYTES, TRAILER_MAGIC,
};
pub use ranges::{PendingDst, PendingRead, Ranges};
pub use reader::{
    check_payload, BufferLocation, FileEntry, FileReader, FileReaderOptions, ReadAt, Span, SpanBuffer, SpanTensor,
    DEFAULT_EAGER_INDEX_BYTES, OPEN_TAIL_BYTES, PADDING_CHUNK_BYTES, PAYLOAD_CHUNK_BYTES,
};
pub use writer::{Abort, FileEncoder, FileWriter, FileWriterOptions, WRITE_STAGING_BYTES};
