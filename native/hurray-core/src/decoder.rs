//! The stream reader's state machine without a transport: a push-fed ("sans-I/O") decoder
//! (docs/spec/stream.md §Decoding without a transport).
//!
//! The caller asks [`StreamDecoder::poll`] for the next item. When the decoder needs bytes it
//! answers [`Decoded::NeedInput`]; the caller then writes up to
//! [`input_buffer`](StreamDecoder::input_buffer)`().len()` bytes into the front of that buffer,
//! from wherever it likes and however long it takes, and reports the count with
//! [`commit`](StreamDecoder::commit) (`0` = the input ended). The buffer is either the decoder's
//! 64 KiB read-ahead or, for the rest of a large payload, the tensor's own aligned allocation,
//! so payload bytes still land in place with no intermediate copy.
//!
//! Because the decoder never calls out, a caller on a runtime with cheap blocking (a Java
//! virtual thread, an async task) does its blocking I/O outside any native frame. The callback
//! reader [`StreamReader`](crate::StreamReader) is this decoder plus a transport loop, so both
//! share one implementation of the format.

use std::mem::MaybeUninit;

use crate::buffer::{AlignedBuf, GROW_MIN_BYTES};
use crate::crc32c::crc32c;
use crate::descriptor::{DecodeTemplate, TensorDescriptor};
use crate::error::{bail, err, Error, Result};
use crate::pool::{BufferPool, PooledBuf};
use crate::tensor::ReadTensor;
use crate::wire::{
    FLAG_METADATA, FLAG_PAYLOAD_CRC, FRAME_END, FRAME_HEADER_BYTES, FRAME_METADATA, FRAME_TENSOR, MAX_DESCRIPTOR_BYTES,
    MAX_RANK, STREAM_HEADER_BYTES, STREAM_MAGIC, STREAM_VERSION,
};

/// Reads at most this many bytes ahead into the reader's own buffer; larger payload reads go
/// straight into the tensor's allocation.
pub const READ_AHEAD_BYTES: usize = 64 * 1024;
/// Bytes of a tensor's buffers the reader allocates before their bytes arrive; beyond this a
/// buffer's allocation starts at [`GROW_MIN_BYTES`] (or what is left of this budget, if more)
/// and doubles as its bytes arrive (docs/spec/stream.md §Limits), so a short input declaring a
/// huge tensor costs at most this much memory, and a real one at most twice its bytes.
pub const EAGER_RESERVE_BYTES: usize = 64 << 20;

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
    /// see [`StreamReader::set_buffer_pool`](crate::StreamReader::set_buffer_pool) and docs/spec/stream.md §Buffer pool.
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

/// What [`StreamDecoder::poll`] produced.
// The tensor is moved out once per poll; boxing it would add an allocation per tensor.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Decoded {
    /// A complete tensor, owned by the caller.
    Tensor(ReadTensor),
    /// The end-of-stream marker (returned again on every later poll).
    End,
    /// More input is needed: fill [`StreamDecoder::input_buffer`] and call
    /// [`StreamDecoder::commit`].
    NeedInput,
}

enum State {
    StreamHeader {
        buf: [u8; STREAM_HEADER_BYTES],
        got: usize,
    },
    FrameHeader {
        buf: [u8; FRAME_HEADER_BYTES],
        got: usize,
    },
    /// The stream-metadata frame's header and body (only with `FLAG_METADATA`).
    MetadataHeader {
        buf: [u8; FRAME_HEADER_BYTES],
        got: usize,
    },
    MetadataBody {
        buf: Vec<u8>,
        want: usize,
        crc: u32,
    },
    /// `buf` grows as bytes arrive, so a declared length costs memory only once the input
    /// backs it up.
    Descriptor {
        buf: Vec<u8>,
        want: usize,
        crc: u32,
    },
    /// Filling payload `index` of the item in `StreamDecoder::item_desc`/`item_bufs` (kept
    /// outside the state so that state transitions move a few bytes, not the descriptor).
    Payload {
        index: usize,
    },
    PayloadCrc {
        index: usize,
        buf: [u8; 4],
        got: usize,
    },
    Ended,
    Failed(Error),
}

/// Where the bytes of the last [`StreamDecoder::input_buffer`] call go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    ReadAhead,
    Payload,
}

