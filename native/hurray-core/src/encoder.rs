//! The stream writer's state machine without a transport: a pull-drained ("sans-I/O")
//! encoder (docs/spec/stream.md §Encoding without a transport).
//!
//! [`StreamEncoder::encode`] stages one item: the stream header before the first item, the
//! frame header, the descriptor, payloads up to [`COALESCE_BYTES`] copied next to them, and
//! payload checksums. Larger payloads are not copied: the output refers to them
//! ([`OutSeg::Borrowed`]) and the caller must write the whole pending output before it may
//! release or change those payloads, and before the next `encode`. Items without borrowed
//! payloads may be left pending and batched with later ones, so many small tensors leave in
//! one system call.
//!
//! The caller writes [`segments`](StreamEncoder::segments) in order, reports every byte that
//! left with [`consume`](StreamEncoder::consume), and reports a failed write with
//! [`abort`](StreamEncoder::abort): a failure after part of the pending output was written
//! poisons the encoder (the stream on the wire is cut inside an item, transport rule 4); a
//! failure before any byte was written leaves the encoder usable. The callback writer
//! [`StreamWriter`](crate::StreamWriter) is this encoder plus a transport loop.

use crate::crc32c::{crc32c, Crc32c};
use crate::descriptor::TensorDescriptor;
use crate::error::{bail, Result};
use crate::wire::{
    FLAG_METADATA, FLAG_PAYLOAD_CRC, FRAME_END, FRAME_HEADER_BYTES, FRAME_METADATA, FRAME_TENSOR, STREAM_HEADER_BYTES,
    STREAM_MAGIC, STREAM_VERSION,
};

/// Payloads up to this size are copied next to the frame header so an item is one write call.
pub const COALESCE_BYTES: usize = 64 * 1024;

/// Writer settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WriterOptions {
    /// Follow every payload with its CRC32C (costs one pass over the bytes).
    pub payload_checksums: bool,
}

/// Largest staging allocation [`StreamEncoder::reset`] keeps for the next stream (1 MiB): a
/// reset encoder that once staged a large composite gives that memory back.
pub const KEEP_STAGING_CAPACITY: usize = 1 << 20;

