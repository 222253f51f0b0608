//! Reading a descriptor's binary encoding (docs/spec/descriptor.md §Encoding): every length is
//! checked against the bytes that remain before anything is allocated, and every decoded
//! descriptor is validated as if it had been built.

use std::sync::Arc;

use super::encode::metadata_block_bytes;
use super::validate::check_metadata_entry;
use super::{
    min_version_for, CompositeInfo, IndexType, LayoutDescriptor, MetadataList, PagingInfo, Quantization, SparseInfo,
    TensorDescriptor,
};
use crate::buffer::{BufferHandle, BUFFER_HANDLE_BYTES};
use crate::error::{bail, err, Error, ErrorKind, Result};
use crate::names::check_name;
use crate::quant::{BlockKind, BlockQuant};
use crate::shape::Shape;
use crate::types::ElementType;
use crate::wire::{
    COMPOSITE_BLOCK_FIXED_BYTES, DESCRIPTOR_MAGIC, DESCRIPTOR_VERSION, EXT_COMPOSITE, EXT_KNOWN_V2, EXT_METADATA,
    EXT_NAME, EXT_PAGING, EXT_QUANT, EXT_SPARSE, FIXED_BYTES, MAX_BUFFERS, MAX_COMPOSITE_MEMBERS, MAX_DESCRIPTOR_BYTES,
    MAX_DESCRIPTOR_VERSION, MAX_METADATA_ENTRIES, MAX_METADATA_KEY_BYTES, MAX_METADATA_VALUE_BYTES, MAX_NAME_BYTES,
    MAX_RANK, MAX_ROLE_BYTES, PAGING_BLOCK_BYTES, QUANT_BYTES, SPARSE_BLOCK_BYTES,
};

