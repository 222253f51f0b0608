//! The container reader over `read_at`/`size` (docs/spec/hrryfile.md §4 Reading), and the
//! memory-span reader that hands out payloads in place.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use super::format::{
    check_header, decode_metadata, BufferRecord, RawEntry, Trailer, BUFFER_RECORD_BYTES, ENTRY_BYTES, HEADER_BYTES,
    MAX_FILE_METADATA_BYTES, MIN_DESCRIPTOR_BYTES, NAME_PREFIX_BYTES, TRAILER_BYTES,
};
use super::ranges::Ranges;
use crate::buffer::AlignedBuf;
use crate::crc32c::{crc32c, Crc32c};
use crate::descriptor::TensorDescriptor;
use crate::error::{bail, err, Error, ErrorKind, Result};
use crate::pool::{BufferPool, PooledBuf};
use crate::stream::ReadTensor;
use crate::{MAX_DESCRIPTOR_BYTES, MAX_NAME_BYTES, MIN_BUFFER_ALIGNMENT};

/// An addressed byte source (the transport's `read_at` and `size`, docs/spec/c-abi.md
/// §Transports).
pub trait ReadAt {
    /// Total size of the input in bytes. Called once, when a reader opens.
    fn size(&mut self) -> Result<u64>;

    /// Reads up to `dst.len()` bytes starting at absolute byte `offset`. Returns `Ok(n)` after
    /// initialising the first `n` bytes of `dst`; fewer than asked is normal, `0` means
    /// `offset` is at or past the end. Returns `Err` having moved no bytes.
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize>;

    /// The whole input as one slice, when it is already in memory ([`Span`]); `None` (the
    /// default) otherwise. [`FileReader::verify`] scans padding in place through it instead of
    /// reading it through [`read_at`](Self::read_at).
    fn as_bytes(&self) -> Option<&[u8]> {
        None
    }

    /// Tells the source that the current reader call will not ask for the bytes in
    /// `[offset, offset + len)` again (the default ignores it; [`Ranges`](super::Ranges) drops
    /// its copies).
    fn release(&mut self, offset: u64, len: u64) {
        let _ = (offset, len);
    }

    /// The number of reads the source made itself, when it counts them (a [`Ranges`](super::Ranges)
    /// counts the ranges its caller supplied); `None` (the default) lets the reader count its
    /// successful `read_at` calls.
    fn reads_made(&self) -> Option<u64> {
        None
    }

    /// True when a failing read is answered by repeating the whole call (a
    /// [`Ranges`](super::Ranges), whose misses are `NeedInput`): the reader then keeps what a
    /// call loaded at great cost (the index that `verify` read) so the repeat does not load it
    /// again. Default false.
    fn replayed(&self) -> bool {
        false
    }
}

impl<R: ReadAt + ?Sized> ReadAt for &mut R {
    fn size(&mut self) -> Result<u64> {
        (**self).size()
    }
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        (**self).read_at(offset, dst)
    }
    fn as_bytes(&self) -> Option<&[u8]> {
        (**self).as_bytes()
    }
    fn release(&mut self, offset: u64, len: u64) {
        (**self).release(offset, len)
    }
    fn reads_made(&self) -> Option<u64> {
        (**self).reads_made()
    }
    fn replayed(&self) -> bool {
        (**self).replayed()
    }
}

impl<R: ReadAt + ?Sized> ReadAt for Box<R> {
    fn size(&mut self) -> Result<u64> {
        (**self).size()
    }
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        (**self).read_at(offset, dst)
    }
    fn as_bytes(&self) -> Option<&[u8]> {
        (**self).as_bytes()
    }
    fn release(&mut self, offset: u64, len: u64) {
        (**self).release(offset, len)
    }
    fn reads_made(&self) -> Option<u64> {
        (**self).reads_made()
    }
    fn replayed(&self) -> bool {
        (**self).replayed()
    }
}

/// A caller's memory region (e.g. a memory map) as a container source. A reader over a span
/// copies index bytes out of it, and [`FileReader::span_tensor`] hands out payloads that
/// borrow it.
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    bytes: &'a [u8],
}

impl<'a> Span<'a> {
    /// A source over `bytes` (the whole container, byte 0 first).
    pub fn new(bytes: &'a [u8]) -> Self {
        Span { bytes }
    }

    /// The region.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

impl ReadAt for Span<'_> {
    fn size(&mut self) -> Result<u64> {
        Ok(self.bytes.len() as u64)
    }
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        let len = self.bytes.len() as u64;
        if offset >= len {
            return Ok(0);
        }
        let start = offset as usize;
        let n = dst.len().min(self.bytes.len() - start);
        dst[..n].write_copy_of_slice(&self.bytes[start..start + n]);
        Ok(n)
    }
    fn as_bytes(&self) -> Option<&[u8]> {
        Some(self.bytes)
    }
}

/// Largest chunk in bytes [`FileReader::verify`] reads at once when it checks padding through
/// `read_at` (64 KiB): memory stays bounded whatever a gap's length.
pub const PADDING_CHUNK_BYTES: u64 = 64 * 1024;

/// Largest window in bytes [`FileReader::verify_payloads`] reads at once through `read_at`
/// (1 MiB): checking a payload's CRC32C holds one window, whatever the payload's size.
pub const PAYLOAD_CHUNK_BYTES: u64 = 1 << 20;

/// Bytes [`FileReader::open`] reads from the end of the input in its first read (4 KiB, or the
/// whole input when smaller): the trailer, and the index and metadata when they fit, so that a
/// small container opens in one or two reads instead of three.
pub const OPEN_TAIL_BYTES: u64 = 4096;

/// Default for [`FileReaderOptions::eager_index_bytes`]: 1 MiB.
pub const DEFAULT_EAGER_INDEX_BYTES: u64 = 1 << 20;

/// Reader settings and limits (docs/spec/hrryfile.md §4 Reading).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileReaderOptions {
    /// When index plus metadata block are at most this many bytes, `open` reads them in one
    /// call and validates the whole index (checksum, order, uniqueness, payload ranges and
    /// overlaps). Larger indexes are read lazily, one entry at a time. Default 1 MiB.
    pub eager_index_bytes: u64,
    /// Largest accepted encoded descriptor, in bytes (default 1 MiB, at most 16 MiB).
    pub max_descriptor_bytes: u64,
    /// Largest accepted sum of one tensor's buffer sizes when reading it into new memory, in
    /// bytes (default 64 GiB). Memory is reserved, then filled by `read_at`.
    pub max_tensor_bytes: u64,
    /// Largest accepted metadata block, in bytes (default and maximum 64 MiB).
    pub max_metadata_bytes: u64,
    /// Largest index plus metadata block that [`FileReader::verify`] loads at once, in bytes
    /// (default 1 GiB).
    pub max_index_bytes: u64,
    /// Check each payload's CRC32C when reading a tensor (default true). For a span reader
    /// this touches every page of the payload.
    pub verify_payloads: bool,
    /// Run [`FileReader::verify`] inside `open` (default false).
    pub verify_at_open: bool,
}

