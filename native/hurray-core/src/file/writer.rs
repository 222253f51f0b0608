//! The container writer (docs/spec/hrryfile.md §5 Writing). It only ever appends through a
//! [`WriteTransport`], so it writes into pipes and sockets as well as files, and it never
//! needs a size up front: tensors are appended one by one and the index goes out at finish.

use std::collections::{BTreeMap, HashSet};

use super::format::{
    align_up, encode_header, encode_metadata, BufferRecord, RawEntry, Trailer, BUFFER_HAS_CRC, BUFFER_RECORD_BYTES,
    ENTRY_BYTES, INDEX_ALIGNMENT, MAX_FILE_METADATA_BYTES, MAX_FILE_METADATA_ENTRIES, MAX_FILE_METADATA_KEY_BYTES,
    MAX_FILE_METADATA_VALUE_BYTES, NAME_PREFIX_BYTES,
};
use crate::crc32c::crc32c;
use crate::descriptor::{LayoutDescriptor, TensorDescriptor};
use crate::encoder::{GroupEntry, OutSeg};
use crate::error::{bail, err, Error, ErrorKind, Result};
use crate::stream::WriteTransport;
use crate::{MAX_BUFFER_ALIGNMENT, MAX_DESCRIPTOR_BYTES, MIN_BUFFER_ALIGNMENT};

/// Small payloads and padding are gathered into one staging buffer of about this many bytes
/// before a `write` call; larger payloads go to the transport straight from the caller's slice.
pub const WRITE_STAGING_BYTES: usize = 64 * 1024;

/// Writer settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileWriterOptions {
    /// Store each payload's CRC32C in its buffer record (default true; costs one pass over the
    /// payload bytes at add time).
    pub payload_checksums: bool,
    /// Place every payload at a multiple of at least this many bytes (a power of two in
    /// `64..=2 MiB`; default 64). Each payload is aligned to the larger of this and its
    /// buffer's declared alignment; e.g. 4096 gives page-aligned payloads for memory maps.
    pub min_payload_alignment: u64,
}

impl Default for FileWriterOptions {
    fn default() -> Self {
        FileWriterOptions { payload_checksums: true, min_payload_alignment: MIN_BUFFER_ALIGNMENT }
    }
}

struct Pending {
    name: String,
    encoded: Vec<u8>,
    /// Offset of the name bytes inside `encoded`.
    name_at: usize,
    buffers: Vec<BufferRecord>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// Index, metadata and trailer are staged; sending them is what is left.
    Finishing,
    Finished,
    Poisoned,
}

/// The encoder before the last added tensor, so that a tensor none of whose bytes were sent
/// can be taken back.
#[derive(Clone, Copy, Debug)]
struct Mark {
    staging: usize,
    segs: usize,
    /// Logical offset where the tensor (its padding first) begins.
    position: u64,
}

/// What [`FileEncoder::abort`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    /// Nothing changed: every pending byte is the encoder's own and stays pending.
    Kept,
    /// The last tensor was taken back (none of its bytes had been sent): it is not in the
    /// container, and adding it again is allowed.
    TakenBack,
    /// Part of the last tensor was sent and the rest cannot be (or was not to be) kept: the
    /// encoder accepts nothing more.
    Poisoned,
}

