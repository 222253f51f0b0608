//! Dispatch for the version-2 layouts and blocks: descriptor validation and content checks
//! shared by the stream and the container (docs/spec/descriptor.md §Version policy).

use crate::descriptor::{LayoutDescriptor, TensorDescriptor};
use crate::error::{bail, Result};

/// Validates what a version-2 block implies. Returns `Ok(true)` when the descriptor was fully
/// validated here (sparse, paged, composite head), `Ok(false)` when the dense rules apply.
pub(crate) fn validate_extended(d: &TensorDescriptor) -> Result<bool> {
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
            crate::composite::validate_head(d)?;
            return Ok(true);
        }
    }
    if let Some(s) = d.sparse() {
        crate::sparse::validate_descriptor(d, s)?;
        return Ok(true);
    }
    if let Some(p) = d.paging() {
        crate::paged::validate_descriptor(d, p)?;
        return Ok(true);
    }
    Ok(false)
}

/// Whether [`check_contents`] has anything to check for this descriptor (sparse or paged), so
/// that callers need not gather buffer views for the other tensors.
pub(crate) fn has_contents_check(d: &TensorDescriptor) -> bool {
    d.sparse().is_some() || d.paging().is_some()
}

/// Checks the buffer contents a descriptor cannot vouch for: sparse indices and indptr,
/// page-table entries. A no-op for every other tensor. Readers call it before handing a
/// tensor out; writers before putting one on the wire. Errors: `Corrupt` with the first
/// offending position, `BufferTooSmall`, `InvalidArgument` (payload count).
pub fn check_contents(d: &TensorDescriptor, bufs: &[&[u8]]) -> Result<()> {
    if d.sparse().is_some() {
        crate::sparse::check_contents(d, bufs)
    } else if d.paging().is_some() {
        crate::paged::check_contents(d, bufs)
    } else {
        Ok(())
    }
}
