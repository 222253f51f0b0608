//! The rules every descriptor obeys (docs/spec/descriptor.md §Validation, §Version policy):
//! the version, the buffer table against the shape and layout, quantization, metadata entries,
//! and the descriptor-level rules of the version-2 layouts (sparse, block-paged, composite
//! head). Checks of buffer *contents* (sparse indices, page tables) are in `crate::layouts`.

use super::{CompositeInfo, LayoutDescriptor, PagingInfo, Quantization, SparseInfo, TensorDescriptor};
use crate::buffer::BufferHandle;
use crate::error::{bail, err, Result};
use crate::names::check_name;
use crate::quant::BlockQuant;
use crate::shape::Shape;
use crate::types::ElementType;
use crate::wire::{
    DESCRIPTOR_VERSION, MAX_BUFFERS, MAX_COMPOSITE_DEPTH, MAX_COMPOSITE_MEMBERS, MAX_DESCRIPTOR_VERSION,
    MAX_METADATA_ENTRIES, MAX_METADATA_KEY_BYTES, MAX_METADATA_VALUE_BYTES, MAX_ROLE_BYTES,
};

impl TensorDescriptor {
    pub(super) fn validate(&self) -> Result<()> {
        if !(DESCRIPTOR_VERSION..=MAX_DESCRIPTOR_VERSION).contains(&self.version) {
            bail!(
                VersionMismatch,
                "descriptor version {} (this build reads 1 and {MAX_DESCRIPTOR_VERSION})",
                self.version
            );
        }
        let need = self.required_version();
        if self.version < need
            && self.ext().sparse.is_none()
            && self.ext().paging.is_none()
            && self.ext().composite.is_none()
        {
            bail!(
                Unsupported,
                "a version-{} descriptor cannot use {} (needs version {need})",
                self.version,
                self.version2_feature()
            );
        }
        if self.version != need {
            bail!(
                VersionMismatch,
                "this descriptor must be version {need}, not {} (the lowest version that encodes it)",
                self.version
            );
        }
        if self.flags != 0 {
            bail!(InvalidArgument, "descriptor flags {:#06x} are reserved and must be 0", self.flags);
        }
        if self.buffers.len() > MAX_BUFFERS {
            bail!(LimitExceeded, "{} buffers exceed the maximum {MAX_BUFFERS}", self.buffers.len());
        }
        self.buffers
            .iter()
            .try_fold(0u64, |acc, b| acc.checked_add(b.byte_size()))
            .ok_or_else(|| err!(LimitExceeded, "total buffer bytes overflow u64"))?;
        if let Some(n) = &self.name {
            check_name(n)?;
        }
        let rank = self.shape.rank();
        let elements = self.shape.element_count();
        let et = self.element_type;
        // For every layout: the logical tensor's bytes (what densify and gather write) fit u64.
        let dense_bytes = et
            .bytes_for(elements)
            .ok_or_else(|| err!(InvalidShape, "{elements} elements of {} overflow a u64 byte count", et.name()))?;
        if validate_extended(self)? {
            return Ok(());
        }
        if let Some(Quantization::Block(b)) = &self.ext().quantization {
            b.validate(et, &self.shape, &self.ext().layout, self.byte_offset, &self.buffers)?;
            if let Some(n) = &self.name {
                check_name(n)?;
            }
            return Ok(());
        }
        let needed_buffers = match self.ext().quantization {
            Some(Quantization::PerChannelAffine { .. }) => 3,
            _ => 1,
        };
        if self.buffers.len() != needed_buffers {
            bail!(InvalidLayout, "this tensor needs {needed_buffers} buffer(s), the table has {}", self.buffers.len());
        }
        let data = self.buffers[0].byte_size();
        match &self.ext().layout {
            LayoutDescriptor::RowMajor | LayoutDescriptor::ColumnMajor => {
                let end = self.byte_offset.checked_add(dense_bytes);
                if end.is_none_or(|e| e > data) {
                    bail!(
                        BufferTooSmall,
                        "{dense_bytes} element bytes at offset {} do not fit buffer 0 of {data} bytes",
                        self.byte_offset
                    );
                }
            }
            LayoutDescriptor::Strided(strides) => {
                if strides.len() != rank {
                    bail!(InvalidLayout, "{} strides for rank {rank}", strides.len());
                }
                if et.is_sub_byte() {
                    bail!(InvalidLayout, "packed {} cannot be strided", et.name());
                }
                if elements > 0 {
                    let esize = i128::from(et.bit_width() / 8);
                    let (mut lo, mut hi) = (0i128, 0i128);
                    for (&d, &s) in self.shape.dims().iter().zip(strides) {
                        let reach = i128::from(d - 1) * i128::from(s);
                        if reach < 0 {
                            lo += reach;
                        } else {
                            hi += reach;
                        }
                    }
                    let off = i128::from(self.byte_offset);
                    if off + lo * esize < 0 || off + (hi + 1) * esize > i128::from(data) {
                        bail!(
                            BufferTooSmall,
                            "strided elements reach bytes [{}, {}) outside buffer 0 of {data} bytes",
                            off + lo * esize,
                            off + (hi + 1) * esize
                        );
                    }
                }
            }
            // Handled by `validate_extended`, which returned above.
            _ => bail!(InvalidLayout, "layout {} needs its extension block", self.ext().layout.name()),
        }
        if let Some(q) = &self.ext().quantization {
            let dq = q.dequantized();
            if dq.is_sub_byte() || dq == ElementType::Bool {
                bail!(InvalidType, "cannot dequantize to {}", dq.name());
            }
            let is_int = matches!(
                et,
                ElementType::Int4
                    | ElementType::Uint4
                    | ElementType::Int8
                    | ElementType::Uint8
                    | ElementType::Int16
                    | ElementType::Uint16
                    | ElementType::Int32
                    | ElementType::Uint32
            );
            match q {
                Quantization::PerTensorAffine { scale, bias, .. } => {
                    if !is_int {
                        bail!(InvalidType, "affine quantization needs an integer stored type, not {}", et.name());
                    }
                    if !scale.is_finite() || !bias.is_finite() {
                        bail!(InvalidArgument, "quantization scale and bias must be finite");
                    }
                }
                Quantization::PerChannelAffine { axis, .. } => {
                    if !is_int {
                        bail!(InvalidType, "affine quantization needs an integer stored type, not {}", et.name());
                    }
                    let axis = *axis as usize;
                    if axis >= rank {
                        bail!(InvalidArgument, "quantization axis {axis} out of range for rank {rank}");
                    }
                    let need = self.shape.dims()[axis].saturating_mul(4);
                    for i in 1..3 {
                        if self.buffers[i].byte_size() < need {
                            bail!(BufferTooSmall, "buffer {i} needs {need} bytes of float32 per-channel parameters");
                        }
                    }
                }
                Quantization::Block(_) => unreachable!("validated above"),
                Quantization::Cast { .. } => {
                    if !matches!(
                        et,
                        ElementType::Float16
                            | ElementType::Bfloat16
                            | ElementType::Float8E4m3fn
                            | ElementType::Float8E5m2
                            | ElementType::Float32
                            | ElementType::Float8E4m3fnuz
                            | ElementType::Float8E5m2fnuz
                            | ElementType::Float8E3m4
                            | ElementType::Float6E2m3fn
                            | ElementType::Float6E3m2fn
                            | ElementType::Float4E2m1fn
                    ) {
                        bail!(InvalidType, "cast quantization needs a float stored type, not {}", et.name());
                    }
                }
            }
        }
        if let Some(n) = &self.name {
            check_name(n)?;
        }
        Ok(())
    }

