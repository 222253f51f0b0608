//! Making a descriptor from its parts with the library's defaults (docs/spec/c-abi.md
//! §Descriptors: reading and building): the one place that chooses a default buffer table and
//! the descriptor version. The C ABI's builder, its one-call spec and the encoder's batch path
//! all go through [`DescriptorParts::build`].

use crate::descriptor::{
    check_metadata_entry, check_metadata_list, LayoutDescriptor, PagingInfo, Quantization, SparseInfo, TensorDescriptor,
};
use crate::error::{bail, err, Result};
use crate::{
    BufferHandle, DeviceTag, ElementType, Shape, SyncMode, MAX_DESCRIPTOR_BYTES, MAX_METADATA_ENTRIES,
    MIN_BUFFER_ALIGNMENT,
};

/// The fields of a descriptor before validation. An empty `buffers` asks for the default
/// table: for a block quantization kind, the buffers the kind needs (buffer 0 after the byte
/// offset); for a row- or column-major layout, one CPU buffer of exactly `byte_offset` plus
/// the element bytes at 64-byte alignment. Other layouts need an explicit table.
#[derive(Clone, Debug)]
pub struct DescriptorParts {
    /// Stored element type.
    pub element_type: ElementType,
    /// Logical shape.
    pub shape: Shape,
    /// Layout of buffer 0.
    pub layout: LayoutDescriptor,
    /// Offset of element 0 in buffer 0, in bytes.
    pub byte_offset: u64,
    /// The buffer table; empty for the default.
    pub buffers: Vec<BufferHandle>,
    /// Quantization block, if any.
    pub quantization: Option<Quantization>,
    /// Sparse block (COO/CSR/CSC/BSR layouts).
    pub sparse: Option<SparseInfo>,
    /// Paging block (block-paged layout).
    pub paging: Option<PagingInfo>,
    /// Name, if any.
    pub name: Option<String>,
    /// Metadata entries in order.
    pub metadata: Vec<(String, Vec<u8>)>,
}

impl DescriptorParts {
    /// A row-major descriptor's parts with nothing else set.
    pub fn new(element_type: ElementType, shape: Shape) -> Self {
        DescriptorParts {
            element_type,
            shape,
            layout: LayoutDescriptor::RowMajor,
            byte_offset: 0,
            buffers: Vec::new(),
            quantization: None,
            sparse: None,
            paging: None,
            name: None,
            metadata: Vec::new(),
        }
    }

    /// The default buffer table for these parts (see the type's documentation), or the given
    /// one. Errors: `InvalidShape` (a byte count overflows u64), `InvalidLayout` (no table
    /// for a layout that has no default), the block kind's own errors.
    pub fn buffer_table(&self) -> Result<Vec<BufferHandle>> {
        if !self.buffers.is_empty() {
            return Ok(self.buffers.clone());
        }
        let overflow = || {
            err!(InvalidShape, "byte count of {:?} plus offset {} overflows u64", self.shape.dims(), self.byte_offset)
        };
        let sizes = match (&self.quantization, &self.layout) {
            (Some(Quantization::Block(bq)), _) => {
                let mut sizes = bq.buffer_sizes(self.element_type, &self.shape)?;
                sizes[0] = sizes[0].checked_add(self.byte_offset).ok_or_else(overflow)?;
                sizes
            }
            (_, LayoutDescriptor::RowMajor | LayoutDescriptor::ColumnMajor) => {
                let bytes = self.element_type.bytes_for(self.shape.element_count()).ok_or_else(overflow)?;
                vec![bytes.checked_add(self.byte_offset).ok_or_else(overflow)?]
            }
            (_, layout) => bail!(InvalidLayout, "a {} layout needs an explicit buffer table", layout.name()),
        };
        sizes
            .into_iter()
            .map(|n| BufferHandle::new(n, MIN_BUFFER_ALIGNMENT, DeviceTag::Cpu, SyncMode::ProducerSynced))
            .collect()
    }