/// Decodes a stream from bytes the caller pushes in. One handle, one thread at a time (it is
/// `Send`: it may move between threads between calls).
pub struct StreamDecoder {
    opts: ReaderOptions,
    state: State,
    payload_crc: bool,
    ahead: AlignedBuf,
    ahead_pos: usize,
    pool: Option<BufferPool>,
    input_ended: bool,
    target: Target,
    has_metadata: bool,
    /// The stream's metadata once the stream header (and metadata frame) were decoded.
    metadata: Option<Vec<(String, Vec<u8>)>>,
    /// `poll` stops (answering `NeedInput`) once the header is decoded; see `poll_header`.
    stop_at_header: bool,
    /// The last accepted descriptor's bytes and CRC (see `last_descriptor_bytes`), and its
    /// model without the name: a frame whose descriptor differs from it only in the name and
    /// metadata (a stream of same-shaped tensors, named or not) reads just those and shares
    /// the rest of the model (`DecodeTemplate`), instead of decoding and allocating it again.
    last: Option<LastDescriptor>,
    /// The descriptor and buffers of the tensor being read (`State::Payload*`).
    item_desc: Option<TensorDescriptor>,
    item_bufs: Vec<PooledBuf>,
    /// Capacity reused for the next frame's descriptor bytes (no allocation per frame).
    spare_bytes: Vec<u8>,
    /// Set for [`poll_standalone`](Self::poll_standalone): stop before a composite's tensor.
    stop_before_composite: bool,
    /// Set when a poll stopped there.
    stopped: bool,
    /// Room of the read-ahead region the last [`input_buffer`](StreamDecoder::input_buffer)
    /// offered (a commit may not pass it).
    ahead_offer: usize,
    /// Room of the read-ahead region [`input_after`](StreamDecoder::input_after) offered after
    /// the payload region (0: none).
    after_offer: usize,
    /// Some bytes of the tensor being read were written in place (a direct payload region).
    direct_item: bool,
    /// The last tensor's payload arrived partly in place, or it had a buffer of at least
    /// [`READ_AHEAD_BYTES`]. Then (and after this tensor's own in-place payload, before its
    /// checksum, and while a buffer that large arrives through the read-ahead) the read-ahead
    /// offered before the next payload ends where that payload starts if its descriptor is as
    /// long as the last one (docs/spec/stream.md §Read-ahead).
    large_run: bool,
}

struct LastDescriptor {
    bytes: Vec<u8>,
    crc: u32,
    template: DecodeTemplate,
}

/// Descriptor byte buffers above this capacity are not kept for reuse.
const KEEP_DESCRIPTOR_CAPACITY: usize = 64 << 10;

/// Outcome of trying to complete a piece from buffered bytes.
enum Fill {
    Done,
    NeedInput,
}

/// The option checks shared by [`StreamDecoder::new`] and [`StreamDecoder::set_options`].
fn check_options(opts: &ReaderOptions) -> Result<()> {
    if opts.max_descriptor_bytes > MAX_DESCRIPTOR_BYTES as u64 {
        bail!(
            InvalidArgument,
            "max_descriptor_bytes {} exceeds the format maximum {MAX_DESCRIPTOR_BYTES}",
            opts.max_descriptor_bytes
        );
    }
    if opts.max_rank as usize > MAX_RANK {
        bail!(InvalidArgument, "max_rank {} exceeds the format maximum {MAX_RANK}", opts.max_rank);
    }
    Ok(())
}

impl StreamDecoder {
    /// A decoder with the given limits. Errors: `InvalidArgument` for options above the format
    /// limits (descriptor bytes over 16 MiB, rank over [`MAX_RANK`]).
    pub fn new(opts: ReaderOptions) -> Result<Self> {
        check_options(&opts)?;
        Ok(StreamDecoder {
            opts,
            state: State::StreamHeader { buf: [0; STREAM_HEADER_BYTES], got: 0 },
            payload_crc: false,
            ahead: AlignedBuf::new(0, crate::wire::MIN_BUFFER_ALIGNMENT)?,
            ahead_pos: 0,
            pool: (opts.pool_bytes > 0).then(|| BufferPool::new(opts.pool_bytes)),
            input_ended: false,
            target: Target::ReadAhead,
            has_metadata: false,
            metadata: None,
            stop_at_header: false,
            last: None,
            item_desc: None,
            item_bufs: Vec::new(),
            spare_bytes: Vec::new(),
            stop_before_composite: false,
            stopped: false,
            ahead_offer: 0,
            after_offer: 0,
            direct_item: false,
            large_run: false,
        })
    }