    fn version2_feature(&self) -> String {
        match &self.ext().quantization {
            Some(Quantization::Block(b)) => format!("{} quantization", b.kind.name()),
            _ => format!("element type {}", self.element_type.name()),
        }
    }
}

/// Checks a whole metadata list, `(key, value)` in order: every entry's limits, unique keys, the
/// entry count (iterated once per entry for the duplicate check; lists are at most 256 long).
/// Errors: `InvalidArgument`, `LimitExceeded`, `DuplicateName`.
pub(crate) fn check_metadata_list<'a, I>(metadata: I) -> Result<()>
where
    I: ExactSizeIterator<Item = (&'a str, &'a [u8])> + Clone,
{
    let count = metadata.len();
    if count > MAX_METADATA_ENTRIES {
        bail!(LimitExceeded, "{count} metadata entries exceed {MAX_METADATA_ENTRIES}");
    }
    for (i, (k, v)) in metadata.clone().enumerate() {
        check_metadata_entry(k, v)?;
        if metadata.clone().take(i).any(|(e, _)| e == k) {
            bail!(DuplicateName, "metadata key {k:?} is already present");
        }
    }
    Ok(())
}

/// One metadata entry: a key of 1..=256 bytes without NUL, a value of at most 64 KiB.
pub(crate) fn check_metadata_entry(key: &str, value: &[u8]) -> Result<()> {
    if key.is_empty() || key.len() > MAX_METADATA_KEY_BYTES || key.contains('\0') {
        bail!(InvalidArgument, "metadata key must be 1..={MAX_METADATA_KEY_BYTES} bytes without NUL");
    }
    if value.len() > MAX_METADATA_VALUE_BYTES {
        bail!(LimitExceeded, "metadata value of {} bytes exceeds {MAX_METADATA_VALUE_BYTES}", value.len());
    }
    Ok(())
}

