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
    /// Index, metadata and trailer are staged; flushing them is what is left.
    Finishing,
    Finished,
    Poisoned,
}

/// Writes a container through a sequential transport. One handle, one thread at a time.
///
/// Memory: the writer keeps every tensor's encoded descriptor and buffer records (about 200
/// bytes per tensor plus the descriptor) until [`finish`](Self::finish) writes the index, plus
/// up to [`WRITE_STAGING_BYTES`] of staged bytes (more while padding to a large alignment, and
/// the whole index during finish).
///
/// Failure rules (docs/spec/stream.md §Transport rules): a failing `write` moved no bytes, so the
/// writer knows exactly what reached the transport. Bytes it owns (header, padding, small payloads,
/// index) stay staged and go out on the next call. A tensor whose bytes had not started reaching
/// the transport when the failure happened is not added and the call can be retried; once any of
/// its bytes went out, the writer is poisoned (the caller's payload slices are not retained, so the
/// rest cannot be sent later). A failing `finish` can be retried.
pub struct FileWriter<T: WriteTransport> {
    transport: T,
    opts: FileWriterOptions,
    staging: Vec<u8>,
    /// Prefix of `staging` already accepted by the transport.
    staged_sent: usize,
    /// Bytes the transport accepted.
    written: u64,
    /// Logical size of the file so far: `written` plus the unsent staged bytes.
    position: u64,
    entries: Vec<Pending>,
    names: HashSet<String>,
    metadata: BTreeMap<String, Vec<u8>>,
    metadata_bytes: u64,
    state: State,
}

impl<T: WriteTransport> FileWriter<T> {
    /// A writer over `transport`. The header is staged, not written: nothing reaches the
    /// transport before the first call that flushes.
    ///
    /// Errors: `InvalidAlignment` for a `min_payload_alignment` that is not a power of two in
    /// `64..=2 MiB`.
    pub fn new(transport: T, opts: FileWriterOptions) -> Result<Self> {
        let a = opts.min_payload_alignment;
        if !a.is_power_of_two() || !(MIN_BUFFER_ALIGNMENT..=MAX_BUFFER_ALIGNMENT).contains(&a) {
            bail!(InvalidAlignment, "min_payload_alignment {a} is not a power of two in 64..={MAX_BUFFER_ALIGNMENT}");
        }
        let header = encode_header();
        Ok(FileWriter {
            transport,
            opts,
            staging: header.to_vec(),
            staged_sent: 0,
            written: 0,
            position: header.len() as u64,
            entries: Vec::new(),
            names: HashSet::new(),
            metadata: BTreeMap::new(),
            metadata_bytes: 8,
            state: State::Open,
        })
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
        self.written
    }

    /// Logical size of the output so far, in bytes: what was written plus what is staged.
    /// After a successful `finish` it is the file size.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Number of tensors added.
    pub fn tensor_count(&self) -> u64 {
        self.entries.len() as u64
    }

    /// True once `finish` succeeded.
    pub fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    /// True once a failure left part of a tensor on the transport; the writer accepts nothing
    /// more.
    pub fn is_poisoned(&self) -> bool {
        self.state == State::Poisoned
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
        self.check_open()?;
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
        let name_at = name_offset_in(desc, encoded)?;

        // Plan the placement first so overflow is an error before any byte moves.
        let mut pos = self.position;
        let mut plan = Vec::with_capacity(payloads.len());
        for (p, h) in payloads.iter().zip(table) {
            let align = h.alignment().max(self.opts.min_payload_alignment);
            let at = align_up(pos, align).ok_or_else(|| err!(LimitExceeded, "file offset overflows u64"))?;
            plan.push((at - pos, at));
            pos = at.checked_add(p.len() as u64).ok_or_else(|| err!(LimitExceeded, "file offset overflows u64"))?;
        }

        let start = self.position;
        let mut records = Vec::with_capacity(payloads.len());
        let result = (|| -> Result<()> {
            for (p, &(pad, at)) in payloads.iter().zip(&plan) {
                self.stage_zeros(pad as usize);
                debug_assert_eq!(self.position, at);
                let (crc, flags) = if self.opts.payload_checksums { (crc32c(p), BUFFER_HAS_CRC) } else { (0, 0) };
                self.put_payload(p)?;
                records.push(BufferRecord { offset: at, length: p.len() as u64, crc, flags });
            }
            Ok(())
        })();
        if let Err(e) = result {
            if self.written > start {
                self.state = State::Poisoned;
                return Err(Error::new(
                    e.kind(),
                    format!("{} after part of tensor {name:?} was written; the writer is poisoned", e.message()),
                ));
            }
            self.rollback_to(start);
            return Err(e);
        }
        self.names.insert(name.to_string());
        self.entries.push(Pending { name: name.to_string(), encoded: encoded.to_vec(), name_at, buffers: records });
        Ok(())
    }