/// Builds a container without a transport (docs/spec/hrryfile.md §5 Writing, docs/spec/c-abi.md
/// §Containers without a transport): the caller adds tensors, sends the pending output
/// ([`segments`](Self::segments)) however it likes, and reports what left
/// ([`consume`](Self::consume)) or that sending failed ([`abort`](Self::abort)). Nothing here
/// performs I/O, so a caller's blocking write never runs inside a call of this type (a Java
/// virtual thread then parks without pinning its carrier).
///
/// Output: the header, then per tensor zero padding and its payloads, then at
/// [`finish`](Self::finish) the index, the metadata block and the trailer, strictly in file
/// order: the container is the concatenation of every byte consumed. Payloads of at most
/// [`WRITE_STAGING_BYTES`] are copied into the encoder's staging buffer; a larger payload is
/// borrowed ([`OutSeg::Borrowed`], indexing the last `add` call's payloads): while
/// [`borrows_payloads`](Self::borrows_payloads) is true the caller must send the pending
/// output before it changes or frees that payload, and before the next `add` or `finish`.
/// Output that borrows nothing may stay pending across calls (many small tensors leave in one
/// write); the caller chooses when to send it.
///
/// Memory: as [`FileWriter`], plus whatever pending output the caller leaves unsent.
pub struct FileEncoder {
    opts: FileWriterOptions,
    staging: Vec<u8>,
    segs: Vec<OutSeg>,
    /// Pending output: `segs[seg..]`, the first of them from byte `offset` on.
    seg: usize,
    offset: usize,
    /// Bytes consumed (sent) so far.
    written: u64,
    /// Bytes pending.
    pending: u64,
    /// Logical size of the file so far: `written + pending`.
    position: u64,
    borrowed: bool,
    /// The last tensor, while some of its bytes are pending.
    last: Option<Mark>,
    /// When the last staging was a group: the entry count before it.
    group_start: Option<usize>,
    entries: Vec<Pending>,
    names: HashSet<String>,
    metadata: BTreeMap<String, Vec<u8>>,
    metadata_bytes: u64,
    state: State,
}

impl FileEncoder {
    /// An encoder with the 16-byte header pending.
    ///
    /// Errors: `InvalidAlignment` for a `min_payload_alignment` that is not a power of two in
    /// `64..=2 MiB`.
    pub fn new(opts: FileWriterOptions) -> Result<Self> {
        let a = opts.min_payload_alignment;
        if !a.is_power_of_two() || !(MIN_BUFFER_ALIGNMENT..=MAX_BUFFER_ALIGNMENT).contains(&a) {
            bail!(InvalidAlignment, "min_payload_alignment {a} is not a power of two in 64..={MAX_BUFFER_ALIGNMENT}");
        }
        let mut e = FileEncoder {
            opts,
            staging: Vec::new(),
            segs: Vec::new(),
            seg: 0,
            offset: 0,
            written: 0,
            pending: 0,
            position: 0,
            borrowed: false,
            last: None,
            group_start: None,
            entries: Vec::new(),
            names: HashSet::new(),
            metadata: BTreeMap::new(),
            metadata_bytes: 8,
            state: State::Open,
        };
        e.stage(&encode_header());
        Ok(e)
    }

    /// Bytes consumed so far (a progress counter; the file size once finished).
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Logical size of the output so far: consumed plus pending bytes.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Number of tensors added.
    pub fn tensor_count(&self) -> u64 {
        self.entries.len() as u64
    }

    /// True once the trailer was staged and every byte consumed: the output is a container.
    pub fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    /// True once a failed send cut a tensor; the encoder accepts nothing more.
    pub fn is_poisoned(&self) -> bool {
        self.state == State::Poisoned
    }

    /// The pending output, in order; the first segment's first [`offset`](Self::offset) bytes
    /// were already consumed.
    pub fn segments(&self) -> &[OutSeg] {
        &self.segs[self.seg..]
    }

    /// Bytes of the first pending segment already consumed.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The staged bytes that [`OutSeg::Staged`] segments index.
    pub fn staged(&self) -> &[u8] {
        &self.staging
    }

    /// Bytes pending.
    pub fn pending_bytes(&self) -> u64 {
        self.pending
    }

    /// True while pending output refers to the last added tensor's payloads.
    pub fn borrows_payloads(&self) -> bool {
        self.borrowed
    }