    /// Makes the decoder ready for a new stream from its first byte, as if new with the same
    /// options: buffered input, a partly read tensor, the stream metadata and a failure are
    /// dropped. The read-ahead allocation and the buffer pool's cap stay (the pool starts empty
    /// again), so a caller decoding many short streams (one message each) allocates them once.
    /// Tensors already returned are independent of the decoder and stay valid.
    pub fn reset(&mut self) {
        self.state = State::StreamHeader { buf: [0; STREAM_HEADER_BYTES], got: 0 };
        self.payload_crc = false;
        self.ahead.clear();
        self.ahead_pos = 0;
        self.input_ended = false;
        self.target = Target::ReadAhead;
        self.has_metadata = false;
        self.metadata = None;
        self.stop_at_header = false;
        // `last` is keyed by the frame's bytes and CRC, so it stays valid across streams; a
        // large one is dropped, so that an idle decoder does not keep a big descriptor.
        if self.last.as_ref().is_some_and(|l| l.bytes.capacity() > KEEP_DESCRIPTOR_CAPACITY) {
            self.last = None;
        }
        self.item_desc = None;
        self.item_bufs = Vec::new();
        self.ahead_offer = 0;
        self.after_offer = 0;
        self.direct_item = false;
        self.large_run = false;
        // A fresh pool of the same cap: buffers of tensors still open then go back to no pool
        // (they are freed on close), so an idle decoder holds no payload memory.
        self.pool = self.pool.as_ref().map(|p| BufferPool::new(p.max_bytes()));
    }

    /// Replaces the decoder's limits (`max_descriptor_bytes`, `max_rank`, `max_tensor_bytes`,
    /// `require_payload_checksums`) while it has taken no input: just made, or just
    /// [`reset`](Self::reset) and fed nothing since. The buffer pool is not touched
    /// (`opts.pool_bytes` is ignored; see [`set_buffer_pool_bytes`](Self::set_buffer_pool_bytes)).
    /// A reset decoder whose next stream needs other limits is then as good as a new one.
    ///
    /// Errors, leaving the decoder unchanged: `InvalidArgument` as for [`new`](Self::new);
    /// `InvalidState` once any input was committed (or the end of input reported) since the
    /// decoder was made or reset.
    pub fn set_options(&mut self, opts: ReaderOptions) -> Result<()> {
        check_options(&opts)?;
        if !self.is_initial() {
            bail!(InvalidState, "the decoder has taken input; options can be set only when it is new or just reset");
        }
        // The kept descriptor template does not depend on the limits: every frame's descriptor
        // is checked against the current ones.
        self.opts = ReaderOptions { pool_bytes: self.opts.pool_bytes, ..opts };
        Ok(())
    }

    /// The decoder's limits (as given to [`new`](Self::new) or [`set_options`](Self::set_options)).
    pub fn options(&self) -> &ReaderOptions {
        &self.opts
    }

    /// True while nothing has been committed since the decoder was made or reset.
    fn is_initial(&self) -> bool {
        matches!(self.state, State::StreamHeader { got: 0, .. })
            && self.ahead.filled() == 0
            && !self.input_ended
            && self.metadata.is_none()
    }

    /// Sets the pool buffer allocations come from (`None`: a new allocation per buffer); see
    /// [`StreamReader::set_buffer_pool`](crate::StreamReader::set_buffer_pool).
    pub fn set_buffer_pool(&mut self, pool: Option<BufferPool>) {
        self.pool = pool;
    }

    /// Sets the pool's cap in bytes (0 drops the pool); see
    /// [`StreamReader::set_buffer_pool_bytes`](crate::StreamReader::set_buffer_pool_bytes).
    pub fn set_buffer_pool_bytes(&mut self, max_bytes: u64) {
        match (&self.pool, max_bytes) {
            (_, 0) => self.pool = None,
            (Some(p), m) => p.set_max_bytes(m),
            (None, m) => self.pool = Some(BufferPool::new(m)),
        }
    }

    /// The decoder's pool, if it has one.
    pub fn buffer_pool(&self) -> Option<&BufferPool> {
        self.pool.as_ref()
    }

    /// Bytes received but not yet decoded (at most 64 KiB: the read-ahead).
    pub fn buffered(&self) -> usize {
        self.ahead.filled() - self.ahead_pos
    }

    /// Decodes as far as the buffered bytes allow.
    ///
    /// Returns a tensor, the end marker (`End`, then `End` forever), or `NeedInput`. Errors:
    /// `Truncated` (the input ended inside an item or before the end marker), `Corrupt`,
    /// `InvalidMagic`, `VersionMismatch`, `Unsupported`, `LimitExceeded`, descriptor validation
    /// errors, `OutOfMemory`. Every error is sticky: later polls return it again.
    pub fn poll(&mut self) -> Result<Decoded> {
        let state = std::mem::replace(&mut self.state, State::Ended);
        let (state, out) = self.step(state);
        self.state = match &out {
            Err(e) => {
                // A failed decoder never hands the partly read tensor out: free it now.
                self.item_desc = None;
                self.item_bufs = Vec::new();
                State::Failed(e.clone())
            }
            Ok(_) => state,
        };
        out
    }