    /// Sets a file-level metadata entry, replacing any value the key had. Keys are
    /// 1..=4096 UTF-8 bytes; values at most 16 MiB; at most 65,536 entries and 64 MiB in all.
    /// Allowed any time before `finish`.
    ///
    /// Errors: `InvalidArgument` (key), `LimitExceeded`, `InvalidState`, `Poisoned`.
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

    /// Pushes staged bytes to the transport. Not needed for correctness (`finish` flushes);
    /// useful to bound latency when writing into a pipe.
    ///
    /// Errors: `Transport` / `SinkClosed` (retryable: what is still staged stays staged),
    /// `Poisoned`.
    pub fn flush(&mut self) -> Result<()> {
        if self.state == State::Poisoned {
            bail!(Poisoned, "an earlier failure left part of a tensor on the transport");
        }
        self.flush_staging()
    }

    /// Writes the index, the metadata block and the trailer, and returns the file size in
    /// bytes. Idempotent once it succeeded; a failed call can be retried and continues where
    /// it stopped. Until it succeeds the output is not a valid container.
    ///
    /// Errors: `Poisoned`, `Transport`, `SinkClosed`, `LimitExceeded` (offsets overflow u64).
    pub fn finish(&mut self) -> Result<u64> {
        match self.state {
            State::Finished => return Ok(self.position),
            State::Poisoned => bail!(Poisoned, "an earlier failure left part of a tensor on the transport"),
            State::Open => self.stage_index()?,
            State::Finishing => {}
        }
        self.flush_staging()?;
        self.state = State::Finished;
        Ok(self.position)
    }

    fn check_open(&self) -> Result<()> {
        match self.state {
            State::Open => Ok(()),
            State::Poisoned => bail!(Poisoned, "an earlier failure left part of a tensor on the transport"),
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

    fn unsent(&self) -> usize {
        self.staging.len() - self.staged_sent
    }

    fn stage(&mut self, b: &[u8]) {
        self.staging.extend_from_slice(b);
        self.position += b.len() as u64;
    }

    fn stage_zeros(&mut self, n: usize) {
        self.staging.resize(self.staging.len() + n, 0);
        self.position += n as u64;
    }

    fn put_payload(&mut self, p: &[u8]) -> Result<()> {
        if self.unsent() + p.len() <= WRITE_STAGING_BYTES {
            self.stage(p);
            return Ok(());
        }
        self.flush_staging()?;
        if p.len() <= WRITE_STAGING_BYTES {
            self.stage(p);
            return Ok(());
        }
        let mut rest = p;
        while !rest.is_empty() {
            let n = write_once(&mut self.transport, rest)?;
            rest = &rest[n..];
            self.written += n as u64;
            self.position += n as u64;
        }
        Ok(())
    }

    fn flush_staging(&mut self) -> Result<()> {
        while self.staged_sent < self.staging.len() {
            let n = write_once(&mut self.transport, &self.staging[self.staged_sent..])?;
            self.staged_sent += n;
            self.written += n as u64;
        }
        self.staging.clear();
        self.staged_sent = 0;
        Ok(())
    }

    /// Forgets everything staged after logical offset `pos` (only bytes that never reached the
    /// transport: the caller checked `written <= pos`).
    fn rollback_to(&mut self, pos: u64) {
        debug_assert!(self.written <= pos);
        let keep = (pos - self.written) as usize;
        self.staging.truncate(self.staged_sent + keep);
        self.position = pos;
    }
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
