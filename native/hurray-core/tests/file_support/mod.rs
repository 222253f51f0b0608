//! Helpers shared by the container tests: in-memory sources and sinks that count and misbehave
//! on request, sample tensors, and byte surgery on valid containers that keeps every checksum
//! right so that the check under test is the one that fires (docs/spec/hrryfile.md).
#![allow(dead_code)]

use std::mem::MaybeUninit;

use hurray_core::crc32c::crc32c;
use hurray_core::file::{Trailer, BUFFER_RECORD_BYTES, ENTRY_BYTES, TRAILER_BYTES};
use hurray_core::stream::WriteTransport;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, Error, ErrorKind, FileWriter, FileWriterOptions, LayoutDescriptor, ReadAt,
    Result, Shape, SyncMode, TensorDescriptor, DESCRIPTOR_VERSION,
};

/// A `read_at`/`size` source over bytes that counts calls, caps each call at `chunk` bytes,
/// fails on request, and records any request outside `[0, len)`.
pub struct VecSource {
    pub bytes: Vec<u8>,
    pub chunk: usize,
    pub calls: u64,
    pub size_calls: u64,
    pub fail_next: u32,
    pub out_of_range: bool,
}

impl VecSource {
    pub fn new(bytes: Vec<u8>) -> Self {
        VecSource { bytes, chunk: usize::MAX, calls: 0, size_calls: 0, fail_next: 0, out_of_range: false }
    }
}

impl ReadAt for VecSource {
    fn size(&mut self) -> Result<u64> {
        self.size_calls += 1;
        Ok(self.bytes.len() as u64)
    }
    fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        if self.fail_next > 0 {
            self.fail_next -= 1;
            return Err(Error::new(ErrorKind::Transport, "test source fails on request"));
        }
        self.calls += 1;
        let len = self.bytes.len() as u64;
        if offset >= len || offset + dst.len() as u64 > len {
            self.out_of_range = true;
        }
        if offset >= len {
            return Ok(0);
        }
        let at = offset as usize;
        let n = dst.len().min(self.chunk).min(self.bytes.len() - at);
        dst[..n].write_copy_of_slice(&self.bytes[at..at + n]);
        Ok(n)
    }
}

/// A sink into a Vec that takes at most `chunk` bytes per call, can fail on request (after
/// `fail_after` more bytes, the next call fails), and counts calls.
pub struct VecSink {
    pub bytes: Vec<u8>,
    pub chunk: usize,
    pub calls: u64,
    pub fail_after: Option<u64>,
}

impl VecSink {
    pub fn new() -> Self {
        VecSink { bytes: Vec::new(), chunk: usize::MAX, calls: 0, fail_after: None }
    }
}

impl WriteTransport for VecSink {
    fn write(&mut self, src: &[u8]) -> Result<usize> {
        self.calls += 1;
        let mut n = src.len().min(self.chunk);
        if let Some(left) = self.fail_after {
            if left == 0 {
                return Err(Error::new(ErrorKind::Transport, "test sink fails on request"));
            }
            n = n.min(left as usize);
            self.fail_after = Some(left - n as u64);
        }
        self.bytes.extend_from_slice(&src[..n]);
        Ok(n)
    }
}

/// A dense tensor named `name` with `bytes` of payload in one buffer of `align` bytes.
pub fn named(name: &str, et: ElementType, dims: Vec<u64>) -> TensorDescriptor {
    TensorDescriptor::dense(et, Shape::new(dims).unwrap()).unwrap().with_name(name).unwrap()
}

/// A uint8 vector of `n` elements whose buffer declares `align`.
pub fn bytes_tensor(name: &str, n: u64, align: u64, tag: DeviceTag) -> TensorDescriptor {
    let h = BufferHandle::new(n, align, tag, SyncMode::ProducerSynced).unwrap();
    TensorDescriptor::new(
        DESCRIPTOR_VERSION,
        0,
        ElementType::Uint8,
        Shape::new(vec![n]).unwrap(),
        0,
        LayoutDescriptor::RowMajor,
        vec![h],
        None,
        None,
        None,
        None,
    )
    .unwrap()
    .with_name(name)
    .unwrap()
}