    /// As [`poll`](Self::poll), but `Ok(None)` instead of a tensor that belongs to a composite
    /// (its head or a member), once its descriptor is read and before its payloads are: a
    /// later `poll` returns that tensor as usual. A caller that decodes many standalone tensors
    /// at once uses it to leave composites to the assembled view.
    pub fn poll_standalone(&mut self) -> Result<Option<Decoded>> {
        self.stop_before_composite = true;
        let r = self.poll();
        self.stop_before_composite = false;
        if std::mem::take(&mut self.stopped) {
            return Ok(None);
        }
        r.map(Some)
    }

    /// Where the next input bytes go, after a `NeedInput`: write up to `len()` bytes to the
    /// front and report the count with [`commit`](Self::commit). Inside a payload whose
    /// remaining part is at least the read-ahead size, this is the tensor's own allocation;
    /// otherwise the read-ahead buffer: all of it, or, after a tensor whose payload arrived in
    /// place, as much as reaches the next payload's start ([`Self::to_next_payload`]), so that
    /// the next large payload arrives in place whole. The slice is empty in a state that needs
    /// no input (the stream ended, the decoder failed, or unread bytes are buffered).
    pub fn input_buffer(&mut self) -> Result<&mut [MaybeUninit<u8>]> {
        self.after_offer = 0;
        let buffered = self.buffered();
        let direct = buffered == 0
            && matches!(&self.state, State::Payload { index }
                if self.item_bufs.get(*index).is_some_and(|b| b.len() - b.filled() >= READ_AHEAD_BYTES));
        if direct {
            self.target = Target::Payload;
            let State::Payload { index } = &self.state else {
                return Ok(&mut []);
            };
            let b = &mut self.item_bufs[*index];
            b.grow_if_full()?;
            self.direct_item = true;
            return Ok(b.spare_mut());
        }
        self.target = Target::ReadAhead;
        self.ahead_offer = 0;
        if matches!(self.state, State::Ended | State::Failed(_)) || buffered > 0 {
            return Ok(&mut []);
        }
        if self.ahead.is_empty() {
            self.ahead = AlignedBuf::new(READ_AHEAD_BYTES as u64, crate::wire::MIN_BUFFER_ALIGNMENT)?;
        }
        self.ahead.clear();
        self.ahead_pos = 0;
        let offer = match self.to_next_payload() {
            Some(n) if self.large_run || self.direct_item || self.large_item() => n.clamp(1, READ_AHEAD_BYTES),
            _ => READ_AHEAD_BYTES,
        };
        self.ahead_offer = offer;
        Ok(&mut self.ahead.spare_mut()[..offer])
    }

    /// After [`input_buffer`](Self::input_buffer) offered the rest of a payload in place: the
    /// read-ahead region that follows it in the stream (the payload's checksum, and after the
    /// tensor's last payload the next frame header and a descriptor as long as the last one),
    /// so that a caller may fill both with one scatter read (`readv`, `recvmsg`) and commit
    /// their total. Bytes go there only once the payload region is full. Empty when the last
    /// `input_buffer` offered the read-ahead, or a payload region that ends before the payload
    /// does (a buffer still growing), or nothing follows before the next payload.
    pub fn input_after(&mut self) -> Result<&mut [MaybeUninit<u8>]> {
        self.after_offer = 0;
        let State::Payload { index } = &self.state else {
            return Ok(&mut []);
        };
        let index = *index;
        let whole = self.item_bufs.get_mut(index).is_some_and(|b| b.spare_mut().len() == b.len() - b.filled());
        if self.target != Target::Payload || !whole || self.buffered() != 0 {
            return Ok(&mut []);
        }
        let last = self.last.as_ref().map_or(0, |l| l.bytes.len());
        let crc = if self.payload_crc { 4 } else { 0 };
        let next = if index + 1 == self.item_bufs.len() { FRAME_HEADER_BYTES + last } else { 0 };
        let offer = (crc + next).min(READ_AHEAD_BYTES);
        if offer == 0 {
            return Ok(&mut []);
        }
        if self.ahead.is_empty() {
            self.ahead = AlignedBuf::new(READ_AHEAD_BYTES as u64, crate::wire::MIN_BUFFER_ALIGNMENT)?;
        }
        self.ahead.clear();
        self.ahead_pos = 0;
        self.after_offer = offer;
        Ok(&mut self.ahead.spare_mut()[..offer])
    }

