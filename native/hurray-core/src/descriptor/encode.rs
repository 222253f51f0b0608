//! A descriptor's binary encoding (docs/spec/descriptor.md §Encoding), the version-2 blocks
//! included, and the metadata block that stream metadata shares (docs/spec/stream.md §Stream
//! metadata).

use super::validate::check_metadata_entry;
use super::{CompositeInfo, PagingInfo, Quantization, SparseInfo, TensorDescriptor};
use crate::buffer::BUFFER_HANDLE_BYTES;
use crate::error::{bail, Result};
use crate::wire::{
    DESCRIPTOR_MAGIC, EXT_COMPOSITE, EXT_METADATA, EXT_NAME, EXT_PAGING, EXT_QUANT, EXT_SPARSE, FIXED_BYTES,
    MAX_DESCRIPTOR_BYTES, MAX_METADATA_ENTRIES,
};
use crate::LayoutDescriptor;

impl TensorDescriptor {
    /// The binary encoding (docs/spec/descriptor.md). Errors: `LimitExceeded` if the encoding
    /// would exceed [`MAX_DESCRIPTOR_BYTES`].
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(&mut out)?;
        Ok(out)
    }

    /// As [`encode`](Self::encode), into `out` (cleared first; its allocation is reused, so a
    /// caller that encodes one descriptor after another allocates only when one outgrows it).
    /// On an error `out` holds no valid encoding.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        let rank = self.shape.rank();
        let mut ext = 0u32;
        if self.name.is_some() {
            ext |= EXT_NAME;
        }
        if !self.metadata.is_empty() {
            ext |= EXT_METADATA;
        }
        if self.ext().quantization.is_some() {
            ext |= EXT_QUANT;
        }
        if self.ext().sparse.is_some() {
            ext |= EXT_SPARSE;
        }
        if self.ext().paging.is_some() {
            ext |= EXT_PAGING;
        }
        if self.ext().composite.is_some() {
            ext |= EXT_COMPOSITE;
        }
        // Sized for the fixed part, dims and strides, buffer table, name and metadata, plus
        // room for the quantization block (and, after the encoding, a name and NUL appended by
        // the C ABI's handles), so the usual descriptor costs one allocation.
        let name_bytes = self.name.as_ref().map_or(0, |n| 4 + n.len());
        let metadata_bytes = metadata_block_bytes(&self.metadata);
        out.clear();
        out.reserve(
            FIXED_BYTES + rank * 16 + self.buffers.len() * BUFFER_HANDLE_BYTES + 2 * name_bytes + metadata_bytes + 64,
        );
        out.extend_from_slice(&DESCRIPTOR_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.push(self.element_type.code());
        out.push(self.ext().layout.code());
        out.push(rank as u8);
        out.push(self.buffers.len() as u8);
        out.extend_from_slice(&ext.to_le_bytes());
        out.extend_from_slice(&self.byte_offset.to_le_bytes());
        for d in self.shape.dims() {
            out.extend_from_slice(&d.to_le_bytes());
        }
        if let LayoutDescriptor::Strided(s) = &self.ext().layout {
            for x in s {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        for b in self.buffers.iter() {
            out.extend_from_slice(&b.encode());
        }
        if let Some(n) = &self.name {
            out.extend_from_slice(&(n.len() as u32).to_le_bytes());
            out.extend_from_slice(n.as_bytes());
        }
        if !self.metadata.is_empty() {
            encode_metadata_block(out, &self.metadata);
        }
        if let Some(Quantization::Block(b)) = &self.ext().quantization {
            out.push(b.kind as u8);
            out.push(b.dequantized.code());
            out.push(b.scale_type.code());
            out.push(0);
            out.extend_from_slice(&b.axis.to_le_bytes());
            out.extend_from_slice(&b.block.to_le_bytes());
            out.extend_from_slice(&b.block2.to_le_bytes());
            out.extend_from_slice(&[0; 8]);
        } else if let Some(q) = &self.ext().quantization {
            let (axis, scale, bias) = match *q {
                Quantization::PerTensorAffine { scale, bias, .. } => (0u32, scale, bias),
                Quantization::PerChannelAffine { axis, .. } => (axis, 0.0, 0.0),
                Quantization::Cast { .. } => (0, 0.0, 0.0),
                Quantization::Block(_) => unreachable!("encoded above"),
            };
            out.push(q.code());
            out.push(q.dequantized().code());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&axis.to_le_bytes());
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend_from_slice(&bias.to_le_bytes());
        }
        if let Some(s) = &self.ext().sparse {
            s.encode(out);
        }
        if let Some(p) = &self.ext().paging {
            p.encode(out);
        }
        if let Some(c) = &self.ext().composite {
            c.encode(out);
        }
        if out.len() > MAX_DESCRIPTOR_BYTES {
            let len = out.len();
            out.clear();
            bail!(LimitExceeded, "encoded descriptor is {} bytes, over {MAX_DESCRIPTOR_BYTES}", len);
        }
        Ok(())
    }
}

impl SparseInfo {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.index_type.code());
        out.push(u8::from(self.canonical));
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.block_rows.to_le_bytes());
        out.extend_from_slice(&self.block_cols.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.nnz.to_le_bytes());
    }
}

impl PagingInfo {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.index_type.code());
        out.extend_from_slice(&[0; 3]);
        out.extend_from_slice(&self.page_size.to_le_bytes());
        out.extend_from_slice(&self.block_count.to_le_bytes());
        out.extend_from_slice(&self.page_count.to_le_bytes());
    }
}

impl CompositeInfo {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.roles.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for r in &self.roles {
            out.extend_from_slice(&(r.len() as u16).to_le_bytes());
            out.extend_from_slice(r.as_bytes());
        }
    }
}

/// The length of `metadata`'s block as [`encode_metadata_block`] writes it.
pub(super) fn metadata_block_bytes(metadata: &[(String, Vec<u8>)]) -> usize {
    4 + metadata.iter().map(|(k, v)| 8 + k.len() + v.len()).sum::<usize>()
}

/// Appends a metadata block (u32 entry count, then per entry u32 key length, key, u32 value
/// length, value; docs/spec/descriptor.md §Encoding).
fn encode_metadata_block(out: &mut Vec<u8>, metadata: &[(String, Vec<u8>)]) {
    out.extend_from_slice(&(metadata.len() as u32).to_le_bytes());
    for (k, v) in metadata {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
}

/// Validates and encodes a stream's metadata (docs/spec/stream.md §Stream metadata): the same
/// block and rules as a descriptor's metadata. Errors: `InvalidArgument` (no entries, a bad
/// key), `LimitExceeded`, `DuplicateName`.
pub fn encode_stream_metadata(metadata: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    if metadata.is_empty() {
        bail!(InvalidArgument, "stream metadata needs at least one entry (omit it instead)");
    }
    if metadata.len() > MAX_METADATA_ENTRIES {
        bail!(LimitExceeded, "more than {MAX_METADATA_ENTRIES} metadata entries");
    }
    for (i, (k, v)) in metadata.iter().enumerate() {
        check_metadata_entry(k, v)?;
        if metadata[..i].iter().any(|(x, _)| x == k) {
            bail!(DuplicateName, "metadata key {k:?} repeated");
        }
    }
    let mut out = Vec::new();
    encode_metadata_block(&mut out, metadata);
    Ok(out)
}