impl Default for FileReaderOptions {
    fn default() -> Self {
        FileReaderOptions {
            eager_index_bytes: DEFAULT_EAGER_INDEX_BYTES,
            max_descriptor_bytes: 1 << 20,
            max_tensor_bytes: 64 << 30,
            max_metadata_bytes: MAX_FILE_METADATA_BYTES,
            max_index_bytes: 1 << 30,
            verify_payloads: true,
            verify_at_open: false,
        }
    }
}

/// Where one buffer's payload lies in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferLocation {
    /// Absolute offset in bytes, a multiple of the buffer's alignment.
    pub offset: u64,
    /// Length in bytes (equals the buffer's `byte_size`).
    pub length: u64,
    /// The stored CRC32C, when the writer stored one.
    pub crc32c: Option<u32>,
}

/// One tensor's index entry: its position in name order, its descriptor (which holds the
/// name) and where its payloads are. Reading it reads no payload.
#[derive(Clone, Debug, PartialEq)]
pub struct FileEntry {
    file_id: u64,
    index: u64,
    descriptor: TensorDescriptor,
    buffers: Vec<BufferLocation>,
}

impl FileEntry {
    /// Position in the name-sorted index (`0..entry_count`).
    pub fn index(&self) -> u64 {
        self.index
    }
    /// The tensor's name.
    pub fn name(&self) -> &str {
        self.descriptor.name().unwrap_or_default()
    }
    /// The validated descriptor.
    pub fn descriptor(&self) -> &TensorDescriptor {
        &self.descriptor
    }
    /// Payload locations in buffer-table order.
    pub fn buffers(&self) -> &[BufferLocation] {
        &self.buffers
    }
    /// Sum of the payload lengths in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.buffers.iter().map(|b| b.length).sum()
    }
}

/// A payload handed out by a span reader: the region's own bytes when their address satisfies
/// the buffer's alignment, else an aligned copy.
#[derive(Debug)]
pub enum SpanBuffer<'a> {
    /// Bytes inside the caller's region (zero copy).
    Borrowed(&'a [u8]),
    /// An aligned copy (the region's address did not satisfy the declared alignment).
    Copied(AlignedBuf),
}

impl SpanBuffer<'_> {
    /// The payload bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            SpanBuffer::Borrowed(b) => b,
            SpanBuffer::Copied(b) => b.as_slice(),
        }
    }
    /// True for zero copy.
    pub fn is_borrowed(&self) -> bool {
        matches!(self, SpanBuffer::Borrowed(_))
    }
}

/// A tensor read from a span: descriptor plus buffers that borrow the region where possible.
#[derive(Debug)]
pub struct SpanTensor<'a> {
    /// The validated descriptor.
    pub descriptor: TensorDescriptor,
    /// Buffers in buffer-table order.
    pub buffers: Vec<SpanBuffer<'a>>,
}

/// Byte positions every check is made against, fixed at open.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    size: u64,
    index_offset: u64,
    index_end: u64,
    records_start: u64,
    entry_count: u64,
}

static NEXT_FILE_ID: AtomicU64 = AtomicU64::new(1);

/// Reads a container through a [`ReadAt`] source. One handle, one thread at a time. Every
/// method leaves the reader unchanged when the source fails (`Transport`), so the call can
/// simply be repeated; no read ever leaves `[0, size)`.
pub struct FileReader<R: ReadAt> {
    source: R,
    opts: FileReaderOptions,
    id: u64,
    trailer: Trailer,
    geo: Geometry,
    /// `[index_offset, size - TRAILER_BYTES)` when the index was read eagerly.
    image: Option<AlignedBuf>,
    metadata: Option<Vec<(String, Vec<u8>)>>,
    read_calls: u64,
    pool: Option<BufferPool>,
    /// `verify` found every padding byte before this offset zero, during a call that failed
    /// for want of input: its repeat starts there (0: nothing known).
    padding_checked: u64,
    /// `verify_payloads` stopped for want of input (or a transport failure) here: entry,
    /// buffer, bytes of that buffer already fed to the running checksum, and the checksum
    /// state. Its repeat resumes there.
    payloads_checked: Option<(u64, usize, u64, Crc32c)>,
    /// A tensor [`read_tensor_in_place`](Self::read_tensor_in_place) is filling: entry index,
    /// its buffers, how many are complete.
    pending: Option<(u64, Vec<PooledBuf>, usize)>,
}

impl<R: ReadAt> FileReader<R> {
    /// Opens a container: one `size` call, then the last [`OPEN_TAIL_BYTES`] (the trailer), the
    /// header, and (when index plus metadata are at most `opts.eager_index_bytes`) the whole
    /// index, one range each, so at most three `read_at` ranges whatever the tensor count (each
    /// range takes more than one call only when the source returns short counts). The first
    /// range holds the index when it fits there, and the header too for an input of at most
    /// `OPEN_TAIL_BYTES`: a small container opens in one or two ranges.
    ///
    /// Errors: `Transport` (the source failed; open again), `Truncated` (smaller than a header
    /// plus a trailer, or the source ended early), `InvalidMagic`, `VersionMismatch`,
    /// `Corrupt` (checksums, impossible offsets), `DuplicateName`, `InvalidArgument`
    /// (options), `LimitExceeded`, `Unsupported`.
    pub fn open(source: R, opts: FileReaderOptions) -> Result<Self> {
        Self::open_or_return(source, opts).map_err(|(e, _)| e)
    }

    /// As [`open`](Self::open), handing the source back on failure (so that an open that failed
    /// for want of input, or a transport failure, can be repeated with the same source).
    pub fn open_or_return(source: R, opts: FileReaderOptions) -> std::result::Result<Self, (Error, R)> {
        if let Err(e) = check_options(&opts) {
            return Err((e, source));
        }
        let mut r = FileReader {
            source,
            opts,
            id: NEXT_FILE_ID.fetch_add(1, AtomicOrdering::Relaxed),
            trailer: Trailer {
                index_offset: 0,
                index_length: 0,
                entry_count: 0,
                metadata_offset: 0,
                metadata_length: 0,
                index_crc: 0,
                metadata_crc: 0,
            },
            geo: Geometry { size: 0, index_offset: 0, index_end: 0, records_start: 0, entry_count: 0 },
            image: None,
            metadata: None,
            read_calls: 0,
            pool: None,
            padding_checked: 0,
            payloads_checked: None,
            pending: None,
        };
        match r.open_steps() {
            Ok(()) => Ok(r),
            Err(e) => Err((e, r.source)),
        }
    }