impl CompositeInfo {
    /// The block on its own: depth, index and member limits, and the role names.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.depth > MAX_COMPOSITE_DEPTH {
            bail!(LimitExceeded, "composite nesting depth {} exceeds the maximum {MAX_COMPOSITE_DEPTH}", self.depth);
        }
        if self.depth == 0 && (self.index != 0 || self.roles.is_empty()) {
            bail!(Corrupt, "a depth-0 composite block must be a head at index 0");
        }
        if self.roles.len() > MAX_COMPOSITE_MEMBERS as usize {
            bail!(LimitExceeded, "{} members exceed the maximum {MAX_COMPOSITE_MEMBERS}", self.roles.len());
        }
        if !self.roles.is_empty() && self.depth == MAX_COMPOSITE_DEPTH {
            bail!(LimitExceeded, "a head at depth {MAX_COMPOSITE_DEPTH} would nest its members too deep");
        }
        for (i, r) in self.roles.iter().enumerate() {
            if r.is_empty() || r.len() > MAX_ROLE_BYTES || r.contains('\0') || r.contains('/') {
                bail!(InvalidArgument, "role {r:?} must be 1..={MAX_ROLE_BYTES} bytes without NUL or '/'");
            }
            if self.roles[..i].contains(r) {
                bail!(DuplicateName, "role {r:?} appears twice in one composite");
            }
        }
        Ok(())
    }
}

// The kind's own parameters are checked by `BlockQuant::buffer_sizes` (quant.rs); what a
// descriptor adds to them is checked here.
impl BlockQuant {
    /// Checks a whole descriptor's use of this block: row-major layout, the buffer count, and
    /// each buffer at least as large as [`buffer_sizes`](Self::buffer_sizes) says (buffer 0
    /// from `byte_offset`). Errors: those of `buffer_sizes`, `InvalidLayout`, `BufferTooSmall`.
    pub(crate) fn validate(
        &self,
        et: ElementType,
        shape: &Shape,
        layout: &LayoutDescriptor,
        byte_offset: u64,
        buffers: &[BufferHandle],
    ) -> Result<()> {
        if *layout != LayoutDescriptor::RowMajor {
            bail!(InvalidLayout, "{} quantization needs a row-major layout", self.kind.name());
        }
        let sizes = self.buffer_sizes(et, shape)?;
        if buffers.len() != sizes.len() {
            bail!(
                InvalidLayout,
                "{} quantization needs {} buffers, the table has {}",
                self.kind.name(),
                sizes.len(),
                buffers.len()
            );
        }
        for (i, (b, need)) in buffers.iter().zip(&sizes).enumerate() {
            let need_total = if i == 0 { byte_offset.checked_add(*need) } else { Some(*need) };
            if need_total.is_none_or(|t| b.byte_size() < t) {
                bail!(
                    BufferTooSmall,
                    "{} buffer {i} has {} bytes, needs {need}{}",
                    self.kind.name(),
                    b.byte_size(),
                    if i == 0 && byte_offset > 0 { format!(" after offset {byte_offset}") } else { String::new() }
                );
            }
        }
        Ok(())
    }
}