/// Deterministic payload bytes.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Writes a container of `(descriptor, payloads)` plus metadata into memory.
pub fn build(
    tensors: &[(TensorDescriptor, Vec<Vec<u8>>)],
    metadata: &[(&str, &[u8])],
    opts: FileWriterOptions,
) -> Vec<u8> {
    let mut w = FileWriter::new(VecSink::new(), opts).unwrap();
    for (d, p) in tensors {
        let slices: Vec<&[u8]> = p.iter().map(|v| v.as_slice()).collect();
        w.add_tensor(d, &slices).unwrap();
    }
    for (k, v) in metadata {
        w.set_metadata(k, v).unwrap();
    }
    let size = w.finish().unwrap();
    let bytes = w.into_transport().bytes;
    assert_eq!(bytes.len() as u64, size);
    bytes
}

/// Byte surgery on a valid container. Every `patch_*` re-seals the checksums that cover the
/// changed bytes (record CRC in the entry, entry CRC, index CRC in the trailer, trailer CRC).
pub struct Crafted {
    pub bytes: Vec<u8>,
}

impl Crafted {
    pub fn new(bytes: Vec<u8>) -> Self {
        Crafted { bytes }
    }

    pub fn trailer_at(&self) -> usize {
        self.bytes.len() - TRAILER_BYTES as usize
    }

    pub fn trailer(&self) -> Trailer {
        Trailer::decode(&self.bytes[self.trailer_at()..]).unwrap()
    }

    /// Replaces the trailer (its CRC is recomputed by `encode`).
    pub fn set_trailer(&mut self, t: Trailer) {
        let at = self.trailer_at();
        self.bytes[at..].copy_from_slice(&t.encode());
    }

    pub fn entry_at(&self, i: u64) -> usize {
        (self.trailer().index_offset + i * ENTRY_BYTES) as usize
    }

    pub fn entry_u64(&self, i: u64, field: usize) -> u64 {
        let at = self.entry_at(i) + field;
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap())
    }

    /// (record offset, record length) of entry `i`.
    pub fn record(&self, i: u64) -> (usize, usize) {
        (self.entry_u64(i, 0) as usize, self.entry_u64(i, 8) as usize)
    }

    /// Offset of buffer record `b` of entry `i`.
    pub fn buffer_record_at(&self, i: u64, b: usize) -> usize {
        self.record(i).0 + b * BUFFER_RECORD_BYTES as usize
    }

    pub fn buffer_field(&self, i: u64, b: usize, field: usize) -> u64 {
        let at = self.buffer_record_at(i, b) + field;
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap())
    }

    /// Sets a u64 field (0 offset, 8 length) of buffer record `b` of entry `i`, re-sealing.
    pub fn set_buffer_field(&mut self, i: u64, b: usize, field: usize, v: u64) {
        let at = self.buffer_record_at(i, b) + field;
        self.bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
        self.reseal_record(i);
    }

    /// Applies `f` to the bytes of entry `i`, then re-seals the entry and the index.
    pub fn patch_entry(&mut self, i: u64, f: impl FnOnce(&mut [u8])) {
        let at = self.entry_at(i);
        f(&mut self.bytes[at..at + ENTRY_BYTES as usize]);
        self.reseal_entry(i);
    }

    /// Applies `f` to the record of entry `i`, then re-seals record, entry and index.
    pub fn patch_record(&mut self, i: u64, f: impl FnOnce(&mut [u8])) {
        let (at, len) = self.record(i);
        f(&mut self.bytes[at..at + len]);
        self.reseal_record(i);
    }

    pub fn reseal_record(&mut self, i: u64) {
        let (at, len) = self.record(i);
        let c = crc32c(&self.bytes[at..at + len]);
        let e = self.entry_at(i);
        self.bytes[e + 32..e + 36].copy_from_slice(&c.to_le_bytes());
        self.reseal_entry(i);
    }

    pub fn reseal_entry(&mut self, i: u64) {
        let e = self.entry_at(i);
        let c = crc32c(&self.bytes[e..e + 124]);
        self.bytes[e + 124..e + 128].copy_from_slice(&c.to_le_bytes());
        self.reseal_index();
    }

    pub fn reseal_index(&mut self) {
        let mut t = self.trailer();
        let a = t.index_offset as usize;
        t.index_crc = crc32c(&self.bytes[a..a + t.index_length as usize]);
        self.set_trailer(t);
    }
}
