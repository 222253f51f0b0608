//! Block-paged (KV-cache) layout (docs/spec/descriptor.md §Block-paged layout).
//!
//! A tensor of logical shape `[L, d1, …, dk]` (rank ≥ 1; dimension 0 is the token or
//! sequence axis) is stored as `page_count` pages of `page_size` rows each in buffer 0, each
//! row `d1 × … × dk` elements row-major. Buffer 1, the page table, holds `block_count =
//! ceil(L / page_size)` indices: logical block `b` (rows `b·page_size …`) lives in page
//! `table[b]`. The last block may be partly used. Several blocks may share a page.
//!
//! This file checks page tables and gathers; the paging block and the layout's descriptor
//! rules are part of the descriptor (`descriptor/blocks.rs`, `descriptor/validate.rs`).

use crate::descriptor::{row_bytes, TensorDescriptor};
use crate::error::{bail, err, Result};
use crate::sparse::{check_payload_lengths, read_index};

pub use crate::descriptor::PagingInfo;
pub use crate::wire::PAGING_BLOCK_BYTES;

/// Checks that every page-table entry names a page inside buffer 0. Errors: `Corrupt`
/// naming the first bad entry; `BufferTooSmall` for a short payload.
pub fn check_contents(d: &TensorDescriptor, bufs: &[&[u8]]) -> Result<()> {
    let p = d.paging().ok_or_else(|| err!(InvalidArgument, "not a block-paged tensor"))?;
    check_payload_lengths(d, bufs)?;
    for b in 0..p.block_count() as usize {
        let e = read_index(bufs[1], p.index_type(), b);
        if e < 0 || e as u64 >= p.page_count() {
            bail!(Corrupt, "page-table entry {b} = {e} points outside the {} pages of the page buffer", p.page_count());
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
    let ps = p.page_size() as usize;
    let page_bytes = row * ps;
    let len = d.shape().dims()[0] as usize;
    for b in 0..p.block_count() as usize {
        let page = read_index(bufs[1], p.index_type(), b) as usize;
        let rows = ps.min(len - b * ps);
        let src = &bufs[0][page * page_bytes..page * page_bytes + rows * row];
        out[b * page_bytes..b * page_bytes + rows * row].copy_from_slice(src);
    }
    Ok(())
}
