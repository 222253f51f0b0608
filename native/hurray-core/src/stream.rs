//! The stream format's reader and writer state machines (docs/spec/stream.md).
//!
//! Both sides keep the four transport rules (docs/spec/stream.md §Transport rules): short counts
//! are normal; `0` from read is end of input and `0` from write is a closed sink; a failing
//! transport call moved no bytes, so the reader resumes exactly where it stopped; a write that
//! fails after an item's first byte poisons the writer.

use std::mem::MaybeUninit;

use crate::decoder::{Decoded, StreamDecoder};
use crate::descriptor::TensorDescriptor;
use crate::encoder::{OutSeg, StreamEncoder};
use crate::error::{bail, Error, ErrorKind, Result};
use crate::pool::BufferPool;

// What a caller of the stream reader and writer needs, under the stream's name: the limits
// and options live with the decoder and encoder that enforce them, the framing constants in
// `wire`.
pub use crate::decoder::{ReaderOptions, EAGER_RESERVE_BYTES, READ_AHEAD_BYTES};
pub use crate::encoder::{WriterOptions, COALESCE_BYTES};
pub use crate::tensor::ReadTensor;
pub use crate::wire::{
    FLAG_METADATA, FLAG_PAYLOAD_CRC, FRAME_END, FRAME_HEADER_BYTES, FRAME_METADATA, FRAME_TENSOR, STREAM_HEADER_BYTES,
    STREAM_MAGIC, STREAM_VERSION,
};

/// A byte source (the transport's `read`, docs/spec/stream.md §Transport rules). Return `Ok(n)`
/// after writing `n` initialised bytes to the front of `dst` (`0` = end of input, fewer than
/// `dst.len()` is normal); return `Err` having moved no bytes.
pub trait ReadTransport {
    /// Reads up to `dst.len()` bytes.
    fn read(&mut self, dst: &mut [MaybeUninit<u8>]) -> Result<usize>;
}

/// A byte sink (the transport's `write`, docs/spec/stream.md §Transport rules). Return `Ok(n)`
/// after taking the first `n` bytes of `src` (`0` = the sink is closed); return `Err` having taken
/// none.
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

/// Reads a stream item by item through a [`ReadTransport`]: a [`StreamDecoder`] fed by the
/// transport. One handle, one thread at a time.
pub struct StreamReader<T: ReadTransport> {
    transport: T,
    decoder: StreamDecoder,
}

impl<T: ReadTransport> StreamReader<T> {
    /// A reader over `transport`. Errors: `InvalidArgument` for options above the format
    /// limits (descriptor bytes over 16 MiB, rank over [`MAX_RANK`](crate::MAX_RANK)).
    pub fn new(transport: T, opts: ReaderOptions) -> Result<Self> {
        Ok(StreamReader { transport, decoder: StreamDecoder::new(opts)? })
    }

    /// Sets the pool the reader takes buffer allocations from (`None`: a new allocation per
    /// buffer). The pool may be shared with other readers. Tensors already read keep
    /// returning their allocations to the pool they came from, if it still exists. Takes
    /// effect at the next tensor whose buffers are not yet allocated.
    pub fn set_buffer_pool(&mut self, pool: Option<BufferPool>) {
        self.decoder.set_buffer_pool(pool);
    }

    /// Sets the cap of the reader's pool in bytes: 0 drops the pool (its free allocations are
    /// freed now, as soon as no other reader shares it); otherwise the current pool's cap is
    /// changed, or a new pool is made.
    pub fn set_buffer_pool_bytes(&mut self, max_bytes: u64) {
        self.decoder.set_buffer_pool_bytes(max_bytes);
    }