/// Validates what a version-2 block implies. Returns `Ok(true)` when the descriptor was fully
/// validated here (sparse, paged, composite head), `Ok(false)` when the dense rules apply.
fn validate_extended(d: &TensorDescriptor) -> Result<bool> {
    let layout = d.layout();
    if layout.is_sparse() != d.sparse().is_some() {
        bail!(
            InvalidLayout,
            "layout {} {} a sparse block",
            layout.name(),
            if layout.is_sparse() { "needs" } else { "cannot have" }
        );
    }
    let paged = *layout == LayoutDescriptor::BlockPaged;
    if paged != d.paging().is_some() {
        bail!(InvalidLayout, "layout {} {} a paging block", layout.name(), if paged { "needs" } else { "cannot have" });
    }
    if let Some(c) = d.composite() {
        c.validate()?;
        if c.member_count() > 0 {
            validate_head(d)?;
            return Ok(true);
        }
    }
    if let Some(s) = d.sparse() {
        validate_sparse(d, s)?;
        return Ok(true);
    }
    if let Some(p) = d.paging() {
        validate_paged(d, p)?;
        return Ok(true);
    }
    Ok(false)
}

fn mul(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_mul(b).ok_or_else(|| err!(LimitExceeded, "{what} overflows a u64 byte count"))
}

/// Checks that buffer `i` is exactly `want` bytes.
fn expect_size(d: &TensorDescriptor, i: usize, want: u64, what: &str) -> Result<()> {
    let have = d.buffers()[i].byte_size();
    if have < want {
        bail!(BufferTooSmall, "buffer {i} ({what}) holds {have} bytes, the layout needs {want}");
    }
    if have > want {
        bail!(InvalidLayout, "buffer {i} ({what}) holds {have} bytes, the layout needs exactly {want}");
    }
    Ok(())
}

/// The dimension the indptr runs over and the one the indices address, for CSR/CSC/BSR.
pub(crate) fn compressed_dims(d: &TensorDescriptor, s: &SparseInfo) -> (u64, u64) {
    let dims = d.shape().dims();
    match d.layout() {
        LayoutDescriptor::Csc => (dims[1], dims[0]),
        LayoutDescriptor::Bsr => (dims[0] / u64::from(s.block_rows), dims[1] / u64::from(s.block_cols)),
        _ => (dims[0], dims[1]),
    }
}

/// Descriptor-level checks of a sparse tensor (everything but the index contents).
fn validate_sparse(d: &TensorDescriptor, s: &SparseInfo) -> Result<()> {
    let layout = d.layout();
    let et = d.element_type();
    let dims = d.shape().dims();
    let rank = dims.len();
    if et.is_sub_byte() {
        bail!(InvalidLayout, "packed {} cannot be sparse", et.name());
    }
    if d.quantization().is_some() {
        bail!(InvalidLayout, "a sparse tensor cannot carry a quantization block in version 2");
    }
    if d.byte_offset() != 0 {
        bail!(InvalidLayout, "a sparse tensor has byte offset 0, not {}", d.byte_offset());
    }
    let bsr = *layout == LayoutDescriptor::Bsr;
    if bsr != (s.block_rows != 0 || s.block_cols != 0) || (bsr && (s.block_rows == 0 || s.block_cols == 0)) {
        bail!(InvalidLayout, "block shape {:?} with layout {}", s.block_shape(), layout.name());
    }
    if *layout == LayoutDescriptor::Coo {
        if rank == 0 {
            bail!(InvalidLayout, "a COO tensor has rank at least 1");
        }
    } else if rank != 2 {
        bail!(InvalidLayout, "a {} tensor has rank 2, not {rank}", layout.name());
    }
    let esize = u64::from(et.bit_width() / 8);
    let isize = s.index_type.bytes();
    let nnz = s.nnz;
    let block_elems = if bsr {
        if !dims[0].is_multiple_of(u64::from(s.block_rows)) || !dims[1].is_multiple_of(u64::from(s.block_cols)) {
            bail!(InvalidLayout, "shape {dims:?} is not a multiple of block shape {:?}", s.block_shape());
        }
        u64::from(s.block_rows) * u64::from(s.block_cols)
    } else {
        1
    };
    // A canonical tensor stores each position at most once.
    let positions = d.shape().element_count() / block_elems;
    if s.canonical && nnz > positions {
        bail!(Corrupt, "canonical nnz {nnz} exceeds the {positions} positions of the shape");
    }
    if nnz > s.index_type.max_value() {
        bail!(LimitExceeded, "nnz {nnz} does not fit {} indices", s.index_type.name());
    }
    let want = if *layout == LayoutDescriptor::Coo { 2 } else { 3 };
    if d.buffers().len() != want {
        bail!(InvalidLayout, "a {} tensor has {want} buffers, the table has {}", layout.name(), d.buffers().len());
    }
    expect_size(d, 0, mul(mul(nnz, block_elems, "nnz")?, esize, "nnz")?, "values")?;
    if *layout == LayoutDescriptor::Coo {
        expect_size(d, 1, mul(mul(nnz, rank as u64, "nnz")?, isize, "nnz")?, "indices")?;
    } else {
        let (outer, _) = compressed_dims(d, s);
        let ptrs = outer.checked_add(1).ok_or_else(|| err!(LimitExceeded, "indptr length overflows"))?;
        expect_size(d, 1, mul(ptrs, isize, "indptr")?, "indptr")?;
        expect_size(d, 2, mul(nnz, isize, "nnz")?, "indices")?;
    }
    Ok(())
}

