//! Block-paged (KV-cache) layout (docs/spec/descriptor.md §Block-paged layout).
//!
//! A tensor of logical shape `[L, d1, …, dk]` (rank ≥ 1; dimension 0 is the token or
//! sequence axis) is stored as `page_count` pages of `page_size` rows each in buffer 0, each
//! row `d1 × … × dk` elements row-major. Buffer 1, the page table, holds `block_count =
//! ceil(L / page_size)` indices: logical block `b` (rows `b·page_size …`) lives in page
//! `table[b]`. The last block may be partly used. Several blocks may share a page.

use crate::descriptor::{Cursor, TensorDescriptor};
use crate::error::{bail, err, Result};
use crate::sparse::{check_payload_lengths, expect_size, read_index, IndexType};

/// Size of the paging block in bytes.
pub const PAGING_BLOCK_BYTES: usize = 24;

/// The paging block (extension bit 4) of a block-paged descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PagingInfo {
    index_type: IndexType,
    page_size: u32,
    block_count: u64,
    page_count: u64,
}

impl PagingInfo {
    /// A paging block: `page_size` rows of dimension 0 per page (≥ 1), `block_count`
    /// page-table entries of `index_type`, `page_count` pages in buffer 0.
    pub fn new(index_type: IndexType, page_size: u32, block_count: u64, page_count: u64) -> Self {
        PagingInfo { index_type, page_size, block_count, page_count }
    }
    /// Index type of the page table.
    pub fn index_type(&self) -> IndexType {
        self.index_type
    }
    /// Rows of dimension 0 per page.
    pub fn page_size(&self) -> u32 {
        self.page_size
    }
    /// Page-table entries (logical blocks).
    pub fn block_count(&self) -> u64 {
        self.block_count
    }
    /// Pages in buffer 0.
    pub fn page_count(&self) -> u64 {
        self.page_count
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.index_type.code());
        out.extend_from_slice(&[0; 3]);
        out.extend_from_slice(&self.page_size.to_le_bytes());
        out.extend_from_slice(&self.block_count.to_le_bytes());
        out.extend_from_slice(&self.page_count.to_le_bytes());
    }

    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<Self> {
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

/// Bytes of one row (one index along dimension 0).
fn row_bytes(d: &TensorDescriptor) -> Option<u64> {
    let inner: u64 = d.shape().dims()[1..].iter().try_fold(1u64, |a, &x| a.checked_mul(x))?;
    inner.checked_mul(u64::from(d.element_type().bit_width() / 8))
}

/// Descriptor-level checks of a block-paged tensor.
pub(crate) fn validate_descriptor(d: &TensorDescriptor, p: &PagingInfo) -> Result<()> {
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

/// Checks that every page-table entry names a page inside buffer 0. Errors: `Corrupt`
/// naming the first bad entry; `BufferTooSmall` for a short payload.
pub fn check_contents(d: &TensorDescriptor, bufs: &[&[u8]]) -> Result<()> {
    let p = d.paging().ok_or_else(|| err!(InvalidArgument, "not a block-paged tensor"))?;
    check_payload_lengths(d, bufs)?;
    for b in 0..p.block_count as usize {
        let e = read_index(bufs[1], p.index_type, b);
        if e < 0 || e as u64 >= p.page_count {
            bail!(Corrupt, "page-table entry {b} = {e} points outside the {} pages of the page buffer", p.page_count);
        }
    }
    Ok(())
}

/// Copies a block-paged tensor into `out` as a contiguous row-major tensor of its logical
/// shape (at least the dense byte count; exactly that many bytes are written). The page
/// table is checked first. Errors: `InvalidArgument` (not paged), `BufferTooSmall`, `Corrupt`.
pub fn gather(d: &TensorDescriptor, bufs: &[&[u8]], out: &mut [u8]) -> Result<()> {
    let p = d
        .paging()
        .ok_or_else(|| err!(InvalidArgument, "gather needs a block-paged tensor, not {}", d.layout().name()))?;
    let dense = d.dense_byte_count();
    if (out.len() as u64) < dense {
        bail!(BufferTooSmall, "gather needs {dense} output bytes, got {}", out.len());
    }
    check_contents(d, bufs)?;
    // Both fit memory: the pages and the output exist.
    let row = row_bytes(d).unwrap_or(0) as usize;
    let ps = p.page_size as usize;
    let page_bytes = row * ps;
    let len = d.shape().dims()[0] as usize;
    for b in 0..p.block_count as usize {
        let page = read_index(bufs[1], p.index_type, b) as usize;
        let rows = ps.min(len - b * ps);
        let src = &bufs[0][page * page_bytes..page * page_bytes + rows * row];
        out[b * page_bytes..b * page_bytes + rows * row].copy_from_slice(src);
    }
    Ok(())
}