    /// Validates the parts and makes the descriptor, at the lowest version that can encode it
    /// ([`TensorDescriptor::required_version`]). Errors: every validation error of
    /// [`TensorDescriptor::new`], [`with_name`](TensorDescriptor::with_name) and
    /// [`with_metadata`](TensorDescriptor::with_metadata), and `LimitExceeded` when the
    /// encoding would be longer than [`MAX_DESCRIPTOR_BYTES`].
    pub fn build(self) -> Result<TensorDescriptor> {
        let buffers = self.buffer_table()?;
        check_metadata(&self.metadata)?;
        let string_bytes = self.name.as_ref().map_or(0, |n| n.len())
            + self.metadata.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        let blocks = if self.sparse.is_some() || self.paging.is_some() {
            crate::DESCRIPTOR_VERSION_2
        } else {
            crate::DESCRIPTOR_VERSION
        };
        let version = blocks.max(crate::min_version_for(self.element_type, self.quantization.as_ref()));
        let mut d = TensorDescriptor::new(
            version,
            0,
            self.element_type,
            self.shape,
            self.byte_offset,
            self.layout,
            buffers,
            self.quantization,
            self.sparse,
            self.paging,
            None,
        )?;
        if let Some(n) = self.name {
            d = d.with_name(n)?;
        }
        d.replace_checked_metadata(self.metadata);
        // The encoding is at most MAX_DESCRIPTOR_BYTES (docs/spec/descriptor.md §Limits). All
        // but the name and metadata is a few KiB at most (rank ≤ 32, ≤ 64 buffers, fixed-size
        // blocks), so only strings near the limit can pass it: that descriptor is encoded to
        // measure it, and a refusal here is the one `encode` would give.
        if string_bytes > MAX_DESCRIPTOR_BYTES / 2 {
            d.encode()?;
        }
        Ok(d)
    }
}

/// Checks a whole metadata list once: every entry's limits, unique keys, the entry count.
/// Errors: `InvalidArgument`, `LimitExceeded`, `DuplicateName`.
pub fn check_metadata(metadata: &[(String, Vec<u8>)]) -> Result<()> {
    check_metadata_list(metadata.iter().map(|(k, v)| (k.as_str(), v.as_slice())))
}

/// Checks one more metadata entry against those already accepted: its limits, a unique key,
/// the entry count. Errors: `InvalidArgument`, `LimitExceeded`, `DuplicateName`.
pub fn check_new_metadata_entry(existing: &[(String, Vec<u8>)], key: &str, value: &[u8]) -> Result<()> {
    check_metadata_entry(key, value)?;
    if existing.iter().any(|(k, _)| k == key) {
        bail!(DuplicateName, "metadata key {key:?} is already present");
    }
    if existing.len() >= MAX_METADATA_ENTRIES {
        bail!(LimitExceeded, "more than {MAX_METADATA_ENTRIES} metadata entries");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_string_limit_at_once() -> DescriptorParts {
        let mut p = DescriptorParts::new(ElementType::Float32, Shape::new(vec![4]).unwrap());
        p.name = Some("n".repeat(crate::MAX_NAME_BYTES));
        p.metadata = (0..MAX_METADATA_ENTRIES)
            .map(|i| (format!("key-{i:03}"), vec![7u8; crate::MAX_METADATA_VALUE_BYTES]))
            .collect();
        p
    }

    #[test]
    fn a_descriptor_whose_encoding_passes_the_limit_is_refused_when_built() {
        // Every entry is within its own limit; together they encode past MAX_DESCRIPTOR_BYTES.
        let e = every_string_limit_at_once().build().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::LimitExceeded, "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&MAX_DESCRIPTOR_BYTES.to_string()), "{msg}");
        assert!(msg.contains("encoded descriptor is 1"), "{msg}");
        // One entry fewer fits: the refusal is the encoding's size, not the entry limits.
        let mut p = every_string_limit_at_once();
        p.metadata.truncate(MAX_METADATA_ENTRIES - 1);
        let d = p.build().unwrap();
        assert!(d.encode().unwrap().len() <= MAX_DESCRIPTOR_BYTES);
    }
}