    fn open_steps(&mut self) -> Result<()> {
        let r = self;
        let size = r.source.size().map_err(transport_err)?;
        if size < HEADER_BYTES + TRAILER_BYTES {
            bail!(
                Truncated,
                "input of {size} bytes is smaller than a container header and trailer ({} bytes)",
                HEADER_BYTES + TRAILER_BYTES
            );
        }
        r.geo.size = size;
        // One read of the end of the input: the trailer, and with it the index of a small
        // container (and the header of one of at most OPEN_TAIL_BYTES).
        let tail_len = size.min(OPEN_TAIL_BYTES);
        let tail_at = size - tail_len;
        let tail = r.read_range(tail_at, tail_len)?;
        let tail = tail.as_slice();
        if tail_at == 0 {
            check_header(&tail[..HEADER_BYTES as usize])?;
        } else {
            check_header(r.read_range(0, HEADER_BYTES)?.as_slice())?;
        }
        let t = Trailer::decode(&tail[(tail_len - TRAILER_BYTES) as usize..])?;
        r.geo = check_geometry(&t, size, &r.opts)?;
        r.trailer = t;
        let index_len = t.index_length + t.metadata_length;
        if index_len <= r.opts.eager_index_bytes.min(r.opts.max_index_bytes) {
            // check_geometry put index and metadata right before the trailer.
            let image = if t.index_offset >= tail_at {
                let at = (t.index_offset - tail_at) as usize;
                AlignedBuf::from_slice(&tail[at..at + index_len as usize], MIN_BUFFER_ALIGNMENT)?
            } else {
                r.read_range(t.index_offset, index_len)?
            };
            let metadata = check_image(&r.geo, &r.trailer, &r.opts, image.as_slice())?;
            r.image = Some(image);
            r.metadata = Some(metadata);
        }
        if r.opts.verify_at_open {
            r.verify()?;
        }
        Ok(())
    }

    /// The source.
    pub fn source(&self) -> &R {
        &self.source
    }

    /// The source, mutably (e.g. to change what a test transport does next).
    pub fn source_mut(&mut self) -> &mut R {
        &mut self.source
    }

    /// Consumes the reader, returning the source.
    pub fn into_source(self) -> R {
        self.source
    }

    /// The options the reader was opened with.
    pub fn options(&self) -> &FileReaderOptions {
        &self.opts
    }

    /// The input's size in bytes, as `size` reported at open.
    pub fn size(&self) -> u64 {
        self.geo.size
    }

    /// The decoded trailer.
    pub fn trailer(&self) -> &Trailer {
        &self.trailer
    }

    /// Number of tensors.
    pub fn entry_count(&self) -> u64 {
        self.geo.entry_count
    }

    /// True when `open` read and validated the whole index (it was at most
    /// `eager_index_bytes`); then lookups make no `read_at` calls.
    pub fn is_index_loaded(&self) -> bool {
        self.image.is_some()
    }

    /// Number of `read_at` calls made so far (open included).
    pub fn read_calls(&self) -> u64 {
        self.source.reads_made().unwrap_or(self.read_calls)
    }

    /// The name of entry `index` (entries are sorted by name bytes). Reads the entry (and, for
    /// a name longer than 88 bytes, its record) unless the index is loaded.
    ///
    /// Errors: `InvalidArgument` (`index >= entry_count`), and those of [`entry`](Self::entry).
    pub fn name_at(&mut self, index: u64) -> Result<String> {
        let raw = self.raw_entry(index)?;
        if let Some(n) = raw.inline_name() {
            return String::from_utf8(n.to_vec()).map_err(|_| err!(Corrupt, "entry {index}: name is not UTF-8"));
        }
        Ok(self.entry(index)?.name().to_string())
    }

    /// Entry `index` in name order: its descriptor and payload locations, fully checked
    /// (record checksum, descriptor, name, payload lengths, ranges and alignment). Reads one
    /// entry and one record unless the index is loaded. Reads no payload.
    ///
    /// Errors: `InvalidArgument` (`index >= entry_count`), `Transport`, `Truncated`,
    /// `Corrupt`, `InvalidAlignment`, `LimitExceeded`, descriptor decoding errors.
    pub fn entry(&mut self, index: u64) -> Result<FileEntry> {
        let raw = self.raw_entry(index)?;
        self.entry_from_raw(index, &raw)
    }

    /// Finds the tensor named `name` (compared as bytes): a binary search over the entry table
    /// that reads at most `ceil(log2(n + 1))` entries, plus a name for each probe whose first
    /// 88 bytes tie with `name` and are longer than 88 bytes, plus one record. `Ok(None)` when
    /// absent. With a loaded index, no reads at all.
    ///
    /// Errors: as for [`entry`](Self::entry).
    pub fn find(&mut self, name: &[u8]) -> Result<Option<FileEntry>> {
        if name.is_empty() || name.len() > MAX_NAME_BYTES {
            return Ok(None);
        }
        let (mut lo, mut hi) = (0u64, self.geo.entry_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let raw = self.raw_entry(mid)?;
            match self.compare_name(&raw, name)? {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => {
                    let e = self.entry_from_raw(mid, &raw)?;
                    if e.name().as_bytes() != name {
                        bail!(Corrupt, "entry {mid}: the index name does not match the descriptor's");
                    }
                    return Ok(Some(e));
                }
            }
        }
        Ok(None)
    }

    /// Sets the pool [`read_tensor`](Self::read_tensor) takes buffer allocations from
    /// (`None`, the default: a new allocation per buffer); see [`BufferPool`]. Span readers'
    /// zero-copy buffers never use it.
    pub fn set_buffer_pool(&mut self, pool: Option<BufferPool>) {
        self.pool = pool;
    }

    /// Sets the cap of the reader's pool in bytes: 0 drops the pool, otherwise the current
    /// pool's cap is changed or a new pool is made (as `StreamReader::set_buffer_pool_bytes`).
    pub fn set_buffer_pool_bytes(&mut self, max_bytes: u64) {
        match (&self.pool, max_bytes) {
            (_, 0) => self.pool = None,
            (Some(p), m) => p.set_max_bytes(m),
            (None, m) => self.pool = Some(BufferPool::new(m)),
        }
    }

    /// The reader's pool, if it has one.
    pub fn buffer_pool(&self) -> Option<&BufferPool> {
        self.pool.as_ref()
    }