    /// The reader's pool, if it has one.
    pub fn buffer_pool(&self) -> Option<&BufferPool> {
        self.decoder.buffer_pool()
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The stream's metadata (docs/spec/stream.md §Stream metadata), reading the stream header
    /// and metadata frame first if that was not done yet; empty when the stream has none.
    /// Errors as [`next_tensor`](Self::next_tensor).
    pub fn metadata(&mut self) -> Result<&[(String, Vec<u8>)]> {
        while !self.decoder.poll_header()? {
            self.read_some()?;
        }
        Ok(self.decoder.metadata().unwrap_or(&[]))
    }

    /// One transport read into the region the decoder names.
    fn read_some(&mut self) -> Result<()> {
        let dst = self.decoder.input_buffer()?;
        let asked = dst.len();
        let n = self.transport.read(dst).map_err(transport_err)?;
        if n > asked {
            bail!(Transport, "transport reported {n} bytes read, more than the {asked} asked for");
        }
        self.decoder.commit(n)
    }

    /// Reads the next tensor. `Ok(None)` is the end-of-stream marker (and every call after it).
    ///
    /// Errors: `Transport` (resumable: call again), `Truncated` (input ended inside an item or
    /// before the end marker), `Corrupt`, `InvalidMagic`, `VersionMismatch`, `LimitExceeded`,
    /// descriptor validation errors, `OutOfMemory`. Every error but `Transport` is sticky.
    pub fn next_tensor(&mut self) -> Result<Option<ReadTensor>> {
        loop {
            match self.decoder.poll()? {
                Decoded::Tensor(t) => return Ok(Some(t)),
                Decoded::End => return Ok(None),
                Decoded::NeedInput => self.read_some()?,
            }
        }
    }
}

fn transport_err(e: Error) -> Error {
    if e.kind() == ErrorKind::Transport {
        e
    } else {
        Error::new(ErrorKind::Transport, e.message().to_string())
    }
}

/// Writes a stream through a [`WriteTransport`]: a [`StreamEncoder`] drained into the
/// transport before each call returns. Nothing is retained after a call returns. One handle,
/// one thread at a time.
pub struct StreamWriter<T: WriteTransport> {
    transport: T,
    encoder: StreamEncoder,
}

impl<T: WriteTransport> StreamWriter<T> {
    /// A writer over `transport`. Nothing is written until the first item (or `finish`).
    pub fn new(transport: T, opts: WriterOptions) -> Self {
        StreamWriter { transport, encoder: StreamEncoder::new(opts) }
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
        self.encoder.is_poisoned()
    }

    /// True once `finish` succeeded.
    pub fn is_finished(&self) -> bool {
        self.encoder.is_done()
    }

    /// Marks the writer poisoned: a multi-frame item (a composite) stopped part-way.
    pub(crate) fn poison(&mut self) {
        self.encoder.poison();
    }

    /// Sets the stream's metadata, sent with the stream header (before the first item). Errors
    /// as [`StreamEncoder::set_metadata`].
    pub fn set_metadata(&mut self, metadata: &[(String, Vec<u8>)]) -> Result<()> {
        self.encoder.set_metadata(metadata)
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
        self.encoder.encode(desc, encoded, payloads)?;
        self.drain(payloads)
    }

    /// Writes the end-of-stream marker (and the stream header if nothing was written yet).
    /// Idempotent once it succeeded. Errors as for `write_tensor`.
    pub fn finish(&mut self) -> Result<()> {
        if self.encoder.is_done() {
            return Ok(());
        }
        self.encoder.finish()?;
        self.drain(&[])
    }

    /// Writes the whole pending output; on failure either takes the item back (nothing of it
    /// left) or poisons the writer.
    fn drain(&mut self, payloads: &[&[u8]]) -> Result<()> {
        let mut sent = 0u64;
        while self.encoder.pending_bytes() > 0 {
            let seg = self.encoder.segments()[0];
            let off = self.encoder.offset();
            let bytes: &[u8] = match seg {
                OutSeg::Staged { start, end } => &self.encoder.staged()[start + off..end],
                OutSeg::Borrowed { index, .. } => &payloads[index][off..],
            };
            match write_some(&mut self.transport, bytes) {
                Ok(n) => {
                    self.encoder.consume(n as u64)?;
                    sent += n as u64;
                }
                Err(e) => {
                    if self.encoder.abort(true) {
                        return Err(Error::new(
                            e.kind(),
                            format!("{} after {sent} bytes of the item; the writer is poisoned", e.message()),
                        ));
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// One transport write of a non-empty slice: the count taken (≥ 1, ≤ `bytes.len()`).
fn write_some<T: WriteTransport>(t: &mut T, bytes: &[u8]) -> Result<usize> {
    let n = t.write(bytes).map_err(transport_err)?;
    if n == 0 {
        bail!(SinkClosed, "the sink accepted 0 bytes: it is closed");
    }
    if n > bytes.len() {
        bail!(Transport, "transport reported {n} bytes written, more than the {} offered", bytes.len());
    }
    Ok(n)
}