    /// Whether the tensor being read has a buffer of at least [`READ_AHEAD_BYTES`].
    fn large_item(&self) -> bool {
        self.item_bufs.iter().any(|b| b.len() >= READ_AHEAD_BYTES)
    }

    /// Bytes from the decoder's position to the start of the next payload, when it is
    /// waiting for a frame header (then assuming the next descriptor is as long as the last
    /// one), a descriptor's rest or a payload checksum, or reads the rest of a payload of a
    /// [large](Self::large_item) tensor through the read-ahead (then up to the next payload of
    /// the tensor, or of the next tensor after this one's last); `None` elsewhere.
    fn to_next_payload(&self) -> Option<usize> {
        let last = self.last.as_ref().map_or(0, |l| l.bytes.len());
        match &self.state {
            State::Payload { index } if self.large_item() => {
                let rest = self.item_bufs.get(*index).map_or(0, |b| b.len() - b.filled());
                let crc = if self.payload_crc { 4 } else { 0 };
                let next = if index + 1 == self.item_bufs.len() { FRAME_HEADER_BYTES + last } else { 0 };
                Some(rest + crc + next)
            }
            State::FrameHeader { got, .. } => Some(FRAME_HEADER_BYTES - got + last),
            State::Descriptor { buf, want, .. } => Some(want - buf.len()),
            // After the last payload's checksum comes the next frame; after another one, the
            // next payload of this tensor.
            State::PayloadCrc { index, got, .. } if index + 1 == self.item_bufs.len() => {
                Some(4 - got + FRAME_HEADER_BYTES + last)
            }
            State::PayloadCrc { got, .. } => Some(4 - got),
            _ => None,
        }
    }

    /// Reports that `n` bytes were written to the front of the last
    /// [`input_buffer`](Self::input_buffer); `0` means the input ended (the next poll then
    /// fails with `Truncated` unless the end marker was already decoded). Errors:
    /// `InvalidArgument` if `n` exceeds the buffer's length (nothing is taken).
    pub fn commit(&mut self, n: usize) -> Result<()> {
        if n == 0 {
            self.input_ended = true;
            return Ok(());
        }
        match self.target {
            Target::Payload => {
                if let State::Payload { index } = &self.state {
                    if let Some(b) = self.item_bufs.get_mut(*index) {
                        // What input_buffer offered: a growing allocation may offer less than
                        // the rest of the buffer.
                        let room = b.spare_mut().len();
                        let after = self.after_offer;
                        if n > room + after {
                            bail!(InvalidArgument, "{n} bytes committed, more than the {} offered", room + after);
                        }
                        b.advance(n.min(room));
                        if n > room {
                            // The rest went to the region input_after offered.
                            self.ahead.advance(n - room);
                        }
                        self.after_offer = 0;
                        return Ok(());
                    }
                }
                bail!(InvalidState, "commit without a preceding input_buffer");
            }
            Target::ReadAhead => {
                let room = self.ahead_offer.min(self.ahead.len() - self.ahead.filled());
                if n > room {
                    bail!(InvalidArgument, "{n} bytes committed, more than the {room} offered");
                }
                self.ahead.advance(n);
                Ok(())
            }
        }
    }