    /// Reads a tensor's payloads into allocations from the reader's pool (or new ones), each
    /// aligned to its buffer's declared alignment, with `read_at` writing straight into them
    /// (one range per buffer). Checks each stored CRC32C when `verify_payloads` is set.
    ///
    /// Errors: `InvalidArgument` (an entry of another reader), `LimitExceeded`
    /// (`max_tensor_bytes`), `OutOfMemory`, `Transport` (nothing changed; call again),
    /// `Truncated`, `Corrupt` (checksum mismatch).
    pub fn read_tensor(&mut self, entry: &FileEntry) -> Result<ReadTensor> {
        self.check_mine(entry)?;
        let total = entry.total_bytes();
        if total > self.opts.max_tensor_bytes {
            bail!(
                LimitExceeded,
                "tensor {:?} of {total} bytes exceeds the limit of {}",
                entry.name(),
                self.opts.max_tensor_bytes
            );
        }
        let mut buffers = Vec::with_capacity(entry.buffers.len());
        for (i, (loc, h)) in entry.buffers.iter().zip(entry.descriptor.buffers()).enumerate() {
            let mut b = match &self.pool {
                Some(p) => p.take(loc.length, h.alignment())?,
                None => PooledBuf::unpooled(AlignedBuf::new(loc.length, h.alignment())?),
            };
            match loc.crc32c.filter(|_| self.opts.verify_payloads) {
                // The checksum is computed a chunk at a time, right after each chunk is read,
                // while its bytes are still in the cache (a second pass over a large payload
                // would read it all from memory again).
                Some(want) if b.len() > CHECK_CHUNK_BYTES => {
                    let mut crc = Crc32c::new();
                    let mut done = 0;
                    while done < b.len() {
                        let n = (b.len() - done).min(CHECK_CHUNK_BYTES);
                        self.read_exact_at(loc.offset + done as u64, &mut b.spare_mut()[..n])?;
                        b.advance(n);
                        crc.update(&b.as_slice()[done..done + n]);
                        done += n;
                    }
                    payload_crc_matches(entry, i, want, crc.finish())?;
                }
                _ => {
                    let len = b.len();
                    self.read_exact_at(loc.offset, b.spare_mut())?;
                    b.advance(len);
                    if self.opts.verify_payloads {
                        check_payload(entry, i, b.as_slice())?;
                    }
                }
            }
            buffers.push(b);
        }
        if crate::layouts::has_contents_check(&entry.descriptor) {
            let views: Vec<&[u8]> = buffers.iter().map(|b| b.as_slice()).collect();
            crate::layouts::check_contents(&entry.descriptor, &views)?;
        }
        Ok(ReadTensor { descriptor: entry.descriptor.clone(), buffers })
    }

    /// Reads buffer `buffer` of `entry` into the caller's memory `dst` (at least the buffer's
    /// length; exactly that many bytes are written) and returns the length. The checksum is
    /// not checked here (the bytes are not readable as initialised memory from safe code):
    /// call [`check_payload`] on them afterwards when `verify_payloads` matters.
    ///
    /// Errors: `InvalidArgument` (another reader's entry, buffer index out of range),
    /// `BufferTooSmall` (`dst` too short), `Transport`, `Truncated`.
    pub fn read_buffer_into(&mut self, entry: &FileEntry, buffer: usize, dst: &mut [MaybeUninit<u8>]) -> Result<u64> {
        self.check_mine(entry)?;
        let loc = *entry.buffers.get(buffer).ok_or_else(|| {
            err!(InvalidArgument, "buffer index {buffer} out of range for {} buffers", entry.buffers.len())
        })?;
        if (dst.len() as u64) < loc.length {
            bail!(BufferTooSmall, "destination of {} bytes for a payload of {}", dst.len(), loc.length);
        }
        self.read_exact_at(loc.offset, &mut dst[..loc.length as usize])?;
        Ok(loc.length)
    }

    /// The file-level key/value metadata, sorted by key bytes. Reads and checks the metadata
    /// block on first use unless the index is loaded.
    ///
    /// Errors: `Transport` (call again), `Truncated`, `Corrupt`, `DuplicateName`,
    /// `LimitExceeded`.
    pub fn metadata(&mut self) -> Result<&[(String, Vec<u8>)]> {
        if self.metadata.is_none() {
            let t = self.trailer;
            let b = self.read_range(t.metadata_offset, t.metadata_length)?;
            if crc32c(b.as_slice()) != t.metadata_crc {
                bail!(Corrupt, "metadata block checksum mismatch");
            }
            self.metadata = Some(decode_metadata(b.as_slice())?);
        }
        Ok(self.metadata.as_deref().unwrap_or_default())
    }

    /// The value of metadata `key`, if present (binary search).
    pub fn metadata_value(&mut self, key: &str) -> Result<Option<&[u8]>> {
        let md = self.metadata()?;
        Ok(md.binary_search_by(|(k, _)| k.as_bytes().cmp(key.as_bytes())).ok().map(|i| md[i].1.as_slice()))
    }

    /// Checks the whole container index: index and metadata checksums, entry checksums and
    /// fields, strict name order (so no duplicates), every record and descriptor, payload
    /// lengths, ranges and alignment, that no two payloads overlap, and that every padding
    /// byte of the payload area (after the header, between payloads, before the index) is
    /// zero (`Corrupt` naming the first non-zero byte's offset). Loads index and metadata at
    /// once unless already loaded (`LimitExceeded` above `max_index_bytes`). Payload bytes are
    /// not read (nor their checksums checked); padding is read in chunks of at most
    /// [`PADDING_CHUNK_BYTES`], or scanned in place for a [`Span`].
    pub fn verify(&mut self) -> Result<()> {
        let result = self.verify_all();
        if !matches!(result.as_ref().map_err(Error::kind), Err(ErrorKind::NeedInput | ErrorKind::Transport)) {
            // The padding memo only serves a repeat of a call that the source interrupted.
            self.padding_checked = 0;
        }
        result
    }

    fn verify_all(&mut self) -> Result<()> {
        let t = self.trailer;
        let tail = t.index_length + t.metadata_length;
        let mut loaded = None;
        if self.image.is_none() {
            if tail > self.opts.max_index_bytes {
                bail!(
                    LimitExceeded,
                    "index and metadata of {tail} bytes exceed max_index_bytes {}",
                    self.opts.max_index_bytes
                );
            }
            let b = self.read_range(t.index_offset, tail)?;
            let md = check_image(&self.geo, &t, &self.opts, b.as_slice())?;
            if self.source.replayed() {
                // A repeat of this call (and every later lookup) must not read the index again.
                self.image = Some(b);
                self.metadata = Some(md);
            } else {
                loaded = Some(b);
            }
        }
        let image: &[u8] = match (&self.image, &loaded) {
            (Some(i), _) | (None, Some(i)) => i.as_slice(),
            (None, None) => bail!(InvalidState, "internal: no index image to verify"),
        };
        // (offset, length) of every payload: 16 bytes per buffer, less than the 24-byte buffer
        // record each came from, so bounded by the index just loaded.
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for i in 0..self.geo.entry_count {
            let raw = entry_in_image(&self.geo, &self.opts, image, i)?;
            let rec = slice_in_image(&self.geo, image, raw.record_offset, raw.record_length);
            let entry = build_entry(&self.geo, self.id, i, &raw, rec)?;
            ranges.extend(entry.buffers.iter().map(|b| (b.offset, b.length)));
        }
        self.check_padding(ranges)
    }