/// Bytes of one row (one index along dimension 0).
pub(crate) fn row_bytes(d: &TensorDescriptor) -> Option<u64> {
    let inner: u64 = d.shape().dims()[1..].iter().try_fold(1u64, |a, &x| a.checked_mul(x))?;
    inner.checked_mul(u64::from(d.element_type().bit_width() / 8))
}

/// Descriptor-level checks of a block-paged tensor.
fn validate_paged(d: &TensorDescriptor, p: &PagingInfo) -> Result<()> {
    let et = d.element_type();
    if d.shape().rank() == 0 {
        bail!(InvalidLayout, "a block-paged tensor has rank at least 1");
    }
    if et.is_sub_byte() {
        bail!(InvalidLayout, "packed {} cannot be block-paged", et.name());
    }
    if d.quantization().is_some() {
        bail!(InvalidLayout, "a block-paged tensor cannot carry a quantization block in version 2");
    }
    if d.byte_offset() != 0 {
        bail!(InvalidLayout, "a block-paged tensor has byte offset 0, not {}", d.byte_offset());
    }
    if p.page_size == 0 {
        bail!(InvalidLayout, "page size 0");
    }
    let len = d.shape().dims()[0];
    let blocks = len.div_ceil(u64::from(p.page_size));
    if p.block_count != blocks {
        bail!(
            InvalidLayout,
            "{len} rows in pages of {} need {blocks} page-table entries, the block says {}",
            p.page_size,
            p.block_count
        );
    }
    if p.page_count > p.index_type.max_value().saturating_add(1) {
        bail!(
            LimitExceeded,
            "{} pages cannot be addressed by {} page-table entries",
            p.page_count,
            p.index_type.name()
        );
    }
    if d.buffers().len() != 2 {
        bail!(InvalidLayout, "a block-paged tensor has 2 buffers, the table has {}", d.buffers().len());
    }
    let page_bytes = row_bytes(d)
        .and_then(|r| r.checked_mul(u64::from(p.page_size)))
        .ok_or_else(|| err!(LimitExceeded, "page byte count overflows u64"))?;
    let pages = page_bytes
        .checked_mul(p.page_count)
        .ok_or_else(|| err!(LimitExceeded, "page buffer byte count overflows u64"))?;
    expect_size(d, 0, pages, "pages")?;
    let table =
        p.block_count.checked_mul(p.index_type.bytes()).ok_or_else(|| err!(LimitExceeded, "page table overflows"))?;
    expect_size(d, 1, table, "page table")
}

/// Descriptor rules of a head: element type code 0, row-major, rank 0, byte offset 0, no
/// buffers and no quantization, sparse or paging block.
fn validate_head(d: &TensorDescriptor) -> Result<()> {
    if d.element_type() != ElementType::Bool
        || *d.layout() != LayoutDescriptor::RowMajor
        || d.shape().rank() != 0
        || d.byte_offset() != 0
        || !d.buffers().is_empty()
        || d.quantization().is_some()
        || d.sparse().is_some()
        || d.paging().is_some()
    {
        bail!(InvalidLayout, "a composite head is a buffer-less rank-0 descriptor with element code 0 and layout 0");
    }
    Ok(())
}
