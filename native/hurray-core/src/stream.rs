//! The stream format's reader and writer state machines (docs/spec/stream.md).
//!
//! Both sides keep seed 000's four transport rules: short counts are normal; `0` from read is
//! end of input and `0` from write is a closed sink; a failing transport call moved no bytes,
//! so the reader resumes exactly where it stopped; a write that fails after an item's first
//! byte poisons the writer.

use std::mem::MaybeUninit;

use crate::buffer::{AlignedBuf, GROW_MIN_BYTES};
use crate::pool::{BufferPool, PooledBuf};
use crate::crc32c::{crc32c, Crc32c};
use crate::descriptor::TensorDescriptor;
use crate::error::{bail, err, Error, ErrorKind, Result};
use crate::{MAX_DESCRIPTOR_BYTES, MAX_RANK};

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

/// Reads at most this many bytes ahead into the reader's own buffer; larger payload reads go
/// straight into the tensor's allocation.
pub const READ_AHEAD_BYTES: usize = 64 * 1024;
/// Bytes of a tensor's buffers the reader allocates before their bytes arrive; beyond this a
/// buffer's allocation starts at [`GROW_MIN_BYTES`] (or what is left of this budget, if more)
/// and doubles as its bytes arrive (docs/spec/stream.md §Limits), so a short input declaring a
/// huge tensor costs at most this much memory, and a real one at most twice its bytes.
pub const EAGER_RESERVE_BYTES: usize = 64 << 20;
/// Payloads up to this size are copied next to the frame header so an item is one write call.
pub const COALESCE_BYTES: usize = 64 * 1024;

/// A byte source (seed 000's `read`). Return `Ok(n)` after writing `n` initialised bytes to
/// the front of `dst` (`0` = end of input, fewer than `dst.len()` is normal); return `Err`
/// having moved no bytes.
pub trait ReadTransport {
    /// Reads up to `dst.len()` bytes.
    fn read(&mut self, dst: &mut [MaybeUninit<u8>]) -> Result<usize>;
}

/// A byte sink (seed 000's `write`). Return `Ok(n)` after taking the first `n` bytes of `src`
/// (`0` = the sink is closed); return `Err` having taken none.
pub trait WriteTransport {
    /// Writes up to `src.len()` bytes.
    fn write(&mut self, src: &[u8]) -> Result<usize>;
}

/// Reads from an in-memory slice, `chunk` bytes at most per call.
#[derive(Debug)]
pub struct SliceSource<'a> {
    bytes: &'a [u8],
    pos: usize,
    chunk: usize,
}

impl<'a> SliceSource<'a> {
    /// A source over `bytes` that moves at most `chunk` (≥ 1) bytes per call.
    pub fn new(bytes: &'a [u8], chunk: usize) -> Self {
        SliceSource { bytes, pos: 0, chunk: chunk.max(1) }
    }
}

impl ReadTransport for SliceSource<'_> {
    fn read(&mut self, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        let n = dst.len().min(self.chunk).min(self.bytes.len() - self.pos);
        dst[..n].write_copy_of_slice(&self.bytes[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl WriteTransport for Vec<u8> {
    fn write(&mut self, src: &[u8]) -> Result<usize> {
        self.extend_from_slice(src);
        Ok(src.len())
    }
}

/// Limits a reader enforces before allocating anything (docs/spec/stream.md §Limits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReaderOptions {
    /// Largest accepted encoded descriptor, in bytes (default 1 MiB, at most 16 MiB).
    pub max_descriptor_bytes: u64,
    /// Largest accepted rank (default and maximum [`MAX_RANK`]).
    pub max_rank: u32,
    /// Largest accepted sum of one tensor's buffer sizes, in bytes (default 64 GiB). Memory
    /// follows the bytes received, not the declared size: the first
    /// [`EAGER_RESERVE_BYTES`] of a tensor's buffers are allocated (not touched) up front, the
    /// rest grows by doubling as bytes arrive.
    pub max_tensor_bytes: u64,
    /// Fail with `Corrupt` on a stream written without payload checksums.
    pub require_payload_checksums: bool,
    /// Cap in bytes of the reader's own [`BufferPool`] (default 0: no pool, every buffer is a
    /// new allocation freed when its tensor is dropped). With a cap, a dropped tensor's
    /// allocations are kept (at most this many bytes of them) and reused for later tensors;
    /// see [`StreamReader::set_buffer_pool`] and docs/spec/stream.md §Buffer pool.
    pub pool_bytes: u64,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            max_descriptor_bytes: 1 << 20,
            max_rank: MAX_RANK as u32,
            max_tensor_bytes: 64 << 30,
            require_payload_checksums: false,
            pool_bytes: 0,
        }
    }
}