/// One frame of a group for [`StreamEncoder::encode_group`]: a descriptor, its encoding and
/// its payloads.
pub type GroupEntry<'a> = (&'a TensorDescriptor, &'a [u8], &'a [&'a [u8]]);

/// One piece of pending output, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutSeg {
    /// Bytes `start..end` of [`StreamEncoder::staged`].
    Staged {
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// All of payload `index` of the last `encode` call.
    Borrowed {
        /// Index into that call's `payloads`.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
}

impl OutSeg {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match *self {
            OutSeg::Staged { start, end } => end - start,
            OutSeg::Borrowed { len, .. } => len,
        }
    }

    /// True for an empty piece.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// State before the last staged item, so that an item none of whose bytes left can be taken
/// back.
#[derive(Clone, Copy, Debug)]
struct Mark {
    staged: usize,
    segs: usize,
    header_staged: bool,
    finished: bool,
}

/// Encodes a stream into output the caller drains. One handle, one thread at a time (`Send`).
#[derive(Debug)]
pub struct StreamEncoder {
    opts: WriterOptions,
    header_staged: bool,
    poisoned: bool,
    finished: bool,
    staged: Vec<u8>,
    segs: Vec<OutSeg>,
    /// Pending output: `segs[seg..]`, the first of them from byte `offset` on.
    seg: usize,
    offset: usize,
    consumed: u64,
    pending: u64,
    borrowed: bool,
    mark: Option<Mark>,
    /// Payloads up to this many bytes are copied into the staged output; larger ones borrowed.
    coalesce: usize,
    /// The encoded stream-metadata block, sent after the stream header.
    metadata: Option<Vec<u8>>,
}

impl StreamEncoder {
    /// An encoder; nothing is staged until the first item (or [`finish`](Self::finish)).
    pub fn new(opts: WriterOptions) -> Self {
        StreamEncoder {
            opts,
            header_staged: false,
            poisoned: false,
            finished: false,
            staged: Vec::new(),
            segs: Vec::new(),
            seg: 0,
            offset: 0,
            consumed: 0,
            pending: 0,
            borrowed: false,
            mark: None,
            coalesce: COALESCE_BYTES,
            metadata: None,
        }
    }

    /// Makes the encoder ready for a new stream from its first byte, as if just made with the
    /// same options and coalesce size: pending output (sent or not), the stream metadata, the
    /// finished state and a poisoning are dropped, and the next item or [`finish`](Self::finish)
    /// stages the stream header again. One encoder then serves one short stream per message
    /// (a Kafka record) with the header and end marker written by this module, not by a caller
    /// that learns them. The staging allocation is kept unless it grew past
    /// [`KEEP_STAGING_CAPACITY`], so an idle encoder holds no large buffer.
    pub fn reset(&mut self) {
        self.clear_output();
        if self.staged.capacity() > KEEP_STAGING_CAPACITY {
            self.staged = Vec::new();
        }
        self.header_staged = false;
        self.poisoned = false;
        self.finished = false;
        self.metadata = None;
    }

    /// Sets the stream's metadata (docs/spec/stream.md §Stream metadata): sent once, right
    /// after the stream header, so it must be set before the first item. Errors:
    /// `InvalidState` (the stream header was already staged), and the metadata rules
    /// (`InvalidArgument`, `LimitExceeded`, `DuplicateName`).
    pub fn set_metadata(&mut self, metadata: &[(String, Vec<u8>)]) -> Result<()> {
        if self.header_staged {
            bail!(InvalidState, "stream metadata must be set before the first item");
        }
        self.metadata = Some(crate::descriptor::encode_stream_metadata(metadata)?);
        Ok(())
    }

    /// Sets the largest payload copied into the staged output (default and maximum
    /// [`COALESCE_BYTES`]); larger payloads are borrowed. A caller that sends pieces with one
    /// gathering write per item gains nothing from copying mid-sized payloads, and saves the
    /// copy. Takes effect from the next item. The bytes on the wire do not change.
    pub fn set_coalesce_bytes(&mut self, bytes: usize) {
        self.coalesce = bytes.min(COALESCE_BYTES);
    }

    /// Stages one tensor: `payloads[i]` is buffer `i` of the descriptor's buffer table and must
    /// be exactly its `byte_size` long; `encoded` must equal `desc.encode()`.
    ///
    /// Errors (nothing is staged): `InvalidArgument` (payload count differs from the buffer
    /// count, or a payload is longer than declared), `BufferTooSmall` (shorter),
    /// `InvalidState` (after [`finish`](Self::finish), or while output that borrows the last
    /// item's payloads is pending), `Poisoned`.
    pub fn encode(&mut self, desc: &TensorDescriptor, encoded: &[u8], payloads: &[&[u8]]) -> Result<()> {
        self.check_open()?;
        if self.borrowed {
            bail!(InvalidState, "the pending output borrows the previous item's payloads; write it first");
        }
        check_payloads(desc, payloads)?;
        // Sparse indices and page tables are checked before anything is staged.
        crate::layouts::check_contents(desc, payloads)?;
        self.set_mark();
        let mut start = self.staged.len();
        if !self.header_staged {
            self.push_stream_header();
        }
        push_frame_header(&mut self.staged, FRAME_TENSOR, encoded.len() as u64, crc32c(encoded));
        self.staged.extend_from_slice(encoded);
        let item_start = start;
        for (i, p) in payloads.iter().enumerate() {
            if p.len() <= self.coalesce && self.staged.len() - item_start + p.len() <= 2 * COALESCE_BYTES {
                self.staged.extend_from_slice(p);
            } else {
                self.push_staged(start);
                self.segs.push(OutSeg::Borrowed { index: i, len: p.len() });
                self.pending += p.len() as u64;
                self.borrowed = true;
                start = self.staged.len();
            }
            if self.opts.payload_checksums {
                self.staged.extend_from_slice(&crc32c(p).to_le_bytes());
            }
        }
        self.push_staged(start);
        Ok(())
    }

    /// Stages several frames as one item (a composite: its head and members in preorder):
    /// every payload is copied into the staged output, so the group is sent, or taken back by
    /// [`abort`](Self::abort), as a whole. Each entry is `(descriptor, its encoding, payloads)`.
    /// Errors as [`encode`](Self::encode), checked for every entry before anything is staged.
    pub fn encode_group(&mut self, items: &[GroupEntry<'_>]) -> Result<()> {
        self.check_open()?;
        if self.borrowed {
            bail!(InvalidState, "the pending output borrows the previous item's payloads; write it first");
        }
        for (desc, _, payloads) in items {
            check_payloads(desc, payloads)?;
            crate::layouts::check_contents(desc, payloads)?;
        }
        self.set_mark();
        let start = self.staged.len();
        if !self.header_staged {
            self.push_stream_header();
        }
        for (_, encoded, payloads) in items {
            push_frame_header(&mut self.staged, FRAME_TENSOR, encoded.len() as u64, crc32c(encoded));
            self.staged.extend_from_slice(encoded);
            for p in payloads.iter() {
                self.staged.extend_from_slice(p);
                if self.opts.payload_checksums {
                    self.staged.extend_from_slice(&crc32c(p).to_le_bytes());
                }
            }
        }
        self.push_staged(start);
        Ok(())
    }

    /// Stages the end-of-stream marker (and the stream header if no item was staged).
    /// Idempotent. Errors: `Poisoned`; `InvalidState` while output borrowing payloads is
    /// pending.
    pub fn finish(&mut self) -> Result<()> {
        if self.poisoned {
            bail!(Poisoned, "an earlier write failed mid-item; the stream on the wire is truncated");
        }
        if self.finished {
            return Ok(());
        }
        self.check_open()?;
        if self.borrowed {
            bail!(InvalidState, "the pending output borrows the previous item's payloads; write it first");
        }
        self.set_mark();
        let start = self.staged.len();
        if !self.header_staged {
            self.push_stream_header();
        }
        push_frame_header(&mut self.staged, FRAME_END, 0, 0);
        self.push_staged(start);
        self.finished = true;
        Ok(())
    }

    /// The pending output, in order; the first segment's first [`offset`](Self::offset) bytes
    /// were already written.
    pub fn segments(&self) -> &[OutSeg] {
        &self.segs[self.seg..]
    }

    /// Bytes of the first pending segment already written.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The staged bytes that [`OutSeg::Staged`] segments index.
    pub fn staged(&self) -> &[u8] {
        &self.staged
    }

    /// Bytes of output pending.
    pub fn pending_bytes(&self) -> u64 {
        self.pending
    }

    /// True while pending output refers to the last item's payloads.
    pub fn borrows_payloads(&self) -> bool {
        self.borrowed
    }

    /// Records that the first `n` pending bytes were written. Errors: `InvalidArgument` if `n`
    /// exceeds the pending bytes (nothing is recorded).
    pub fn consume(&mut self, mut n: u64) -> Result<()> {
        if n > self.pending {
            bail!(InvalidArgument, "{n} bytes consumed, but only {} are pending", self.pending);
        }
        self.pending -= n;
        self.consumed += n;
        while n > 0 {
            let left = (self.segs[self.seg].len() - self.offset) as u64;
            if n < left {
                self.offset += n as usize;
                n = 0;
            } else {
                n -= left;
                self.seg += 1;
                self.offset = 0;
            }
        }
        while self.seg < self.segs.len() && self.segs[self.seg].len() == self.offset {
            self.seg += 1;
            self.offset = 0;
        }
        if self.pending == 0 {
            self.clear_output();
        }
        Ok(())
    }

    /// Reports that writing the pending output failed. Returns true if the encoder is now
    /// poisoned: part of the pending output had left (it ends inside an item). Otherwise nothing
    /// left, the encoder stays usable, and with `take_back_last` the last staged item (or end
    /// marker) is taken back, so that a retried call stages it again; earlier pending items
    /// stay pending.
    pub fn abort(&mut self, take_back_last: bool) -> bool {
        if self.consumed > 0 && self.pending > 0 {
            self.poisoned = true;
            return true;
        }
        if take_back_last {
            if let Some(m) = self.mark.take() {
                self.staged.truncate(m.staged);
                self.segs.truncate(m.segs);
                // A piece merged with the taken-back item ends where the item began.
                if let Some(OutSeg::Staged { end, .. }) = self.segs.last_mut() {
                    *end = (*end).min(m.staged);
                }
                self.header_staged = m.header_staged;
                self.finished = m.finished;
                self.borrowed = false;
                self.pending = self.segs[self.seg..].iter().map(|s| s.len() as u64).sum::<u64>() - self.offset as u64;
                if self.pending == 0 {
                    self.clear_output();
                }
            }
        }
        false
    }

    /// Marks the encoder poisoned: a multi-frame item (a composite) stopped part-way.
    pub(crate) fn poison(&mut self) {
        self.poisoned = true;
    }

    /// True once a failed write cut the output inside an item.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// True once the end marker was staged.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// True once the end marker was staged and written.
    pub fn is_done(&self) -> bool {
        self.finished && self.pending == 0
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

    fn set_mark(&mut self) {
        self.mark = Some(Mark {
            staged: self.staged.len(),
            segs: self.segs.len(),
            header_staged: self.header_staged,
            finished: self.finished,
        });
    }

    /// Appends staged bytes `start..` to the output, merging with a staged piece that ends
    /// where they start (so a batch of small items leaves as one piece).
    fn push_staged(&mut self, start: usize) {
        let end = self.staged.len();
        if end > start {
            self.pending += (end - start) as u64;
            if let Some(OutSeg::Staged { end: last_end, .. }) = self.segs[self.seg..].last_mut() {
                if *last_end == start {
                    *last_end = end;
                    return;
                }
            }
            self.segs.push(OutSeg::Staged { start, end });
        }
    }

    fn clear_output(&mut self) {
        self.staged.clear();
        self.segs.clear();
        self.seg = 0;
        self.offset = 0;
        self.consumed = 0;
        self.pending = 0;
        self.borrowed = false;
        self.mark = None;
    }

    fn push_stream_header(&mut self) {
        let mut flags = if self.opts.payload_checksums { FLAG_PAYLOAD_CRC } else { 0 };
        if self.metadata.is_some() {
            flags |= FLAG_METADATA;
        }
        let mut h = [0u8; STREAM_HEADER_BYTES];
        h[0..8].copy_from_slice(&STREAM_MAGIC);
        h[8..10].copy_from_slice(&STREAM_VERSION.to_le_bytes());
        h[10..12].copy_from_slice(&flags.to_le_bytes());
        let c = crc32c(&h[0..12]);
        h[12..16].copy_from_slice(&c.to_le_bytes());
        self.staged.extend_from_slice(&h);
        if let Some(md) = &self.metadata {
            push_frame_header(&mut self.staged, FRAME_METADATA, md.len() as u64, crc32c(md));
            self.staged.extend_from_slice(md);
        }
        self.header_staged = true;
    }
}

/// One payload per buffer-table entry, each exactly its declared size.
fn check_payloads(desc: &TensorDescriptor, payloads: &[&[u8]]) -> Result<()> {
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
    Ok(())
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