impl TensorDescriptor {
    /// Decodes and validates an encoding produced by [`encode`](Self::encode). The whole slice
    /// must be consumed. Never allocates more than a small multiple of `bytes.len()`.
    ///
    /// Errors: `InvalidMagic`, `VersionMismatch`, `Corrupt` (truncated, trailing bytes, bad
    /// UTF-8, non-zero reserved bytes), `Unsupported` (reserved layouts, extensions, or
    /// quantization kinds), `LimitExceeded`, plus every error of [`new`](Self::new).
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() > MAX_DESCRIPTOR_BYTES {
            bail!(LimitExceeded, "descriptor of {} bytes exceeds {MAX_DESCRIPTOR_BYTES}", bytes.len());
        }
        let mut c = Cursor { b: bytes, pos: 0 };
        if c.take(4)? != DESCRIPTOR_MAGIC {
            bail!(InvalidMagic, "descriptor does not start with \"HRDS\"");
        }
        let version = c.u16()?;
        let v2 = version == crate::DESCRIPTOR_VERSION_2;
        if !(DESCRIPTOR_VERSION..=MAX_DESCRIPTOR_VERSION).contains(&version) {
            bail!(VersionMismatch, "descriptor version {version} (this build reads 1 and {MAX_DESCRIPTOR_VERSION})");
        }
        let flags = c.u16()?;
        let element_type = ElementType::from_code(c.u8()?)?;
        let layout_code = c.u8()?;
        let rank = c.u8()? as usize;
        let nbuf = c.u8()? as usize;
        let ext = c.u32()?;
        let byte_offset = c.u64()?;
        if layout_code > 2 && !(v2 && layout_code <= 7) {
            if layout_code <= 7 {
                bail!(Unsupported, "layout code {layout_code} (sparse/paged) is reserved in version 1");
            }
            bail!(InvalidLayout, "unknown layout code {layout_code}");
        }
        if rank > MAX_RANK {
            bail!(InvalidShape, "rank {rank} exceeds the maximum {MAX_RANK}");
        }
        if nbuf > MAX_BUFFERS {
            bail!(LimitExceeded, "{nbuf} buffers exceed the maximum {MAX_BUFFERS}");
        }
        if !v2 && ext & (EXT_SPARSE | EXT_PAGING | EXT_COMPOSITE) != 0 {
            bail!(Unsupported, "sparse, paging and composite extension blocks need descriptor version 2");
        }
        if ext & !EXT_KNOWN_V2 != 0 {
            bail!(Unsupported, "unknown extension bits {:#x}", ext & !EXT_KNOWN_V2);
        }
        let mut dims = [0u64; MAX_RANK];
        for d in &mut dims[..rank] {
            *d = c.u64()?;
        }
        let shape = Shape::from_dims(&dims[..rank])?;
        let layout = match layout_code {
            0 => LayoutDescriptor::RowMajor,
            1 => LayoutDescriptor::ColumnMajor,
            3 => LayoutDescriptor::Coo,
            4 => LayoutDescriptor::Csr,
            5 => LayoutDescriptor::Csc,
            6 => LayoutDescriptor::Bsr,
            7 => LayoutDescriptor::BlockPaged,
            _ => {
                let mut s = Vec::with_capacity(rank);
                for _ in 0..rank {
                    s.push(c.u64()? as i64);
                }
                LayoutDescriptor::Strided(s)
            }
        };
        // Every entry is checked in table order, then the table is made in one allocation.
        let table = c.pos;
        for _ in 0..nbuf {
            BufferHandle::decode(c.take(BUFFER_HANDLE_BYTES)?)?;
        }
        let buffers: Arc<[BufferHandle]> = bytes[table..c.pos]
            .chunks_exact(BUFFER_HANDLE_BYTES)
            .map(|b| BufferHandle::decode(b).expect("decoded above"))
            .collect();
        let name = if ext & EXT_NAME != 0 { Some(decode_name(&mut c)?) } else { None };
        let mut metadata = Vec::new();
        if ext & EXT_METADATA != 0 {
            metadata = decode_metadata_block(&mut c)?;
        }
        let mut quantization = None;
        if ext & EXT_QUANT != 0 {
            let q = c.take(QUANT_BYTES)?;
            let kind = q[0];
            let dq = ElementType::from_code(q[1])?;
            if let Some(bk) = BlockKind::from_code(kind) {
                if version < 2 {
                    bail!(Unsupported, "quantization kind {kind} ({}) needs descriptor version 2", bk.name());
                }
                if q[3] != 0 || q[16..24].iter().any(|&x| x != 0) {
                    bail!(Corrupt, "reserved bytes of the {} quantization block are not zero", bk.name());
                }
                let u = |i: usize| u32::from_le_bytes(q[i..i + 4].try_into().unwrap());
                quantization = Some(Quantization::Block(BlockQuant {
                    kind: bk,
                    dequantized: dq,
                    scale_type: ElementType::from_code(q[2])?,
                    axis: u(4),
                    block: u(8),
                    block2: u(12),
                }));
            }
        }
        if ext & EXT_QUANT != 0 && quantization.is_none() {
            let q = &bytes[c.pos - QUANT_BYTES..c.pos];
            let kind = q[0];
            let dq = ElementType::from_code(q[1])?;
            if q[2] != 0 || q[3] != 0 {
                bail!(Corrupt, "reserved quantization bytes are not zero");
            }
            let axis = u32::from_le_bytes(q[4..8].try_into().unwrap());
            let scale = f64::from_le_bytes(q[8..16].try_into().unwrap());
            let bias = f64::from_le_bytes(q[16..24].try_into().unwrap());
            // Fields a kind does not use must be zero, so every accepted encoding is the one
            // `encode` writes (no hidden bits outside the checksummed meaning).
            let unused_nonzero = match kind {
                1 => axis != 0,
                2 => scale.to_bits() != 0 || bias.to_bits() != 0,
                3 => axis != 0 || scale.to_bits() != 0 || bias.to_bits() != 0,
                _ => false,
            };
            if unused_nonzero {
                bail!(Corrupt, "quantization kind {kind} has non-zero bytes in fields it does not use");
            }
            quantization = Some(match kind {
                1 => Quantization::PerTensorAffine { scale, bias, dequantized: dq },
                2 => Quantization::PerChannelAffine { axis, dequantized: dq },
                3 => Quantization::Cast { dequantized: dq },
                _ => bail!(Corrupt, "unknown quantization kind {kind}"),
            });
        }
        let sparse = if ext & EXT_SPARSE != 0 { Some(SparseInfo::decode(&mut c)?) } else { None };
        let paging = if ext & EXT_PAGING != 0 { Some(PagingInfo::decode(&mut c)?) } else { None };
        let composite = if ext & EXT_COMPOSITE != 0 { Some(CompositeInfo::decode(&mut c)?) } else { None };
        if c.pos != bytes.len() {
            bail!(Corrupt, "{} trailing bytes after the descriptor", bytes.len() - c.pos);
        }
        if v2
            && sparse.is_none()
            && paging.is_none()
            && composite.is_none()
            && min_version_for(element_type, quantization.as_ref()) < crate::DESCRIPTOR_VERSION_2
        {
            bail!(Corrupt, "a version-2 descriptor uses no version-2 block (it must be written as version 1)");
        }
        let mut d = TensorDescriptor::with_table(
            version,
            flags,
            element_type,
            shape,
            byte_offset,
            layout,
            buffers,
            quantization,
            sparse,
            paging,
            composite,
        )?;
        d.name = name;
        d.metadata = MetadataList::from_vec(metadata);
        Ok(d)
    }
}