    /// Checks that every byte of the payload area `[16, index_offset)` outside the payloads
    /// is zero (docs/spec/hrryfile.md §1.2, §3): the gap after the header, between payloads,
    /// and before the index. Payload ranges were checked against the area (and for overlap)
    /// before. A span is scanned in place; otherwise gaps are read through `read_at` in
    /// windows of at most [`PADDING_CHUNK_BYTES`], never a whole large gap at once.
    fn check_padding(&mut self, mut ranges: Vec<(u64, u64)>) -> Result<()> {
        ranges.sort_unstable();
        let end = self.geo.index_offset;
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        let mut pos = HEADER_BYTES;
        for (offset, length) in ranges {
            if offset > pos {
                gaps.push((pos, offset));
            }
            pos = pos.max(offset.saturating_add(length));
        }
        if end > pos {
            gaps.push((pos, end));
        }
        if let Some(all) = self.source.as_bytes() {
            for (from, to) in gaps {
                // The payload area lies inside the source: open checked index_offset ≤ size.
                let gap = usize::try_from(from)
                    .ok()
                    .zip(usize::try_from(to).ok())
                    .and_then(|(f, t)| all.get(f..t))
                    .ok_or_else(|| err!(Corrupt, "internal: padding [{from}, {to}) lies outside the input"))?;
                if let Some(k) = gap.iter().position(|&b| b != 0) {
                    bail!(Corrupt, "non-zero padding byte at offset {} (padding must be zero)", from + k as u64);
                }
            }
            return Ok(());
        }
        // Read windows of at most one chunk, each starting at a gap and covering as many
        // whole gaps as fit (and the payload bytes between them, which are skipped): many
        // small tensors cost about one read per chunk of the payload area, not one per gap.
        // A repeat of a call that stopped for want of input starts where that one stopped.
        let done = self.padding_checked;
        gaps.retain(|&(_, to)| to > done);
        if let Some(g) = gaps.first_mut() {
            g.0 = g.0.max(done);
        }
        let window = (end - HEADER_BYTES).min(PADDING_CHUNK_BYTES);
        let mut buf = AlignedBuf::new(window, MIN_BUFFER_ALIGNMENT)?;
        let mut i = 0;
        while i < gaps.len() {
            let from = gaps[i].0;
            let limit = from + PADDING_CHUNK_BYTES;
            let (last, to) = if gaps[i].1 > limit {
                (i, limit)
            } else {
                let mut j = i;
                while j + 1 < gaps.len() && gaps[j + 1].1 <= limit {
                    j += 1;
                }
                (j, gaps[j].1)
            };
            let n = (to - from) as usize;
            buf.reset(n);
            self.read_exact_at(from, buf.spare_mut())?;
            buf.advance(n);
            let bytes = buf.as_slice();
            for &(f, t) in &gaps[i..=last] {
                let (f, t) = (f.max(from), t.min(to));
                let gap = &bytes[(f - from) as usize..(t - from) as usize];
                if let Some(k) = gap.iter().position(|&b| b != 0) {
                    bail!(Corrupt, "non-zero padding byte at offset {} (padding must be zero)", f + k as u64);
                }
            }
            self.padding_checked = to;
            self.source.release(from, to - from);
            if gaps[last].1 > to {
                // A gap longer than a chunk: continue it in the next window.
                gaps[last].0 = to;
                i = last;
            } else {
                i = last + 1;
            }
        }
        Ok(())
    }

    /// Checks every stored payload CRC32C of every entry, reading each payload through
    /// `read_at` in windows of at most [`PAYLOAD_CHUNK_BYTES`] (a span is checked in place), so
    /// memory stays one window whatever a tensor's size and `max_tensor_bytes` does not apply.
    /// A tensor whose layout has a contents check (sparse indices, page tables) is then read
    /// with [`read_tensor`](Self::read_tensor) and checked (`max_tensor_bytes` applies to it).
    /// Independent of the `verify_payloads` option. A call that stopped for want of input
    /// (`NeedInput`) or on a transport failure resumes where it stopped when repeated.
    ///
    /// Errors: `Corrupt` (a checksum mismatch, naming the tensor and buffer; bad indices),
    /// `Truncated`, `Transport`, `NeedInput`, those of [`entry`](Self::entry) and
    /// [`read_tensor`](Self::read_tensor).
    pub fn verify_payloads(&mut self) -> Result<()> {
        let result = self.verify_payloads_from();
        if !matches!(result.as_ref().map_err(Error::kind), Err(ErrorKind::NeedInput | ErrorKind::Transport)) {
            self.payloads_checked = None;
        }
        result
    }

    fn verify_payloads_from(&mut self) -> Result<()> {
        let (first, mut first_buffer, mut done, mut crc) = self.payloads_checked.unwrap_or((0, 0, 0, Crc32c::new()));
        let mut window: Option<AlignedBuf> = None;
        for i in first..self.geo.entry_count {
            let entry = self.entry(i)?;
            for (b, loc) in entry.buffers.iter().enumerate().skip(first_buffer) {
                let Some(want) = loc.crc32c else {
                    continue;
                };
                if let Some(all) = self.source.as_bytes() {
                    // Ranges were checked against the size at open, and the size is all.len().
                    let s = &all[loc.offset as usize..(loc.offset + loc.length) as usize];
                    crc.update(s);
                } else {
                    while done < loc.length {
                        let n = (loc.length - done).min(PAYLOAD_CHUNK_BYTES);
                        let buf = match &mut window {
                            Some(w) => w,
                            None => window.insert(AlignedBuf::new(
                                loc.length.clamp(1, PAYLOAD_CHUNK_BYTES),
                                MIN_BUFFER_ALIGNMENT,
                            )?),
                        };
                        if (buf.capacity() as u64) < n {
                            *buf = AlignedBuf::new(n, MIN_BUFFER_ALIGNMENT)?;
                        }
                        buf.reset(n as usize);
                        self.read_exact_at(loc.offset + done, buf.spare_mut())?;
                        buf.advance(n as usize);
                        crc.update(buf.as_slice());
                        self.source.release(loc.offset + done, n);
                        done += n;
                        self.payloads_checked = Some((i, b, done, crc));
                    }
                }
                let have = crc.finish();
                if have != want {
                    bail!(
                        Corrupt,
                        "payload {b} of {:?} checksum mismatch (stored {want:#010x}, computed {have:#010x})",
                        entry.name()
                    );
                }
                done = 0;
                crc = Crc32c::new();
                self.payloads_checked = Some((i, b + 1, 0, crc));
            }
            first_buffer = 0;
            if crate::layouts::has_contents_check(&entry.descriptor) {
                self.read_tensor(&entry)?;
            }
            self.payloads_checked = Some((i + 1, 0, 0, crc));
        }
        Ok(())
    }

    fn check_mine(&self, entry: &FileEntry) -> Result<()> {
        if entry.file_id != self.id {
            bail!(InvalidArgument, "the entry belongs to another container reader");
        }
        Ok(())
    }