/// Writer settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WriterOptions {
    /// Follow every payload with its CRC32C (costs one pass over the bytes).
    pub payload_checksums: bool,
}

/// A tensor read from a stream: its descriptor and one owned, aligned allocation per buffer.
#[derive(Debug)]
pub struct ReadTensor {
    /// The validated descriptor.
    pub descriptor: TensorDescriptor,
    /// Buffers in buffer-table order, each aligned to its handle's alignment and full. Each
    /// dereferences to [`AlignedBuf`]; dropping one returns its allocation to the reader's
    /// pool, if the reader has one and it still exists.
    pub buffers: Vec<PooledBuf>,
}

enum State {
    StreamHeader { buf: [u8; STREAM_HEADER_BYTES], got: usize },
    FrameHeader { buf: [u8; FRAME_HEADER_BYTES], got: usize },
    /// `buf` grows as bytes arrive (never ahead of them by more than the read-ahead), so a
    /// declared length costs memory only once the input backs it up.
    Descriptor { buf: Vec<u8>, want: usize, crc: u32 },
    Payload { desc: TensorDescriptor, bufs: Vec<PooledBuf>, index: usize },
    PayloadCrc { desc: TensorDescriptor, bufs: Vec<PooledBuf>, index: usize, buf: [u8; 4], got: usize },
    Ended,
    Failed(Error),
}

/// Reads a stream item by item. One handle, one thread at a time.
pub struct StreamReader<T: ReadTransport> {
    transport: T,
    opts: ReaderOptions,
    state: State,
    payload_crc: bool,
    ahead: AlignedBuf,
    ahead_pos: usize,
    pool: Option<BufferPool>,
}

impl<T: ReadTransport> StreamReader<T> {
    /// A reader over `transport`. Errors: `InvalidArgument` for options above the format
    /// limits (descriptor bytes over 16 MiB, rank over [`MAX_RANK`]).
    pub fn new(transport: T, opts: ReaderOptions) -> Result<Self> {
        if opts.max_descriptor_bytes > MAX_DESCRIPTOR_BYTES as u64 {
            bail!(InvalidArgument, "max_descriptor_bytes {} exceeds the format maximum {MAX_DESCRIPTOR_BYTES}", opts.max_descriptor_bytes);
        }
        if opts.max_rank as usize > MAX_RANK {
            bail!(InvalidArgument, "max_rank {} exceeds the format maximum {MAX_RANK}", opts.max_rank);
        }
        Ok(StreamReader {
            transport,
            opts,
            state: State::StreamHeader { buf: [0; STREAM_HEADER_BYTES], got: 0 },
            payload_crc: false,
            ahead: AlignedBuf::new(0, crate::MIN_BUFFER_ALIGNMENT)?,
            ahead_pos: 0,
            pool: (opts.pool_bytes > 0).then(|| BufferPool::new(opts.pool_bytes)),
        })
    }

    /// Sets the pool the reader takes buffer allocations from (`None`: a new allocation per
    /// buffer). The pool may be shared with other readers. Tensors already read keep
    /// returning their allocations to the pool they came from, if it still exists. Takes
    /// effect at the next tensor whose buffers are not yet allocated.
    pub fn set_buffer_pool(&mut self, pool: Option<BufferPool>) {
        self.pool = pool;
    }

    /// Sets the cap of the reader's pool in bytes: 0 drops the pool (its free allocations are
    /// freed now, as soon as no other reader shares it); otherwise the current pool's cap is
    /// changed, or a new pool is made.
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

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Reads the next tensor. `Ok(None)` is the end-of-stream marker (and every call after it).
    ///
    /// Errors: `Transport` (resumable: call again), `Truncated` (input ended inside an item or
    /// before the end marker), `Corrupt`, `InvalidMagic`, `VersionMismatch`, `LimitExceeded`,
    /// descriptor validation errors, `OutOfMemory`. Every error but `Transport` is sticky.
    pub fn next_tensor(&mut self) -> Result<Option<ReadTensor>> {
        let state = std::mem::replace(&mut self.state, State::Ended);
        let (state, out) = self.step(state);
        self.state = match &out {
            Err(e) if e.kind() != ErrorKind::Transport => State::Failed(e.clone()),
            _ => state,
        };
        out
    }