/// Reads a name block (its length, then that many bytes of UTF-8).
fn decode_name(c: &mut Cursor) -> Result<String> {
    let n = c.u32()? as usize;
    if n > MAX_NAME_BYTES {
        bail!(LimitExceeded, "name of {n} bytes exceeds {MAX_NAME_BYTES}");
    }
    let n = c.utf8(n)?;
    // Same rules as `with_name` (no NUL: the C ABI hands names out NUL-terminated).
    check_name(&n)?;
    Ok(n)
}

/// A decoded descriptor and where its name and metadata lie in its encoding: a stream decoder
/// keeps one for the last descriptor it accepted, and decodes the next encoding from it when
/// that differs only in the name and metadata (a stream of same-shaped named tensors), so that
/// the result shares the last one's dimensions, buffer table and (when equal) metadata list
/// instead of allocating them again (docs/spec/c-abi.md §Decoders and encoders).
pub(crate) struct DecodeTemplate {
    /// The descriptor, without its name.
    desc: TensorDescriptor,
    /// Whether the encoding has a name block.
    named: bool,
    /// Offsets in the encoding: the end of the buffer table (where the name block, else the
    /// metadata block, starts), the start of the metadata block, the end of it.
    strings: usize,
    metadata: usize,
    rest: usize,
}

impl DecodeTemplate {
    /// The template of `d`, a descriptor decoded from an encoding (so `d.encode()` is it).
    pub(crate) fn of(d: &TensorDescriptor) -> Self {
        let strides = d.strides().map_or(0, <[i64]>::len);
        let strings = FIXED_BYTES + 8 * (d.shape.rank() + strides) + BUFFER_HANDLE_BYTES * d.buffers.len();
        let metadata = strings + d.name.as_ref().map_or(0, |n| 4 + n.len());
        let rest = metadata + if d.metadata.is_empty() { 0 } else { metadata_block_bytes(&d.metadata) };
        DecodeTemplate { desc: d.clone_unnamed(), named: d.name.is_some(), strings, metadata, rest }
    }

    /// What [`TensorDescriptor::decode`] returns for `prev` itself, the encoding this template
    /// was made from, when that has no name: the template's descriptor (shared, nothing
    /// compared or read). `None` for a named one (then use [`decode`](Self::decode)).
    pub(crate) fn repeat(&self) -> Option<TensorDescriptor> {
        (!self.named).then(|| self.desc.clone_unnamed())
    }

    /// Exactly what [`TensorDescriptor::decode`]`(bytes)` returns, value or error, given `prev`,
    /// the encoding this template was made from. When `bytes` equals `prev` up to the name
    /// block and after the metadata block, only the name and metadata are read (with decode's
    /// checks) and the rest is shared with the template: equal bytes at the same offsets from
    /// the end decode to the same values and pass the same checks, none of which looks at the
    /// name or metadata. Anything else, an error included, takes the full decode.
    pub(crate) fn decode(&self, prev: &[u8], bytes: &[u8]) -> Result<TensorDescriptor> {
        match self.decode_strings(prev, bytes) {
            Some(d) => Ok(d),
            None => TensorDescriptor::decode(bytes),
        }
    }

    /// The descriptor of `bytes` when only its name and metadata differ from `prev` and they
    /// decode without error; else `None`.
    fn decode_strings(&self, prev: &[u8], bytes: &[u8]) -> Option<TensorDescriptor> {
        if bytes.len() > MAX_DESCRIPTOR_BYTES || bytes.get(..self.strings)? != prev.get(..self.strings)? {
            return None;
        }
        let mut c = Cursor { b: bytes, pos: self.strings };
        let name = if self.named { Some(decode_name(&mut c).ok()?) } else { None };
        let mut d = self.desc.clone_unnamed();
        // The prefix equals `prev`'s, so the extension bits do too: a metadata block is
        // present exactly when the template has entries.
        if bytes[c.pos..] != *prev.get(self.metadata..)? {
            if !d.metadata.is_empty() {
                d.metadata = MetadataList::from_vec(decode_metadata_block(&mut c).ok()?);
            }
            if bytes[c.pos..] != *prev.get(self.rest..)? {
                return None;
            }
        }
        d.name = name;
        Some(d)
    }
}