    fn raw_entry(&mut self, index: u64) -> Result<RawEntry> {
        if index >= self.geo.entry_count {
            bail!(InvalidArgument, "entry index {index} out of range for {} entries", self.geo.entry_count);
        }
        if let Some(image) = &self.image {
            return entry_in_image(&self.geo, &self.opts, image.as_slice(), index);
        }
        let b = self.read_range(self.geo.index_offset + index * ENTRY_BYTES, ENTRY_BYTES)?;
        let raw = RawEntry::decode(b.as_slice(), index, false)?;
        check_entry(&self.geo, &self.opts, &raw, index)?;
        Ok(raw)
    }

    fn entry_from_raw(&mut self, index: u64, raw: &RawEntry) -> Result<FileEntry> {
        let (geo, id) = (self.geo, self.id);
        let rec = self.bytes(raw.record_offset, raw.record_length)?;
        build_entry(&geo, id, index, raw, &rec)
    }

    fn compare_name(&mut self, raw: &RawEntry, target: &[u8]) -> Result<Ordering> {
        if let Some(n) = raw.inline_name() {
            return Ok(n.cmp(target));
        }
        let k = target.len().min(NAME_PREFIX_BYTES);
        match raw.prefix[..].cmp(&target[..k]) {
            Ordering::Equal => {}
            o => return Ok(o),
        }
        // The first 88 bytes tie: compare in full. These name bytes are not checksummed on
        // their own; a corrupt name can only misdirect the search, because the record read
        // for a match is checked and compared with `target` (`find`).
        let name = self.bytes(raw.name_offset, u64::from(raw.name_length))?;
        Ok(name[..].cmp(target))
    }

    /// Bytes `[offset, offset + len)` of the index area: from the loaded image, else read.
    fn bytes(&mut self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        if self.image.is_some() {
            let image = self.image.as_ref().map(|i| i.as_slice()).unwrap_or_default();
            return Ok(Cow::Borrowed(slice_in_image(&self.geo, image, offset, len)));
        }
        Ok(Cow::Owned(self.read_range(offset, len)?.as_slice().to_vec()))
    }

    /// Reads `len` bytes at `offset` into a new buffer.
    fn read_range(&mut self, offset: u64, len: u64) -> Result<AlignedBuf> {
        let mut b = AlignedBuf::new(len, MIN_BUFFER_ALIGNMENT)?;
        let n = b.len();
        self.read_exact_at(offset, b.spare_mut())?;
        b.advance(n);
        Ok(b)
    }

    /// Fills `dst` from `offset`, looping on short counts. Never asks outside `[0, size)`.
    fn read_exact_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<()> {
        let len = dst.len() as u64;
        if offset.checked_add(len).is_none_or(|e| e > self.geo.size) {
            bail!(
                Corrupt,
                "internal: a read of {len} bytes at {offset} would leave the input of {} bytes",
                self.geo.size
            );
        }
        let mut got = 0usize;
        while got < dst.len() {
            let asked = dst.len() - got;
            let n = self.source.read_at(offset + got as u64, &mut dst[got..]).map_err(transport_err)?;
            self.read_calls += 1;
            if n > asked {
                bail!(Transport, "read_at reported {n} bytes, more than the {asked} asked for");
            }
            if n == 0 {
                bail!(Truncated, "input ended at byte {} although its size is {}", offset + got as u64, self.geo.size);
            }
            got += n;
        }
        Ok(())
    }
}

impl FileReader<Ranges> {
    /// As [`read_tensor`](Self::read_tensor), with each payload requested from the caller
    /// straight into the tensor's own allocation (no copy, docs/spec/c-abi.md §Containers
    /// without a transport). The allocations are kept while the call is repeated for the same
    /// entry, so each repeat continues where the last supply ended; a call for another entry
    /// drops them.
    ///
    /// Errors: those of [`read_tensor`](Self::read_tensor), `NeedInput`.
    pub fn read_tensor_in_place(&mut self, entry: &FileEntry) -> Result<ReadTensor> {
        self.check_mine(entry)?;
        let total = entry.total_bytes();
        if total > self.opts.max_tensor_bytes {
            bail!(
                LimitExceeded,
                "tensor {:?} of {total} bytes exceeds the limit of {}",
                entry.name(),
                self.opts.max_tensor_bytes
            );
        }
        let (mut buffers, mut done) = match self.pending.take() {
            Some((index, b, done)) if index == entry.index => (b, done),
            _ => {
                self.source.forget_in_place();
                let mut b = Vec::with_capacity(entry.buffers.len());
                for (loc, h) in entry.buffers.iter().zip(entry.descriptor.buffers()) {
                    b.push(match &self.pool {
                        Some(p) => p.take(loc.length, h.alignment())?,
                        None => PooledBuf::unpooled(AlignedBuf::new(loc.length, h.alignment())?),
                    });
                }
                (b, 0)
            }
        };
        while done < buffers.len() {
            let loc = entry.buffers[done];
            let b = &mut buffers[done];
            let len = b.len();
            self.source.set_in_place(true);
            let r = self.read_exact_at(loc.offset, b.spare_mut());
            self.source.set_in_place(false);
            if let Err(e) = r {
                if e.kind() == ErrorKind::NeedInput {
                    self.pending = Some((entry.index, buffers, done));
                }
                return Err(e);
            }
            b.advance(len);
            if self.opts.verify_payloads {
                check_payload(entry, done, b.as_slice())?;
            }
            done += 1;
        }
        self.source.forget_in_place();
        if crate::layouts::has_contents_check(&entry.descriptor) {
            let views: Vec<&[u8]> = buffers.iter().map(|b| b.as_slice()).collect();
            crate::layouts::check_contents(&entry.descriptor, &views)?;
        }
        Ok(ReadTensor { descriptor: entry.descriptor.clone(), buffers })
    }
}

impl<'a> FileReader<Span<'a>> {
    /// Opens a container held in memory (e.g. a memory map); the same as
    /// `FileReader::open(Span::new(bytes), opts)`.
    pub fn open_span(bytes: &'a [u8], opts: FileReaderOptions) -> Result<Self> {
        FileReader::open(Span::new(bytes), opts)
    }

