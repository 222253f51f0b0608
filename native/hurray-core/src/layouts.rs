//! Checks of the buffer contents a descriptor cannot vouch for, dispatched by layout: the one
//! entry point the stream decoder and encoder, the container and the composite writer call
//! before a tensor is handed out or put on the wire.

use crate::descriptor::TensorDescriptor;
use crate::error::Result;

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
