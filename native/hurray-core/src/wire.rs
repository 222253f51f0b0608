//! The format's constants: versions, magic numbers, header and frame sizes, flags, and the
//! limits every reader and writer enforces (docs/spec/descriptor.md, docs/spec/stream.md). A
//! leaf module: everything that speaks the format depends on it, it depends on nothing.

// Descriptors (docs/spec/descriptor.md).

/// Magic at the start of every encoded descriptor.
pub const DESCRIPTOR_MAGIC: [u8; 4] = *b"HRDS";
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

// The fixed part of an encoded descriptor and its extension bits (docs/spec/descriptor.md
// §Encoding).
pub(crate) const EXT_NAME: u32 = 1 << 0;
pub(crate) const EXT_METADATA: u32 = 1 << 1;
pub(crate) const EXT_QUANT: u32 = 1 << 2;
pub(crate) const EXT_SPARSE: u32 = 1 << 3;
pub(crate) const EXT_PAGING: u32 = 1 << 4;
pub(crate) const EXT_COMPOSITE: u32 = 1 << 5;
pub(crate) const EXT_KNOWN: u32 = EXT_NAME | EXT_METADATA | EXT_QUANT;
/// Extension bits a version-2 descriptor may also set (sparse, paging, composite).
pub(crate) const EXT_KNOWN_V2: u32 = EXT_KNOWN | EXT_SPARSE | EXT_PAGING | EXT_COMPOSITE;
pub(crate) const FIXED_BYTES: usize = 24;
pub(crate) const QUANT_BYTES: usize = 24;

// The version-2 blocks (docs/spec/descriptor.md §Sparse layouts, §Block-paged layout,
// §Composite membership).

/// Size of the sparse block in bytes.
pub const SPARSE_BLOCK_BYTES: usize = 24;
/// Size of the paging block in bytes.
pub const PAGING_BLOCK_BYTES: usize = 24;
/// Deepest nesting: a top-level head is depth 0, its members depth 1, …; a member deeper than
/// this is `LimitExceeded`.
pub const MAX_COMPOSITE_DEPTH: u16 = 16;
/// Most members one head may list.
pub const MAX_COMPOSITE_MEMBERS: u32 = 1024;
/// Most descriptors (heads included) in one composite item.
pub const MAX_COMPOSITE_TENSORS: usize = 65_536;
/// Longest role, in UTF-8 bytes.
pub const MAX_ROLE_BYTES: usize = 256;
/// Fixed part of the composite block, in bytes.
pub const COMPOSITE_BLOCK_FIXED_BYTES: usize = 16;

// Streams (docs/spec/stream.md §Stream header, §Frames).

/// Stream header magic.
pub const STREAM_MAGIC: [u8; 8] = *b"HRRYSTRM";
/// Stream format version written and read by this build.
pub const STREAM_VERSION: u16 = 1;
/// Stream header size in bytes.
pub const STREAM_HEADER_BYTES: usize = 16;
/// Frame header size in bytes.
pub const FRAME_HEADER_BYTES: usize = 24;
/// Frame magic of a tensor item.
pub const FRAME_TENSOR: [u8; 4] = *b"HRTN";
/// Frame magic of the end-of-stream marker.
pub const FRAME_END: [u8; 4] = *b"HREN";
/// Stream header flag: every payload is followed by its CRC32C.
pub const FLAG_PAYLOAD_CRC: u16 = 1;
/// Stream header flag: a metadata frame follows the stream header (docs/spec/stream.md
/// §Stream metadata).
pub const FLAG_METADATA: u16 = 2;
/// Frame magic of the stream-metadata frame (only directly after the stream header).
pub const FRAME_METADATA: [u8; 4] = *b"HRMD";