    /// A tensor whose buffers borrow the region without copying whenever the payload's address
    /// satisfies the buffer's declared alignment (always, for a region that starts at a
    /// multiple of the largest alignment, e.g. a page-aligned map of a file written with
    /// alignments up to 4096); otherwise an aligned copy is made ([`SpanBuffer::Copied`]).
    /// Checks payload CRC32Cs only when `verify_payloads` is set (that touches every page).
    ///
    /// Errors: `InvalidArgument` (another reader's entry), `Corrupt` (checksum),
    /// `LimitExceeded` / `OutOfMemory` (copies only).
    pub fn span_tensor(&mut self, entry: &FileEntry) -> Result<SpanTensor<'a>> {
        self.check_mine(entry)?;
        let bytes = self.source.bytes();
        let mut copied = 0u64;
        let mut buffers = Vec::with_capacity(entry.buffers.len());
        for (i, (loc, h)) in entry.buffers.iter().zip(entry.descriptor.buffers()).enumerate() {
            // Ranges were checked against the size at open, and the size is bytes.len().
            let s = &bytes[loc.offset as usize..(loc.offset + loc.length) as usize];
            if self.opts.verify_payloads {
                check_payload(entry, i, s)?;
            }
            if (s.as_ptr() as usize).is_multiple_of(h.alignment() as usize) {
                buffers.push(SpanBuffer::Borrowed(s));
            } else {
                copied += loc.length;
                if copied > self.opts.max_tensor_bytes {
                    bail!(
                        LimitExceeded,
                        "copying tensor {:?} would exceed the limit of {} bytes",
                        entry.name(),
                        self.opts.max_tensor_bytes
                    );
                }
                buffers.push(SpanBuffer::Copied(AlignedBuf::from_slice(s, h.alignment())?));
            }
        }
        if crate::layouts::has_contents_check(&entry.descriptor) {
            let views: Vec<&[u8]> = buffers.iter().map(|b| b.as_slice()).collect();
            crate::layouts::check_contents(&entry.descriptor, &views)?;
        }
        Ok(SpanTensor { descriptor: entry.descriptor.clone(), buffers })
    }
}

/// Checks payload `buffer` of `entry` against its stored CRC32C (no-op when none is stored).
/// Errors: `Corrupt` on mismatch, `InvalidArgument` for a bad index or length.
pub fn check_payload(entry: &FileEntry, buffer: usize, bytes: &[u8]) -> Result<()> {
    let loc = entry.buffers.get(buffer).ok_or_else(|| err!(InvalidArgument, "buffer index {buffer} out of range"))?;
    if bytes.len() as u64 != loc.length {
        bail!(InvalidArgument, "{} bytes given for a payload of {}", bytes.len(), loc.length);
    }
    if let Some(want) = loc.crc32c {
        payload_crc_matches(entry, buffer, want, crc32c(bytes))?;
    }
    Ok(())
}

/// Payloads of more bytes than this are read and checksummed a chunk at a time.
const CHECK_CHUNK_BYTES: usize = 1 << 20;

/// `Corrupt` unless payload `buffer`'s computed checksum `have` is the stored `want`.
fn payload_crc_matches(entry: &FileEntry, buffer: usize, want: u32, have: u32) -> Result<()> {
    if have != want {
        bail!(
            Corrupt,
            "payload {buffer} of {:?} checksum mismatch (stored {want:#010x}, computed {have:#010x})",
            entry.name()
        );
    }
    Ok(())
}

fn transport_err(e: Error) -> Error {
    if matches!(e.kind(), ErrorKind::Transport | ErrorKind::NeedInput) {
        e
    } else {
        Error::new(ErrorKind::Transport, e.message().to_string())
    }
}

/// Checks reader options against the format's maxima.
fn check_options(opts: &FileReaderOptions) -> Result<()> {
    if opts.max_descriptor_bytes > MAX_DESCRIPTOR_BYTES as u64 {
        bail!(
            InvalidArgument,
            "max_descriptor_bytes {} exceeds the format maximum {MAX_DESCRIPTOR_BYTES}",
            opts.max_descriptor_bytes
        );
    }
    if opts.max_metadata_bytes > MAX_FILE_METADATA_BYTES {
        bail!(
            InvalidArgument,
            "max_metadata_bytes {} exceeds the format maximum {MAX_FILE_METADATA_BYTES}",
            opts.max_metadata_bytes
        );
    }
    Ok(())
}

/// Checks the trailer's offsets against the file size and the reader's limits.
fn check_geometry(t: &Trailer, size: u64, opts: &FileReaderOptions) -> Result<Geometry> {
    let trailer_at = size - TRAILER_BYTES;
    if t.index_offset < HEADER_BYTES {
        bail!(Corrupt, "index offset {} lies inside the header", t.index_offset);
    }
    if !t.index_offset.is_multiple_of(8) {
        bail!(Corrupt, "index offset {} is not a multiple of 8", t.index_offset);
    }
    if t.index_offset > trailer_at {
        bail!(
            Corrupt,
            "index offset {} lies past the end of the data ({trailer_at} bytes before the trailer)",
            t.index_offset
        );
    }
    let index_end = match t.index_offset.checked_add(t.index_length) {
        Some(e) if e <= trailer_at => e,
        _ => bail!(
            Corrupt,
            "index [{}, +{}) reaches past the end of the file or into the trailer at {trailer_at}",
            t.index_offset,
            t.index_length
        ),
    };
    if t.metadata_offset != index_end || t.metadata_offset.checked_add(t.metadata_length) != Some(trailer_at) {
        bail!(
            Corrupt,
            "metadata block [{}, +{}) does not fill the bytes between the index end {index_end} and the trailer at {trailer_at}",
            t.metadata_offset,
            t.metadata_length
        );
    }
    if t.metadata_length < 8 {
        bail!(Corrupt, "metadata block of {} bytes is shorter than its count", t.metadata_length);
    }
    if t.metadata_length > opts.max_metadata_bytes {
        bail!(
            LimitExceeded,
            "metadata block of {} bytes exceeds the limit of {}",
            t.metadata_length,
            opts.max_metadata_bytes
        );
    }
    let table =
        t.entry_count.checked_mul(ENTRY_BYTES).filter(|&b| b <= t.index_length).ok_or_else(|| {
            err!(Corrupt, "{} entries do not fit an index of {} bytes", t.entry_count, t.index_length)
        })?;
    Ok(Geometry {
        size,
        index_offset: t.index_offset,
        index_end,
        records_start: t.index_offset + table,
        entry_count: t.entry_count,
    })
}

/// Checks what one entry says about the index it lives in.
fn check_entry(g: &Geometry, opts: &FileReaderOptions, raw: &RawEntry, i: u64) -> Result<()> {
    let rec_end = raw.record_offset.checked_add(raw.record_length);
    if raw.record_offset < g.records_start || rec_end.is_none_or(|e| e > g.index_end) {
        bail!(
            Corrupt,
            "entry {i}: record [{}, +{}) lies outside the index records [{}, {})",
            raw.record_offset,
            raw.record_length,
            g.records_start,
            g.index_end
        );
    }
    let table = u64::from(raw.buffer_count) * BUFFER_RECORD_BYTES;
    if raw.record_length < table + MIN_DESCRIPTOR_BYTES {
        bail!(
            Corrupt,
            "entry {i}: record of {} bytes cannot hold {} buffer records and a descriptor",
            raw.record_length,
            raw.buffer_count
        );
    }
    let desc_len = raw.record_length - table;
    if desc_len > opts.max_descriptor_bytes {
        bail!(
            LimitExceeded,
            "entry {i}: descriptor of {desc_len} bytes exceeds the limit of {}",
            opts.max_descriptor_bytes
        );
    }
    let name_end = raw.name_offset.checked_add(u64::from(raw.name_length));
    if raw.name_offset < raw.record_offset + table || name_end.is_none_or(|e| e > raw.record_offset + raw.record_length)
    {
        bail!(Corrupt, "entry {i}: name [{}, +{}) lies outside its descriptor", raw.name_offset, raw.name_length);
    }
    Ok(())
}