    fn step(&mut self, mut state: State) -> (State, Result<Option<ReadTensor>>) {
        loop {
            state = match state {
                State::Ended => return (State::Ended, Ok(None)),
                State::Failed(e) => return (State::Failed(e.clone()), Err(e)),
                State::StreamHeader { mut buf, mut got } => {
                    if let Err(e) = self.fill(&mut buf, &mut got) {
                        let e = match (e.kind(), got) {
                            (ErrorKind::Truncated, 0) => err!(Truncated, "input is empty: it ended before the stream header"),
                            (ErrorKind::Truncated, _) => err!(Truncated, "input ended inside the {STREAM_HEADER_BYTES}-byte stream header after {got} bytes"),
                            _ => e,
                        };
                        return (State::StreamHeader { buf, got }, Err(e));
                    }
                    if let Err(e) = self.check_stream_header(&buf) {
                        return (State::StreamHeader { buf, got }, Err(e));
                    }
                    State::FrameHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 }
                }
                State::FrameHeader { mut buf, mut got } => {
                    let at_boundary = got == 0;
                    if let Err(e) = self.fill(&mut buf, &mut got) {
                        let e = if e.kind() == ErrorKind::Truncated && at_boundary && got == 0 {
                            err!(Truncated, "input ended before the end-of-stream marker")
                        } else {
                            e
                        };
                        return (State::FrameHeader { buf, got }, Err(e));
                    }
                    match self.check_frame_header(&buf) {
                        Err(e) => return (State::FrameHeader { buf, got }, Err(e)),
                        Ok(None) => return (State::Ended, Ok(None)),
                        Ok(Some((len, crc))) => {
                            State::Descriptor { buf: Vec::new(), want: len, crc }
                        }
                    }
                }
                State::Descriptor { mut buf, want, crc } => {
                    if let Err(e) = self.fill_vec(&mut buf, want) {
                        return (State::Descriptor { buf, want, crc }, Err(e));
                    }
                    match self.start_payloads(&buf, crc) {
                        Err(e) => return (State::Descriptor { buf, want, crc }, Err(e)),
                        Ok((desc, bufs)) => State::Payload { desc, bufs, index: 0 },
                    }
                }
                State::Payload { desc, mut bufs, index } => {
                    if index == bufs.len() {
                        return (
                            State::FrameHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 },
                            Ok(Some(ReadTensor { descriptor: desc, buffers: bufs })),
                        );
                    }
                    if let Err(e) = self.fill_buf(&mut bufs[index]) {
                        return (State::Payload { desc, bufs, index }, Err(e));
                    }
                    if self.payload_crc {
                        State::PayloadCrc { desc, bufs, index, buf: [0; 4], got: 0 }
                    } else {
                        State::Payload { desc, bufs, index: index + 1 }
                    }
                }
                State::PayloadCrc { desc, bufs, index, mut buf, mut got } => {
                    if let Err(e) = self.fill(&mut buf, &mut got) {
                        return (State::PayloadCrc { desc, bufs, index, buf, got }, Err(e));
                    }
                    let want = u32::from_le_bytes(buf);
                    let have = crc32c(bufs[index].as_slice());
                    if want != have {
                        let e = err!(Corrupt, "payload {index} checksum mismatch (stored {want:#010x}, computed {have:#010x})");
                        return (State::PayloadCrc { desc, bufs, index, buf, got }, Err(e));
                    }
                    State::Payload { desc, bufs, index: index + 1 }
                }
            }
        }
    }

    fn check_stream_header(&mut self, b: &[u8; STREAM_HEADER_BYTES]) -> Result<()> {
        if b[0..8] != STREAM_MAGIC {
            bail!(InvalidMagic, "not a Hurray stream (bad magic)");
        }
        let stored = u32::from_le_bytes(b[12..16].try_into().unwrap());
        if crc32c(&b[0..12]) != stored {
            bail!(Corrupt, "stream header checksum mismatch");
        }
        let version = u16::from_le_bytes([b[8], b[9]]);
        if version != STREAM_VERSION {
            bail!(VersionMismatch, "stream version {version} (this build reads {STREAM_VERSION})");
        }
        let flags = u16::from_le_bytes([b[10], b[11]]);
        if flags & !FLAG_PAYLOAD_CRC != 0 {
            bail!(Unsupported, "unknown stream flags {flags:#06x}");
        }
        self.payload_crc = flags & FLAG_PAYLOAD_CRC != 0;
        if self.opts.require_payload_checksums && !self.payload_crc {
            bail!(Corrupt, "stream carries no payload checksums and the reader requires them");
        }
        Ok(())
    }

    /// `Ok(None)` for the end marker, else (descriptor length, descriptor CRC).
    fn check_frame_header(&self, b: &[u8; FRAME_HEADER_BYTES]) -> Result<Option<(usize, u32)>> {
        let stored = u32::from_le_bytes(b[20..24].try_into().unwrap());
        if crc32c(&b[0..20]) != stored {
            bail!(Corrupt, "frame header checksum mismatch");
        }
        if b[4..8] != [0; 4] {
            bail!(Unsupported, "unknown frame flags");
        }
        let len = u64::from_le_bytes(b[8..16].try_into().unwrap());
        let dcrc = u32::from_le_bytes(b[16..20].try_into().unwrap());
        if b[0..4] == FRAME_END {
            if len != 0 || dcrc != 0 {
                bail!(Corrupt, "end-of-stream marker with a body");
            }
            return Ok(None);
        }
        if b[0..4] != FRAME_TENSOR {
            bail!(Corrupt, "unknown frame kind {:?}", &b[0..4]);
        }
        if len > self.opts.max_descriptor_bytes {
            bail!(LimitExceeded, "descriptor of {len} bytes exceeds the limit of {}", self.opts.max_descriptor_bytes);
        }
        Ok(Some((len as usize, dcrc)))
    }

    fn start_payloads(&self, bytes: &[u8], crc: u32) -> Result<(TensorDescriptor, Vec<PooledBuf>)> {
        if crc32c(bytes) != crc {
            bail!(Corrupt, "descriptor checksum mismatch");
        }
        let desc = TensorDescriptor::decode(bytes)?;
        if desc.shape().rank() > self.opts.max_rank as usize {
            bail!(LimitExceeded, "rank {} exceeds the limit of {}", desc.shape().rank(), self.opts.max_rank);
        }
        let total = desc.total_buffer_bytes();
        if total > self.opts.max_tensor_bytes {
            bail!(LimitExceeded, "tensor of {total} bytes exceeds the limit of {}", self.opts.max_tensor_bytes);
        }
        let mut eager = EAGER_RESERVE_BYTES;
        let bufs = desc
            .buffers()
            .iter()
            .map(|h| {
                let initial = eager.max(GROW_MIN_BYTES);
                eager = eager.saturating_sub(h.byte_size().min(usize::MAX as u64) as usize);
                match &self.pool {
                    Some(p) => p.take_growable(h.byte_size(), h.alignment(), initial),
                    None => AlignedBuf::growable(h.byte_size(), h.alignment(), initial).map(PooledBuf::unpooled),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((desc, bufs))
    }

    /// Fills `buf[got..]` through the read-ahead buffer, keeping progress in `got`.
    fn fill(&mut self, buf: &mut [u8], got: &mut usize) -> Result<()> {
        while *got < buf.len() {
            self.refill_if_empty()?;
            let avail = &self.ahead.as_slice()[self.ahead_pos..];
            let n = avail.len().min(buf.len() - *got);
            buf[*got..*got + n].copy_from_slice(&avail[..n]);
            self.ahead_pos += n;
            *got += n;
        }
        Ok(())
    }

    /// Appends to `buf` until it holds `want` bytes; capacity grows with the bytes received.
    fn fill_vec(&mut self, buf: &mut Vec<u8>, want: usize) -> Result<()> {
        while buf.len() < want {
            self.refill_if_empty()?;
            let avail = &self.ahead.as_slice()[self.ahead_pos..];
            let n = avail.len().min(want - buf.len());
            buf.extend_from_slice(&avail[..n]);
            self.ahead_pos += n;
        }
        Ok(())
    }

    /// Fills a payload allocation: first from read-ahead bytes, then, for large remainders,
    /// straight from the transport into the allocation (no intermediate copy).
    fn fill_buf(&mut self, b: &mut AlignedBuf) -> Result<()> {
        while !b.is_full() {
            b.grow_if_full()?;
            let buffered = self.ahead.filled() - self.ahead_pos;
            if buffered == 0 && b.len() - b.filled() >= READ_AHEAD_BYTES {
                let dst = b.spare_mut();
                let len = dst.len();
                let n = self.transport.read(dst).map_err(transport_err)?;
                check_count(n, len)?;
                b.advance(n);
                continue;
            }
            self.refill_if_empty()?;
            let avail = &self.ahead.as_slice()[self.ahead_pos..];
            let spare = b.spare_mut();
            let n = avail.len().min(spare.len());
            spare[..n].write_copy_of_slice(&avail[..n]);
            b.advance(n);
            self.ahead_pos += n;
        }
        Ok(())
    }

    fn refill_if_empty(&mut self) -> Result<()> {
        if self.ahead_pos < self.ahead.filled() {
            return Ok(());
        }
        if self.ahead.len() == 0 {
            self.ahead = AlignedBuf::new(READ_AHEAD_BYTES as u64, crate::MIN_BUFFER_ALIGNMENT)?;
        }
        self.ahead.clear();
        self.ahead_pos = 0;
        let n = self.transport.read(self.ahead.spare_mut()).map_err(transport_err)?;
        check_count(n, READ_AHEAD_BYTES)?;
        self.ahead.advance(n);
        Ok(())
    }
}

fn check_count(n: usize, asked: usize) -> Result<()> {
    if n > asked {
        bail!(Transport, "transport reported {n} bytes read, more than the {asked} asked for");
    }
    if n == 0 {
        bail!(Truncated, "input ended in the middle of an item");
    }
    Ok(())
}

fn transport_err(e: Error) -> Error {
    if e.kind() == ErrorKind::Transport {
        e
    } else {
        Error::new(ErrorKind::Transport, e.message().to_string())
    }
}

/// Writes a stream. Nothing is retained after a call returns. One handle, one thread at a time.
pub struct StreamWriter<T: WriteTransport> {
    transport: T,
    opts: WriterOptions,
    header_sent: bool,
    poisoned: bool,
    finished: bool,
    staging: Vec<u8>,
}

enum Seg {
    Staged(usize, usize),
    Payload(usize),
}

impl<T: WriteTransport> StreamWriter<T> {
    /// A writer over `transport`. Nothing is written until the first item (or `finish`).
    pub fn new(transport: T, opts: WriterOptions) -> Self {
        StreamWriter { transport, opts, header_sent: false, poisoned: false, finished: false, staging: Vec::new() }
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Consumes the writer, returning the transport (the end marker is not written).
    pub fn into_transport(self) -> T {
        self.transport
    }

    /// True once a write failed after putting part of an item on the wire.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// True once `finish` succeeded.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Writes one tensor: `payloads[i]` is buffer `i` of the descriptor's buffer table and
    /// must be exactly its `byte_size` long.
    ///
    /// Errors: `InvalidArgument` (payload count differs from the buffer count, or a payload is
    /// longer than declared), `BufferTooSmall` (shorter), `InvalidState` (after finish),
    /// `Poisoned`, `Transport` / `SinkClosed` (the writer is poisoned if any byte of the item
    /// had been written; otherwise the call can be retried).
    pub fn write_tensor(&mut self, desc: &TensorDescriptor, payloads: &[&[u8]]) -> Result<()> {
        let encoded = desc.encode()?;
        self.write_encoded(desc, &encoded, payloads)
    }

    /// As [`write_tensor`](Self::write_tensor), with `encoded == desc.encode()` precomputed.
    pub fn write_encoded(&mut self, desc: &TensorDescriptor, encoded: &[u8], payloads: &[&[u8]]) -> Result<()> {
        self.check_open()?;
        let table = desc.buffers();
        if payloads.len() != table.len() {
            bail!(InvalidArgument, "{} payloads for a descriptor with {} buffers", payloads.len(), table.len());
        }
        for (i, (p, h)) in payloads.iter().zip(table).enumerate() {
            let want = h.byte_size();
            if (p.len() as u64) < want {
                bail!(BufferTooSmall, "payload {i} has {} bytes, the descriptor declares {want}", p.len());
            }
            if p.len() as u64 > want {
                bail!(InvalidArgument, "payload {i} has {} bytes, the descriptor declares {want}", p.len());
            }
        }
        self.staging.clear();
        if !self.header_sent {
            self.push_stream_header();
        }
        push_frame_header(&mut self.staging, FRAME_TENSOR, encoded.len() as u64, crc32c(encoded));
        self.staging.extend_from_slice(encoded);
        let mut segs = Vec::with_capacity(2 * payloads.len() + 1);
        let mut start = 0;
        for (i, p) in payloads.iter().enumerate() {
            if p.len() <= COALESCE_BYTES && self.staging.len() + p.len() <= 2 * COALESCE_BYTES {
                self.staging.extend_from_slice(p);
            } else {
                segs.push(Seg::Staged(start, self.staging.len()));
                segs.push(Seg::Payload(i));
                start = self.staging.len();
            }
            if self.opts.payload_checksums {
                self.staging.extend_from_slice(&crc32c(p).to_le_bytes());
            }
        }
        segs.push(Seg::Staged(start, self.staging.len()));
        let mut sent = 0u64;
        for seg in &segs {
            let bytes: &[u8] = match *seg {
                Seg::Staged(a, b) => &self.staging[a..b],
                Seg::Payload(i) => payloads[i],
            };
            if let Err(e) = write_all(&mut self.transport, bytes, &mut sent) {
                if sent > 0 {
                    self.poisoned = true;
                    return Err(Error::new(e.kind(), format!("{} after {sent} bytes of the item; the writer is poisoned", e.message())));
                }
                return Err(e);
            }
        }
        self.header_sent = true;
        Ok(())
    }

    /// Writes the end-of-stream marker (and the stream header if nothing was written yet).
    /// Idempotent once it succeeded. Errors as for `write_tensor`.
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.check_open()?;
        self.staging.clear();
        if !self.header_sent {
            self.push_stream_header();
        }
        push_frame_header(&mut self.staging, FRAME_END, 0, 0);
        let mut sent = 0u64;
        if let Err(e) = write_all(&mut self.transport, &self.staging, &mut sent) {
            if sent > 0 {
                self.poisoned = true;
            }
            return Err(e);
        }
        self.header_sent = true;
        self.finished = true;
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        if self.poisoned {
            bail!(Poisoned, "an earlier write failed mid-item; the stream on the wire is truncated");
        }
        if self.finished {
            bail!(InvalidState, "the stream is finished");
        }
        Ok(())
    }

    fn push_stream_header(&mut self) {
        let flags = if self.opts.payload_checksums { FLAG_PAYLOAD_CRC } else { 0 };
        let mut h = [0u8; STREAM_HEADER_BYTES];
        h[0..8].copy_from_slice(&STREAM_MAGIC);
        h[8..10].copy_from_slice(&STREAM_VERSION.to_le_bytes());
        h[10..12].copy_from_slice(&flags.to_le_bytes());
        let c = crc32c(&h[0..12]);
        h[12..16].copy_from_slice(&c.to_le_bytes());
        self.staging.extend_from_slice(&h);
    }
}

fn push_frame_header(out: &mut Vec<u8>, kind: [u8; 4], len: u64, dcrc: u32) {
    let mut h = [0u8; FRAME_HEADER_BYTES];
    h[0..4].copy_from_slice(&kind);
    h[8..16].copy_from_slice(&len.to_le_bytes());
    h[16..20].copy_from_slice(&dcrc.to_le_bytes());
    let c = Crc32c::new().update(&h[0..20]).finish();
    h[20..24].copy_from_slice(&c.to_le_bytes());
    out.extend_from_slice(&h);
}

fn write_all<T: WriteTransport>(t: &mut T, mut bytes: &[u8], sent: &mut u64) -> Result<()> {
    while !bytes.is_empty() {
        let n = match t.write(bytes) {
            Ok(n) => n,
            Err(e) => return Err(transport_err(e)),
        };
        if n == 0 {
            bail!(SinkClosed, "the sink accepted 0 bytes: it is closed");
        }
        if n > bytes.len() {
            bail!(Transport, "transport reported {n} bytes written, more than the {} offered", bytes.len());
        }
        bytes = &bytes[n..];
        *sent += n as u64;
    }
    Ok(())
}