impl SparseInfo {
    fn decode(c: &mut Cursor<'_>) -> Result<Self> {
        let b = c.take(SPARSE_BLOCK_BYTES)?;
        let index_type = IndexType::from_code(b[0])?;
        if b[1] > 1 || b[2] != 0 || b[3] != 0 || b[12..16] != [0; 4] {
            bail!(Corrupt, "reserved bytes of the sparse block are not zero");
        }
        Ok(SparseInfo {
            index_type,
            canonical: b[1] == 1,
            block_rows: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            block_cols: u32::from_le_bytes(b[8..12].try_into().unwrap()),
            nnz: u64::from_le_bytes(b[16..24].try_into().unwrap()),
        })
    }
}

impl PagingInfo {
    fn decode(c: &mut Cursor<'_>) -> Result<Self> {
        let b = c.take(PAGING_BLOCK_BYTES)?;
        let index_type = IndexType::from_code(b[0])?;
        if b[1..4] != [0; 3] {
            bail!(Corrupt, "reserved bytes of the paging block are not zero");
        }
        Ok(PagingInfo {
            index_type,
            page_size: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            block_count: u64::from_le_bytes(b[8..16].try_into().unwrap()),
            page_count: u64::from_le_bytes(b[16..24].try_into().unwrap()),
        })
    }
}

impl CompositeInfo {
    fn decode(c: &mut Cursor<'_>) -> Result<Self> {
        let b = c.take(COMPOSITE_BLOCK_FIXED_BYTES)?;
        let count = u32::from_le_bytes(b[0..4].try_into().unwrap());
        let depth = u16::from_le_bytes(b[4..6].try_into().unwrap());
        let index = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if b[6..8] != [0; 2] || b[12..16] != [0; 4] {
            bail!(Corrupt, "reserved bytes of the composite block are not zero");
        }
        if count > MAX_COMPOSITE_MEMBERS {
            bail!(LimitExceeded, "{count} members exceed the maximum {MAX_COMPOSITE_MEMBERS}");
        }
        // Each role takes at least 3 bytes: never size by a count the input cannot back.
        let left = c.b.len() - c.pos;
        if count as usize * 3 > left {
            bail!(Corrupt, "composite block lists {count} roles but only {left} bytes remain");
        }
        let mut roles = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let n = c.u16()? as usize;
            if n > MAX_ROLE_BYTES {
                bail!(LimitExceeded, "role of {n} bytes exceeds {MAX_ROLE_BYTES}");
            }
            roles.push(c.utf8(n)?);
        }
        let ci = CompositeInfo { depth, index, roles };
        ci.validate()?;
        Ok(ci)
    }
}

/// Reads a metadata block, checking every limit before taking bytes (1..=256 entries, keys
/// 1..=256 bytes of UTF-8 without NUL and unique, values up to 64 KiB).
fn decode_metadata_block(c: &mut Cursor) -> Result<Vec<(String, Vec<u8>)>> {
    let count = c.u32()? as usize;
    if count == 0 || count > MAX_METADATA_ENTRIES {
        bail!(Corrupt, "metadata block with {count} entries");
    }
    let mut metadata: Vec<(String, Vec<u8>)> = Vec::new();
    for _ in 0..count {
        let kl = c.u32()? as usize;
        if kl > MAX_METADATA_KEY_BYTES {
            bail!(LimitExceeded, "metadata key of {kl} bytes");
        }
        let k = c.utf8(kl)?;
        let vl = c.u32()? as usize;
        if vl > MAX_METADATA_VALUE_BYTES {
            bail!(LimitExceeded, "metadata value of {vl} bytes");
        }
        let v = c.take(vl)?.to_vec();
        check_metadata_entry(&k, &v)?;
        if metadata.iter().any(|(x, _)| *x == k) {
            bail!(DuplicateName, "metadata key {k:?} repeated");
        }
        metadata.push((k, v));
    }
    Ok(metadata)
}

/// Decodes a stream metadata block (exactly `bytes`; trailing bytes are `Corrupt`).
pub fn decode_stream_metadata(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut c = Cursor { b: bytes, pos: 0 };
    let md = decode_metadata_block(&mut c)?;
    if c.pos != bytes.len() {
        bail!(Corrupt, "{} trailing bytes after the stream metadata block", bytes.len() - c.pos);
    }
    Ok(md)
}

/// Bounds-checked little-endian reader over a byte slice.
pub(super) struct Cursor<'a> {
    pub(super) b: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| {
            Error::new(
                ErrorKind::Corrupt,
                format!("needs {n} bytes at offset {}, only {} left", self.pos, self.b.len() - self.pos),
            )
        })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    pub(super) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub(super) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub(super) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub(super) fn utf8(&mut self, n: usize) -> Result<String> {
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| err!(Corrupt, "string field is not UTF-8"))
    }
}