    fn step(&mut self, mut state: State) -> (State, Result<Decoded>) {
        loop {
            state = match state {
                State::Ended => return (State::Ended, Ok(Decoded::End)),
                State::Failed(e) => return (State::Failed(e.clone()), Err(e)),
                State::StreamHeader { mut buf, mut got } => {
                    if let Fill::NeedInput = self.fill(&mut buf, &mut got) {
                        if !self.input_ended {
                            return (State::StreamHeader { buf, got }, Ok(Decoded::NeedInput));
                        }
                        let e = if got == 0 {
                            err!(Truncated, "input is empty: it ended before the stream header")
                        } else {
                            err!(
                                Truncated,
                                "input ended inside the {STREAM_HEADER_BYTES}-byte stream header after {got} bytes"
                            )
                        };
                        return (State::StreamHeader { buf, got }, Err(e));
                    }
                    if let Err(e) = self.check_stream_header(&buf) {
                        return (State::StreamHeader { buf, got }, Err(e));
                    }
                    if self.has_metadata {
                        State::MetadataHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 }
                    } else {
                        self.metadata = Some(Vec::new());
                        if self.stop_at_header {
                            return (
                                State::FrameHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 },
                                Ok(Decoded::NeedInput),
                            );
                        }
                        State::FrameHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 }
                    }
                }
                State::MetadataHeader { mut buf, mut got } => {
                    if let Fill::NeedInput = self.fill(&mut buf, &mut got) {
                        return self.need(State::MetadataHeader { buf, got });
                    }
                    match self.check_metadata_header(&buf) {
                        Err(e) => return (State::MetadataHeader { buf, got }, Err(e)),
                        Ok((len, crc)) => State::MetadataBody { buf: Vec::new(), want: len, crc },
                    }
                }
                State::MetadataBody { mut buf, want, crc } => {
                    if let Fill::NeedInput = self.fill_vec(&mut buf, want) {
                        return self.need(State::MetadataBody { buf, want, crc });
                    }
                    if crc32c(&buf) != crc {
                        let e = err!(Corrupt, "stream metadata checksum mismatch");
                        return (State::MetadataBody { buf, want, crc }, Err(e));
                    }
                    match crate::descriptor::decode_stream_metadata(&buf) {
                        Err(e) => return (State::MetadataBody { buf, want, crc }, Err(e)),
                        Ok(md) => self.metadata = Some(md),
                    }
                    if self.stop_at_header {
                        return (State::FrameHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 }, Ok(Decoded::NeedInput));
                    }
                    State::FrameHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 }
                }
                State::FrameHeader { mut buf, mut got } => {
                    if let Fill::NeedInput = self.fill(&mut buf, &mut got) {
                        if !self.input_ended {
                            return (State::FrameHeader { buf, got }, Ok(Decoded::NeedInput));
                        }
                        let e = if got == 0 {
                            err!(Truncated, "input ended before the end-of-stream marker")
                        } else {
                            mid_item()
                        };
                        return (State::FrameHeader { buf, got }, Err(e));
                    }
                    match self.check_frame_header(&buf) {
                        Err(e) => return (State::FrameHeader { buf, got }, Err(e)),
                        Ok(None) => return (State::Ended, Ok(Decoded::End)),
                        Ok(Some((len, crc))) => {
                            let mut buf = std::mem::take(&mut self.spare_bytes);
                            buf.clear();
                            State::Descriptor { buf, want: len, crc }
                        }
                    }
                }
                State::Descriptor { mut buf, want, crc } => {
                    if let Fill::NeedInput = self.fill_vec(&mut buf, want) {
                        return self.need(State::Descriptor { buf, want, crc });
                    }
                    match self.start_payloads(&buf, crc) {
                        Err(e) => return (State::Descriptor { buf, want, crc }, Err(e)),
                        Ok((desc, bufs, same)) => {
                            self.remember(buf, crc, &desc, same);
                            let composite = desc.composite().is_some();
                            self.item_desc = Some(desc);
                            self.item_bufs = bufs;
                            if composite && self.stop_before_composite {
                                // The next poll reads this tensor's payloads as usual.
                                self.stopped = true;
                                return (State::Payload { index: 0 }, Ok(Decoded::NeedInput));
                            }
                            State::Payload { index: 0 }
                        }
                    }
                }
                State::Payload { index } => {
                    let desc = self.item_desc.as_ref().expect("a payload state has its descriptor");
                    if index == self.item_bufs.len() {
                        // Sparse indices and page tables are checked before the tensor is
                        // handed out (a bad one is a sticky `Corrupt`, like a bad checksum).
                        if crate::layouts::has_contents_check(desc) {
                            let views: Vec<&[u8]> = self.item_bufs.iter().map(|b| b.as_slice()).collect();
                            let checked = crate::layouts::check_contents(desc, &views);
                            drop(views);
                            if let Err(e) = checked {
                                return (State::Payload { index }, Err(e));
                            }
                        }
                        self.large_run = std::mem::take(&mut self.direct_item) || self.large_item();
                        let t = ReadTensor {
                            descriptor: self.item_desc.take().expect("checked above"),
                            buffers: std::mem::take(&mut self.item_bufs),
                        };
                        return (State::FrameHeader { buf: [0; FRAME_HEADER_BYTES], got: 0 }, Ok(Decoded::Tensor(t)));
                    }
                    match fill_buf(&self.ahead, &mut self.ahead_pos, &mut self.item_bufs[index]) {
                        Err(e) => return (State::Payload { index }, Err(e)),
                        Ok(Fill::NeedInput) => return self.need(State::Payload { index }),
                        Ok(Fill::Done) => {}
                    }
                    if self.payload_crc {
                        State::PayloadCrc { index, buf: [0; 4], got: 0 }
                    } else {
                        State::Payload { index: index + 1 }
                    }
                }
                State::PayloadCrc { index, mut buf, mut got } => {
                    if let Fill::NeedInput = self.fill(&mut buf, &mut got) {
                        return self.need(State::PayloadCrc { index, buf, got });
                    }
                    let want = u32::from_le_bytes(buf);
                    let have = crc32c(self.item_bufs[index].as_slice());
                    if want != have {
                        let e = err!(
                            Corrupt,
                            "payload {index} checksum mismatch (stored {want:#010x}, computed {have:#010x})"
                        );
                        return (State::PayloadCrc { index, buf, got }, Err(e));
                    }
                    State::Payload { index: index + 1 }
                }
            }
        }
    }

    /// `NeedInput` inside an item, or `Truncated` once the input ended.
    fn need(&self, state: State) -> (State, Result<Decoded>) {
        if self.input_ended {
            (state, Err(mid_item()))
        } else {
            (state, Ok(Decoded::NeedInput))
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
        if flags & !(FLAG_PAYLOAD_CRC | FLAG_METADATA) != 0 {
            bail!(Unsupported, "unknown stream flags {flags:#06x}");
        }
        self.payload_crc = flags & FLAG_PAYLOAD_CRC != 0;
        self.has_metadata = flags & FLAG_METADATA != 0;
        if self.opts.require_payload_checksums && !self.payload_crc {
            bail!(Corrupt, "stream carries no payload checksums and the reader requires them");
        }
        Ok(())
    }

    /// The metadata frame's (body length, body CRC); it must directly follow the stream header.
    fn check_metadata_header(&self, b: &[u8; FRAME_HEADER_BYTES]) -> Result<(usize, u32)> {
        let stored = u32::from_le_bytes(b[20..24].try_into().unwrap());
        if crc32c(&b[0..20]) != stored {
            bail!(Corrupt, "frame header checksum mismatch");
        }
        if b[0..4] != FRAME_METADATA {
            bail!(Corrupt, "the stream header announces metadata but the first frame is {:?}", &b[0..4]);
        }
        if b[4..8] != [0; 4] {
            bail!(Unsupported, "unknown frame flags");
        }
        let len = u64::from_le_bytes(b[8..16].try_into().unwrap());
        if len > self.opts.max_descriptor_bytes {
            bail!(
                LimitExceeded,
                "stream metadata of {len} bytes exceeds the limit of {}",
                self.opts.max_descriptor_bytes
            );
        }
        Ok((len as usize, u32::from_le_bytes(b[16..20].try_into().unwrap())))
    }

    /// The stream's metadata (docs/spec/stream.md §Stream metadata): `None` until the stream
    /// header was decoded, then the entries in order (empty when the stream has none).
    pub fn metadata(&self) -> Option<&[(String, Vec<u8>)]> {
        self.metadata.as_deref()
    }

    /// Decodes as far as the stream header and metadata frame, and no further: `Ok(true)` once
    /// they are decoded ([`metadata`](Self::metadata) is then `Some`), `Ok(false)` when input
    /// is needed first (as for `NeedInput`). Errors as [`poll`](Self::poll).
    pub fn poll_header(&mut self) -> Result<bool> {
        if self.metadata.is_some() {
            return Ok(true);
        }
        self.stop_at_header = true;
        let r = self.poll();
        self.stop_at_header = false;
        match r? {
            Decoded::NeedInput => Ok(self.metadata.is_some()),
            _ => Ok(true),
        }
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

    /// The descriptor of `bytes` and its buffers, and whether `bytes` are the last accepted
    /// descriptor's.
    fn start_payloads(&self, bytes: &[u8], crc: u32) -> Result<(TensorDescriptor, Vec<PooledBuf>, bool)> {
        // Equal bytes have an equal CRC: for the same bytes as the last accepted descriptor,
        // comparing the stored CRCs is the checksum check.
        let same = self.last.as_ref().is_some_and(|l| l.bytes == bytes);
        let crc_ok = match &self.last {
            Some(l) if same => l.crc == crc,
            _ => crc32c(bytes) == crc,
        };
        if !crc_ok {
            bail!(Corrupt, "descriptor checksum mismatch");
        }
        // Decoding from the last accepted descriptor's template gives what a full decode gives.
        // The same bytes as the last accepted descriptor (a stream of equal unnamed
        // descriptors) are that descriptor again: the template's, shared as it is.
        let repeated = if same { self.last.as_ref().and_then(|l| l.template.repeat()) } else { None };
        let desc = match (repeated, &self.last) {
            (Some(d), _) => d,
            (None, Some(l)) => l.template.decode(&l.bytes, bytes)?,
            (None, None) => TensorDescriptor::decode(bytes)?,
        };
        if desc.shape().rank() > self.opts.max_rank as usize {
            bail!(LimitExceeded, "rank {} exceeds the limit of {}", desc.shape().rank(), self.opts.max_rank);
        }
        let total = desc.total_buffer_bytes();
        if total > self.opts.max_tensor_bytes {
            bail!(LimitExceeded, "tensor of {total} bytes exceeds the limit of {}", self.opts.max_tensor_bytes);
        }
        // The first EAGER_RESERVE_BYTES of the buffers are allocated now; the rest grow as
        // their bytes arrive (docs/spec/stream.md §Limits), so a declared size costs memory
        // only once the input backs it up.
        let mut eager = EAGER_RESERVE_BYTES;
        let mut bufs = Vec::with_capacity(desc.buffers().len());
        for h in desc.buffers() {
            let initial = eager.max(GROW_MIN_BYTES);
            eager = eager.saturating_sub(h.byte_size().min(usize::MAX as u64) as usize);
            bufs.push(match &self.pool {
                Some(p) => p.take_growable(h.byte_size(), h.alignment(), initial)?,
                None => PooledBuf::unpooled(AlignedBuf::growable(h.byte_size(), h.alignment(), initial)?),
            });
        }
        Ok((desc, bufs, same))
    }

    /// Keeps an accepted descriptor's bytes and template for the next frame, and the previous
    /// bytes' allocation for reading the next frame's descriptor into. With `same` (`bytes`
    /// are the last accepted descriptor's) the last one is kept as it is.
    fn remember(&mut self, bytes: Vec<u8>, crc: u32, desc: &TensorDescriptor, same: bool) {
        if same {
            self.spare_bytes = if bytes.capacity() <= KEEP_DESCRIPTOR_CAPACITY { bytes } else { Vec::new() };
            return;
        }
        let template = DecodeTemplate::of(desc);
        let old = match self.last.replace(LastDescriptor { bytes, crc, template }) {
            Some(l) => l.bytes,
            None => Vec::new(),
        };
        self.spare_bytes = if old.capacity() <= KEEP_DESCRIPTOR_CAPACITY { old } else { Vec::new() };
    }

    /// The encoded descriptor (docs/spec/descriptor.md) of the tensor most recently returned
    /// by [`poll`](Self::poll), exactly as the stream carried it (the canonical encoding, so
    /// equal to `descriptor.encode()`); empty before the first tensor.
    pub fn last_descriptor_bytes(&self) -> &[u8] {
        self.last.as_ref().map_or(&[], |l| &l.bytes)
    }

    /// Fills `buf[got..]` from buffered bytes, keeping progress in `got`.
    fn fill(&mut self, buf: &mut [u8], got: &mut usize) -> Fill {
        let avail = &self.ahead.as_slice()[self.ahead_pos..];
        let n = avail.len().min(buf.len() - *got);
        buf[*got..*got + n].copy_from_slice(&avail[..n]);
        self.ahead_pos += n;
        *got += n;
        if *got == buf.len() {
            Fill::Done
        } else {
            Fill::NeedInput
        }
    }

    /// Appends buffered bytes to `buf` until it holds `want`; capacity grows with the bytes
    /// received.
    fn fill_vec(&mut self, buf: &mut Vec<u8>, want: usize) -> Fill {
        let avail = &self.ahead.as_slice()[self.ahead_pos..];
        let n = avail.len().min(want - buf.len());
        buf.extend_from_slice(&avail[..n]);
        self.ahead_pos += n;
        if buf.len() == want {
            Fill::Done
        } else {
            Fill::NeedInput
        }
    }
}

/// Moves buffered bytes (`ahead` from `ahead_pos`) into a payload allocation (large remainders
/// arrive in place through [`StreamDecoder::input_buffer`]). A growing allocation takes the
/// buffered bytes in steps, growing between them.
fn fill_buf(ahead: &AlignedBuf, ahead_pos: &mut usize, b: &mut AlignedBuf) -> Result<Fill> {
    loop {
        b.grow_if_full()?;
        let avail = &ahead.as_slice()[*ahead_pos..];
        let spare = b.spare_mut();
        let n = avail.len().min(spare.len());
        spare[..n].write_copy_of_slice(&avail[..n]);
        b.advance(n);
        *ahead_pos += n;
        if b.is_full() {
            return Ok(Fill::Done);
        }
        if *ahead_pos == ahead.filled() {
            return Ok(Fill::NeedInput);
        }
    }
}

fn mid_item() -> Error {
    err!(Truncated, "input ended in the middle of an item")
}

impl std::fmt::Debug for StreamDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamDecoder")
            .field("buffered", &self.buffered())
            .field("input_ended", &self.input_ended)
            .finish()
    }
}