/// `[offset, offset + len)` of the loaded image (index then metadata). Only called with ranges
/// already checked to lie inside the index.
fn slice_in_image<'i>(g: &Geometry, image: &'i [u8], offset: u64, len: u64) -> &'i [u8] {
    let at = (offset - g.index_offset) as usize;
    &image[at..at + len as usize]
}

/// Entry `i` of a loaded image. Its own checksum is not recomputed: an image is only kept
/// (or used by `verify`) after the whole-index checksum over it matched.
fn entry_in_image(g: &Geometry, opts: &FileReaderOptions, image: &[u8], i: u64) -> Result<RawEntry> {
    let at = (i * ENTRY_BYTES) as usize;
    let raw = RawEntry::decode(&image[at..at + ENTRY_BYTES as usize], i, true)?;
    check_entry(g, opts, &raw, i)?;
    Ok(raw)
}

/// Decodes one buffer record and checks its range against the file.
fn buffer_location(g: &Geometry, rec: &[u8], entry: u64, i: usize) -> Result<BufferLocation> {
    let at = i * BUFFER_RECORD_BYTES as usize;
    let r = BufferRecord::decode(&rec[at..at + BUFFER_RECORD_BYTES as usize], entry, i)?;
    let Some(end) = r.offset.checked_add(r.length) else {
        bail!(Corrupt, "entry {entry} buffer {i}: offset {} + length {} overflows u64", r.offset, r.length);
    };
    if end > g.size {
        bail!(
            Corrupt,
            "entry {entry} buffer {i}: payload [{}, {end}) reaches past the end of the file ({} bytes)",
            r.offset,
            g.size
        );
    }
    if r.offset < HEADER_BYTES {
        bail!(Corrupt, "entry {entry} buffer {i}: payload at {} lies inside the header", r.offset);
    }
    if end > g.index_offset {
        bail!(
            Corrupt,
            "entry {entry} buffer {i}: payload [{}, {end}) reaches into the index at {}",
            r.offset,
            g.index_offset
        );
    }
    Ok(BufferLocation {
        offset: r.offset,
        length: r.length,
        crc32c: (r.flags & super::format::BUFFER_HAS_CRC != 0).then_some(r.crc),
    })
}

/// The full name of an entry, given its record bytes.
fn name_in_record<'r>(raw: &RawEntry, rec: &'r [u8]) -> &'r [u8] {
    let at = (raw.name_offset - raw.record_offset) as usize;
    &rec[at..at + raw.name_length as usize]
}

/// Checks a record and decodes the entry it describes.
fn build_entry(g: &Geometry, file_id: u64, i: u64, raw: &RawEntry, rec: &[u8]) -> Result<FileEntry> {
    if crc32c(rec) != raw.record_crc {
        bail!(Corrupt, "entry {i}: record checksum mismatch");
    }
    let n = raw.buffer_count as usize;
    let buffers = (0..n).map(|b| buffer_location(g, rec, i, b)).collect::<Result<Vec<_>>>()?;
    let descriptor = TensorDescriptor::decode(&rec[n * BUFFER_RECORD_BYTES as usize..])
        .map_err(|e| Error::new(e.kind(), format!("entry {i}: {}", e.message())))?;
    let name = name_in_record(raw, rec);
    if descriptor.name().map(str::as_bytes) != Some(name) || raw.prefix[..raw.inline_len()] != name[..raw.inline_len()]
    {
        bail!(Corrupt, "entry {i}: the index name does not match the descriptor's");
    }
    if descriptor.buffers().len() != n {
        bail!(Corrupt, "entry {i}: {n} buffer records for a descriptor with {} buffers", descriptor.buffers().len());
    }
    for (b, (loc, h)) in buffers.iter().zip(descriptor.buffers()).enumerate() {
        if loc.length != h.byte_size() {
            bail!(
                Corrupt,
                "entry {i} ({:?}) buffer {b}: payload of {} bytes, the descriptor declares {}",
                descriptor.name().unwrap_or_default(),
                loc.length,
                h.byte_size()
            );
        }
        if loc.offset % h.alignment() != 0 {
            bail!(
                InvalidAlignment,
                "entry {i} ({:?}) buffer {b}: payload offset {} is not a multiple of its alignment {}",
                descriptor.name().unwrap_or_default(),
                loc.offset,
                h.alignment()
            );
        }
    }
    Ok(FileEntry { file_id, index: i, descriptor, buffers })
}

/// Checks a loaded image (index then metadata block): both checksums, the metadata, and the
/// cross-entry rules: entries strictly increasing by name (so unique), payload ranges valid
/// and pairwise disjoint. Descriptors are not decoded here (see `verify`). Returns the
/// metadata.
fn check_image(g: &Geometry, t: &Trailer, opts: &FileReaderOptions, image: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let (index, md) = image.split_at(t.index_length as usize);
    if crc32c(index) != t.index_crc {
        bail!(Corrupt, "index checksum mismatch");
    }
    if crc32c(md) != t.metadata_crc {
        bail!(Corrupt, "metadata block checksum mismatch");
    }
    let metadata = decode_metadata(md)?;
    // Payload ranges: at most one per 24-byte buffer record, so bounded by the index size.
    let mut ranges: Vec<(u64, u64, u64)> = Vec::new();
    let mut prev: Option<&[u8]> = None;
    for i in 0..g.entry_count {
        let raw = entry_in_image(g, opts, image, i)?;
        let rec = slice_in_image(g, image, raw.record_offset, raw.record_length);
        let name = name_in_record(&raw, rec);
        if raw.prefix[..raw.inline_len()] != name[..raw.inline_len()] {
            bail!(Corrupt, "entry {i}: the name prefix does not match the name");
        }
        if let Some(p) = prev {
            match p.cmp(name) {
                Ordering::Less => {}
                Ordering::Equal => {
                    bail!(DuplicateName, "entries {} and {i} are both named {:?}", i - 1, String::from_utf8_lossy(name))
                }
                Ordering::Greater => bail!(Corrupt, "index entries are not sorted by name at entry {i}"),
            }
        }
        prev = Some(name);
        for b in 0..raw.buffer_count as usize {
            let loc = buffer_location(g, rec, i, b)?;
            if loc.length > 0 {
                ranges.push((loc.offset, loc.offset + loc.length, i));
            }
        }
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        if w[1].0 < w[0].1 {
            bail!(
                Corrupt,
                "payloads of entries {} [{}, {}) and {} [{}, {}) overlap",
                w[0].2,
                w[0].0,
                w[0].1,
                w[1].2,
                w[1].0,
                w[1].1
            );
        }
    }
    Ok(metadata)
}