    /// The first pending piece: staged bytes, or (with the last `add`'s `payloads`) a borrowed
    /// payload, from the first byte not yet consumed. Empty when nothing is pending.
    ///
    /// Errors: `InvalidArgument` when `payloads` lacks the borrowed payload.
    pub fn first_piece<'a>(&'a self, payloads: &[&'a [u8]]) -> Result<&'a [u8]> {
        let Some(seg) = self.segments().first() else { return Ok(&[]) };
        let whole: &[u8] = match *seg {
            OutSeg::Staged { start, end } => &self.staging[start..end],
            OutSeg::Borrowed { index, len } => match payloads.get(index) {
                Some(p) if p.len() == len => p,
                _ => bail!(InvalidArgument, "the pending output borrows payload {index}, which was not given"),
            },
        };
        Ok(&whole[self.offset..])
    }

    /// Appends one tensor; see [`FileWriter::add_tensor`] for the rules on names and payloads.
    /// Nothing is sent: the tensor's padding and payloads become pending output.
    ///
    /// Errors (nothing is staged): `InvalidArgument`, `BufferTooSmall`, `DuplicateName`,
    /// `LimitExceeded`, `InvalidState` (after finish, or while the pending output borrows the
    /// previous tensor's payloads), `Poisoned`.
    pub fn add_encoded(&mut self, desc: &TensorDescriptor, encoded: &[u8], payloads: &[&[u8]]) -> Result<()> {
        self.add_inner(desc, encoded, payloads, WRITE_STAGING_BYTES)
    }

    /// As [`add_encoded`](Self::add_encoded) for several tensors that must leave together (a
    /// composite's head and members): every payload is copied, so nothing is borrowed and the
    /// group can be sent whenever the caller likes. Everything is checked before anything is
    /// staged. The group is taken back by [`abort`](Self::abort) only as a whole.
    pub fn add_group(&mut self, items: &[GroupEntry<'_>]) -> Result<()> {
        self.check_open()?;
        if self.borrowed {
            bail!(InvalidState, "the pending output borrows the previous tensor's payloads; send it first");
        }
        let mut seen = HashSet::new();
        for (desc, encoded, payloads) in items {
            self.check_tensor(desc, encoded, payloads)?;
            let name = desc.name().unwrap_or_default();
            if !seen.insert(name) {
                bail!(DuplicateName, "the group names {name:?} twice");
            }
        }
        let mark = self.mark();
        let count = self.entries.len();
        for (desc, encoded, payloads) in items {
            if let Err(e) = self.add_inner(desc, encoded, payloads, usize::MAX) {
                // Checked above; only offset overflow can get here. Undo the whole group.
                self.take_back(mark, count);
                return Err(e);
            }
        }
        self.last = Some(mark);
        self.group_start = Some(count);
        Ok(())
    }

    fn check_tensor(&self, desc: &TensorDescriptor, encoded: &[u8], payloads: &[&[u8]]) -> Result<usize> {
        let name = match desc.name() {
            Some(n) if !n.is_empty() => n,
            _ => bail!(InvalidArgument, "a tensor in a container needs a non-empty name"),
        };
        if self.names.contains(name) {
            bail!(DuplicateName, "a tensor named {name:?} is already in the container");
        }
        let table = desc.buffers();
        if payloads.len() != table.len() {
            bail!(InvalidArgument, "{} payloads for a descriptor with {} buffers", payloads.len(), table.len());
        }
        for (i, (p, h)) in payloads.iter().zip(table).enumerate() {
            let want = h.byte_size();
            if (p.len() as u64) < want {
                bail!(BufferTooSmall, "payload {i} of {name:?} has {} bytes, the descriptor declares {want}", p.len());
            }
            if p.len() as u64 > want {
                bail!(InvalidArgument, "payload {i} of {name:?} has {} bytes, the descriptor declares {want}", p.len());
            }
        }
        crate::layouts::check_contents(desc, payloads)?;
        if encoded.len() > MAX_DESCRIPTOR_BYTES {
            bail!(LimitExceeded, "descriptor of {} bytes exceeds {MAX_DESCRIPTOR_BYTES}", encoded.len());
        }
        name_offset_in(desc, encoded)
    }

    /// Stages one tensor, copying payloads of at most `copy_up_to` bytes and borrowing larger ones.
    fn add_inner(
        &mut self,
        desc: &TensorDescriptor,
        encoded: &[u8],
        payloads: &[&[u8]],
        copy_up_to: usize,
    ) -> Result<()> {
        self.check_open()?;
        if self.borrowed {
            bail!(InvalidState, "the pending output borrows the previous tensor's payloads; send it first");
        }
        let name_at = self.check_tensor(desc, encoded, payloads)?;
        let name = desc.name().unwrap_or_default();
        // Plan the placement first so overflow is an error before anything is staged.
        let mut pos = self.position;
        let mut plan = Vec::with_capacity(payloads.len());
        for (p, h) in payloads.iter().zip(desc.buffers()) {
            let align = h.alignment().max(self.opts.min_payload_alignment);
            let at = align_up(pos, align).ok_or_else(|| err!(LimitExceeded, "file offset overflows u64"))?;
            plan.push((at - pos, at));
            pos = at.checked_add(p.len() as u64).ok_or_else(|| err!(LimitExceeded, "file offset overflows u64"))?;
        }
        let mark = self.mark();
        let mut records = Vec::with_capacity(payloads.len());
        for (i, (p, &(pad, at))) in payloads.iter().zip(&plan).enumerate() {
            self.stage_zeros(pad as usize);
            debug_assert_eq!(self.position, at);
            let (crc, flags) = if self.opts.payload_checksums { (crc32c(p), BUFFER_HAS_CRC) } else { (0, 0) };
            if p.len() <= copy_up_to {
                self.stage(p);
            } else {
                self.segs.push(OutSeg::Borrowed { index: i, len: p.len() });
                self.pending += p.len() as u64;
                self.position += p.len() as u64;
                self.borrowed = true;
            }
            records.push(BufferRecord { offset: at, length: p.len() as u64, crc, flags });
        }
        self.names.insert(name.to_string());
        self.entries.push(Pending { name: name.to_string(), encoded: encoded.to_vec(), name_at, buffers: records });
        self.last = Some(mark);
        self.group_start = None;
        Ok(())
    }

    /// Sets a file-level metadata entry; see [`FileWriter::set_metadata`].
    pub fn set_metadata(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.check_open()?;
        if key.is_empty() || key.len() > MAX_FILE_METADATA_KEY_BYTES {
            bail!(InvalidArgument, "metadata key must be 1..={MAX_FILE_METADATA_KEY_BYTES} bytes, got {}", key.len());
        }
        if value.len() as u64 > MAX_FILE_METADATA_VALUE_BYTES {
            bail!(LimitExceeded, "metadata value of {} bytes exceeds {MAX_FILE_METADATA_VALUE_BYTES}", value.len());
        }
        let old = self.metadata.get(key).map(|v| 12 + key.len() as u64 + v.len() as u64).unwrap_or(0);
        if old == 0 && self.metadata.len() as u64 >= MAX_FILE_METADATA_ENTRIES {
            bail!(LimitExceeded, "more than {MAX_FILE_METADATA_ENTRIES} metadata entries");
        }
        let total = self.metadata_bytes - old + 12 + key.len() as u64 + value.len() as u64;
        if total > MAX_FILE_METADATA_BYTES {
            bail!(LimitExceeded, "metadata block would be {total} bytes, over {MAX_FILE_METADATA_BYTES}");
        }
        self.metadata.insert(key.to_string(), value.to_vec());
        self.metadata_bytes = total;
        Ok(())
    }

    /// Stages the index, the metadata block and the trailer (once; later calls do nothing)
    /// and returns the file size in bytes. The output is a container once every pending byte
    /// is consumed ([`is_finished`](Self::is_finished)); until then it has no valid trailer.
    ///
    /// Errors: `Poisoned`, `InvalidState` (the pending output borrows payloads),
    /// `LimitExceeded` (offsets overflow u64).
    pub fn finish(&mut self) -> Result<u64> {
        match self.state {
            State::Finished | State::Finishing => return Ok(self.file_size()),
            State::Poisoned => bail!(Poisoned, "an earlier failure left part of a tensor on the output"),
            State::Open => {}
        }
        if self.borrowed {
            bail!(InvalidState, "the pending output borrows the last tensor's payloads; send it first");
        }
        self.stage_index()?;
        self.last = None;
        if self.pending == 0 {
            self.state = State::Finished;
        }
        Ok(self.file_size())
    }

    fn file_size(&self) -> u64 {
        self.position
    }

    /// Records that the first `n` pending bytes were sent. Errors: `InvalidArgument` if `n`
    /// exceeds the pending bytes (nothing is recorded).
    pub fn consume(&mut self, mut n: u64) -> Result<()> {
        if n > self.pending {
            bail!(InvalidArgument, "{n} bytes consumed, but only {} are pending", self.pending);
        }
        self.pending -= n;
        self.written += n;
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
        if self.pending == 0 {
            self.staging.clear();
            self.segs.clear();
            self.seg = 0;
            self.offset = 0;
            self.borrowed = false;
            self.last = None;
            if self.state == State::Finishing {
                self.state = State::Finished;
            }
        } else if self.borrowed && !self.segs[self.seg..].iter().any(|s| matches!(s, OutSeg::Borrowed { .. })) {
            self.borrowed = false;
        }
        Ok(())
    }

    /// Reports that sending the pending output failed (transport rule 3: the failed write
    /// moved nothing). Bytes the encoder owns stay pending and go out on a later send, so a
    /// failed [`finish`](Self::finish) or flush loses nothing. The last added tensor (or
    /// group) is taken back when `take_back_last` is set or its payloads are borrowed, provided
    /// none of its bytes were sent; if some were, and it borrows payloads or `take_back_last`
    /// is set, the encoder is poisoned (a tensor is never left half-written in a container
    /// that could still be finished).
    pub fn abort(&mut self, take_back_last: bool) -> Abort {
        if self.state == State::Poisoned {
            return Abort::Poisoned;
        }
        let Some(m) = self.last else { return Abort::Kept };
        if !take_back_last && !self.borrowed {
            return Abort::Kept;
        }
        if self.written > m.position {
            self.state = State::Poisoned;
            return Abort::Poisoned;
        }
        let count = self.group_start.unwrap_or(self.entries.len().saturating_sub(1));
        self.take_back(m, count);
        Abort::TakenBack
    }

    /// Marks the encoder poisoned (a caller's multi-call item stopped part-way).
    pub fn poison(&mut self) {
        self.state = State::Poisoned;
    }

    fn mark(&self) -> Mark {
        Mark { staging: self.staging.len(), segs: self.segs.len(), position: self.position }
    }

    /// Forgets everything staged since `m` (only bytes never consumed) and the entries from
    /// `count` on.
    fn take_back(&mut self, m: Mark, count: usize) {
        debug_assert!(self.written <= m.position);
        self.staging.truncate(m.staging);
        self.segs.truncate(m.segs);
        // A piece merged with the taken-back tensor ends where the tensor began.
        if let Some(OutSeg::Staged { end, .. }) = self.segs.last_mut() {
            *end = (*end).min(m.staging);
        }
        for p in self.entries.drain(count..) {
            self.names.remove(&p.name);
        }
        self.position = m.position;
        self.pending = m.position - self.written;
        self.borrowed = false;
        self.last = None;
        self.group_start = None;
        if self.pending == 0 {
            self.staging.clear();
            self.segs.clear();
            self.seg = 0;
            self.offset = 0;
        }
    }

    fn check_open(&self) -> Result<()> {
        match self.state {
            State::Open => Ok(()),
            State::Poisoned => bail!(Poisoned, "an earlier failure left part of a tensor on the output"),
            State::Finishing | State::Finished => bail!(InvalidState, "the container is finished"),
        }
    }

    fn stage_index(&mut self) -> Result<()> {
        let overflow = || err!(LimitExceeded, "file offset overflows u64");
        let index_offset = align_up(self.position, INDEX_ALIGNMENT).ok_or_else(overflow)?;
        let pad = index_offset - self.position;
        let n = self.entries.len() as u64;
        let table_len = n.checked_mul(ENTRY_BYTES).ok_or_else(overflow)?;
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_unstable_by(|&a, &b| self.entries[a].name.as_bytes().cmp(self.entries[b].name.as_bytes()));

        let mut table = Vec::with_capacity(table_len as usize);
        let mut records = Vec::new();
        let mut record_at = index_offset.checked_add(table_len).ok_or_else(overflow)?;
        for &i in &order {
            let p = &self.entries[i];
            let start = records.len();
            for r in &p.buffers {
                r.encode(&mut records);
            }
            records.extend_from_slice(&p.encoded);
            let rec = &records[start..];
            let rec_len = rec.len() as u64;
            let mut prefix = [0u8; NAME_PREFIX_BYTES];
            let nb = p.name.as_bytes();
            let k = nb.len().min(NAME_PREFIX_BYTES);
            prefix[..k].copy_from_slice(&nb[..k]);
            let desc_at = p.buffers.len() as u64 * BUFFER_RECORD_BYTES;
            let entry = RawEntry {
                record_offset: record_at,
                record_length: rec_len,
                name_offset: record_at + desc_at + p.name_at as u64,
                name_length: nb.len() as u32,
                buffer_count: p.buffers.len() as u32,
                record_crc: crc32c(rec),
                prefix,
            };
            table.extend_from_slice(&entry.encode());
            record_at = record_at.checked_add(rec_len).ok_or_else(overflow)?;
        }
        let index_length = table_len + records.len() as u64;
        let metadata = encode_metadata(self.metadata.iter().map(|(k, v)| (k.as_str(), v.as_slice())));
        let index_crc = crate::crc32c::Crc32c::new().update(&table).update(&records).finish();
        let metadata_offset = index_offset.checked_add(index_length).ok_or_else(overflow)?;
        let trailer = Trailer {
            index_offset,
            index_length,
            entry_count: n,
            metadata_offset,
            metadata_length: metadata.len() as u64,
            index_crc,
            metadata_crc: crc32c(&metadata),
        };
        metadata_offset
            .checked_add(metadata.len() as u64)
            .and_then(|e| e.checked_add(super::format::TRAILER_BYTES))
            .ok_or_else(overflow)?;
        self.stage_zeros(pad as usize);
        self.stage(&table);
        self.stage(&records);
        self.stage(&metadata);
        self.stage(&trailer.encode());
        self.state = State::Finishing;
        Ok(())
    }

    fn stage(&mut self, b: &[u8]) {
        let start = self.staging.len();
        self.staging.extend_from_slice(b);
        self.staged_to(start);
    }

    fn stage_zeros(&mut self, n: usize) {
        let start = self.staging.len();
        self.staging.resize(start + n, 0);
        self.staged_to(start);
    }

    /// Makes staged bytes `start..` pending, merging with a staged piece that ends at `start`.
    fn staged_to(&mut self, start: usize) {
        let end = self.staging.len();
        if end == start {
            return;
        }
        let n = (end - start) as u64;
        self.pending += n;
        self.position += n;
        if let Some(OutSeg::Staged { end: last_end, .. }) = self.segs[self.seg..].last_mut() {
            if *last_end == start {
                *last_end = end;
                return;
            }
        }
        self.segs.push(OutSeg::Staged { start, end });
    }
}

/// Writes a container through a sequential transport: a [`FileEncoder`] whose output this
/// writer sends itself. One handle, one thread at a time.
///
/// Memory: the writer keeps every tensor's encoded descriptor and buffer records (about 200
/// bytes per tensor plus the descriptor) until [`finish`](Self::finish) writes the index, plus
/// up to about [`WRITE_STAGING_BYTES`] of staged bytes (more while padding to a large
/// alignment, and the whole index during finish).
///
/// Failure rules (docs/spec/stream.md §Transport rules): a failing `write` moved no bytes, so the
/// writer knows exactly what reached the transport. Bytes it owns (header, padding, small payloads,
/// index) stay staged and go out on the next call. A tensor whose bytes had not started reaching
/// the transport when the failure happened is not added and the call can be retried; once any of
/// its bytes went out, the writer is poisoned (the caller's payload slices are not retained, so the
/// rest cannot be sent later). A failing `finish` can be retried.
pub struct FileWriter<T: WriteTransport> {
    transport: T,
    enc: FileEncoder,
}

impl<T: WriteTransport> FileWriter<T> {
    /// A writer over `transport`. The header is staged, not written: nothing reaches the
    /// transport before the first call that flushes.
    ///
    /// Errors: `InvalidAlignment` for a `min_payload_alignment` that is not a power of two in
    /// `64..=2 MiB`.
    pub fn new(transport: T, opts: FileWriterOptions) -> Result<Self> {
        Ok(FileWriter { transport, enc: FileEncoder::new(opts)? })
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Consumes the writer, returning the transport. Nothing more is written: if `finish` did
    /// not succeed, the output has no valid trailer and readers reject it.
    pub fn into_transport(self) -> T {
        self.transport
    }

    /// Bytes the transport has accepted so far (a progress counter).
    pub fn bytes_written(&self) -> u64 {
        self.enc.bytes_written()
    }

    /// Logical size of the output so far, in bytes: what was written plus what is staged.
    /// After a successful `finish` it is the file size.
    pub fn position(&self) -> u64 {
        self.enc.position()
    }

    /// Number of tensors added.
    pub fn tensor_count(&self) -> u64 {
        self.enc.tensor_count()
    }

    /// True once `finish` succeeded.
    pub fn is_finished(&self) -> bool {
        self.enc.is_finished()
    }

    /// True once a failure left part of a tensor on the transport; the writer accepts nothing
    /// more.
    pub fn is_poisoned(&self) -> bool {
        self.enc.is_poisoned()
    }

    /// Appends one tensor. Its name (required: names are the container's keys, 1..=4096 UTF-8
    /// bytes) comes from the descriptor. `payloads[i]` is buffer `i` of the descriptor's buffer
    /// table and must be exactly its `byte_size` long. Small payloads may stay staged until a
    /// later call; nothing of `payloads` is retained after the call returns.
    ///
    /// Errors: `InvalidArgument` (no or empty name, wrong payload count, payload longer than
    /// declared), `BufferTooSmall` (payload shorter), `DuplicateName` (a tensor of that name
    /// was added before), `LimitExceeded`, `InvalidState` (after finish), `Poisoned`,
    /// `Transport` / `SinkClosed` (see the type's failure rules).
    pub fn add_tensor(&mut self, desc: &TensorDescriptor, payloads: &[&[u8]]) -> Result<()> {
        let encoded = desc.encode()?;
        self.add_encoded(desc, &encoded, payloads)
    }

    /// As [`add_tensor`](Self::add_tensor) with `encoded == desc.encode()` precomputed.
    pub fn add_encoded(&mut self, desc: &TensorDescriptor, encoded: &[u8], payloads: &[&[u8]]) -> Result<()> {
        self.enc.add_encoded(desc, encoded, payloads)?;
        if !self.enc.borrows_payloads() && self.enc.pending_bytes() < WRITE_STAGING_BYTES as u64 {
            return Ok(());
        }
        if let Err(e) = send_all(&mut self.transport, &mut self.enc, payloads) {
            return Err(match self.enc.abort(true) {
                Abort::Poisoned => Error::new(
                    e.kind(),
                    format!(
                        "{} after part of tensor {:?} was written; the writer is poisoned",
                        e.message(),
                        desc.name().unwrap_or_default()
                    ),
                ),
                _ => e,
            });
        }
        Ok(())
    }

    /// Sets a file-level metadata entry, replacing any value the key had. Keys are
    /// 1..=4096 UTF-8 bytes; values at most 16 MiB; at most 65,536 entries and 64 MiB in all.
    /// Allowed any time before `finish`.
    ///
    /// Errors: `InvalidArgument` (key), `LimitExceeded`, `InvalidState`, `Poisoned`.
    pub fn set_metadata(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.enc.set_metadata(key, value)
    }

    /// Pushes staged bytes to the transport. Not needed for correctness (`finish` flushes);
    /// useful to bound latency when writing into a pipe.
    ///
    /// Errors: `Transport` / `SinkClosed` (retryable: what is still staged stays staged),
    /// `Poisoned`.
    pub fn flush(&mut self) -> Result<()> {
        if self.enc.is_poisoned() {
            bail!(Poisoned, "an earlier failure left part of a tensor on the transport");
        }
        send_all(&mut self.transport, &mut self.enc, &[]).inspect_err(|_| {
            self.enc.abort(false);
        })
    }

    /// Writes the index, the metadata block and the trailer, and returns the file size in
    /// bytes. Idempotent once it succeeded; a failed call can be retried and continues where
    /// it stopped. Until it succeeds the output is not a valid container.
    ///
    /// Errors: `Poisoned`, `Transport`, `SinkClosed`, `LimitExceeded` (offsets overflow u64).
    pub fn finish(&mut self) -> Result<u64> {
        let size = self.enc.finish().map_err(|e| {
            if e.kind() == ErrorKind::Poisoned {
                err!(Poisoned, "an earlier failure left part of a tensor on the transport")
            } else {
                e
            }
        })?;
        send_all(&mut self.transport, &mut self.enc, &[]).inspect_err(|_| {
            self.enc.abort(false);
        })?;
        Ok(size)
    }
}

/// Sends every pending byte of `enc` through `t`, one `write` per piece (or less).
fn send_all<T: WriteTransport>(t: &mut T, enc: &mut FileEncoder, payloads: &[&[u8]]) -> Result<()> {
    while enc.pending_bytes() > 0 {
        let n = write_once(t, enc.first_piece(payloads)?)?;
        enc.consume(n as u64)?;
    }
    Ok(())
}

fn write_once<T: WriteTransport>(t: &mut T, bytes: &[u8]) -> Result<usize> {
    let n = t.write(bytes).map_err(|e| {
        if e.kind() == ErrorKind::Transport {
            e
        } else {
            Error::new(ErrorKind::Transport, e.message().to_string())
        }
    })?;
    if n == 0 {
        bail!(SinkClosed, "the sink accepted 0 bytes: it is closed");
    }
    if n > bytes.len() {
        bail!(Transport, "transport reported {n} bytes written, more than the {} offered", bytes.len());
    }
    Ok(n)
}

/// Where the name bytes start inside a descriptor's encoding (docs/spec/descriptor.md: fixed
/// 24 bytes, dims, strides when strided, 16 bytes per buffer handle, then the u32 name length
/// and the name). Checked against the bytes, so a change of the descriptor encoding fails
/// loudly here instead of writing a wrong index.
fn name_offset_in(desc: &TensorDescriptor, encoded: &[u8]) -> Result<usize> {
    let rank = desc.shape().rank();
    let strides = if matches!(desc.layout(), LayoutDescriptor::Strided(_)) { rank } else { 0 };
    let at = 24 + 8 * rank + 8 * strides + crate::BUFFER_HANDLE_BYTES * desc.buffers().len() + 4;
    let name = desc.name().unwrap_or_default().as_bytes();
    let ok = encoded.len() >= at + name.len()
        && encoded[at - 4..at] == (name.len() as u32).to_le_bytes()
        && &encoded[at..at + name.len()] == name;
    if !ok {
        bail!(
            InvalidState,
            "internal: the descriptor encoding does not hold the name where the container index expects it"
        );
    }
    Ok(at)
}
