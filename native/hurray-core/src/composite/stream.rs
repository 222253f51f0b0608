//! Composites on a stream: the item view read through a [`StreamReader`] and a composite
//! written through a [`StreamWriter`] (docs/spec/stream.md §Composites).

use super::{CompositeSpec, Item, ItemReader};
use crate::error::{Error, ErrorKind, Result};
use crate::stream::{ReadTransport, StreamReader, StreamWriter, WriteTransport};

impl ItemReader {
    /// The next item: a tensor, or a whole composite, or `None` at the end of the stream.
    ///
    /// Errors: every error of `next_tensor` (a `Transport` error keeps the partial composite
    /// for the next call; any other drops it); `Truncated` (the stream ends inside a
    /// composite); `Corrupt` (a head's member count disagrees with the members that follow,
    /// either way, or a member is out of place); `LimitExceeded` (deeper than
    /// [`MAX_COMPOSITE_DEPTH`](super::MAX_COMPOSITE_DEPTH), more than
    /// [`MAX_COMPOSITE_TENSORS`](super::MAX_COMPOSITE_TENSORS) descriptors).
    pub fn next_item<T: ReadTransport>(&mut self, r: &mut StreamReader<T>) -> Result<Option<Item>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let out = self.next_item_inner(r);
        if let Err(e) = &out {
            if e.kind() != ErrorKind::Transport {
                self.failed = Some(e.clone());
            }
        }
        out
    }

    fn next_item_inner<T: ReadTransport>(&mut self, r: &mut StreamReader<T>) -> Result<Option<Item>> {
        loop {
            let t = match r.next_tensor() {
                Ok(t) => t,
                Err(e) => {
                    if e.kind() != ErrorKind::Transport {
                        self.reset();
                    }
                    return Err(e);
                }
            };
            let Some(t) = t else {
                if let Some(e) = self.ended_inside() {
                    self.reset();
                    return Err(e);
                }
                return Ok(None);
            };
            match self.push(t) {
                Err(e) => {
                    self.reset();
                    return Err(e);
                }
                Ok(Some(item)) => return Ok(Some(item)),
                Ok(None) => {}
            }
        }
    }
}

/// Writes a composite to a stream: the head, then every member in preorder. Everything is
/// validated first, so only a transport failure can stop it part-way; the writer is then
/// poisoned (a partial composite is on the wire). Errors: those of [`CompositeSpec::flatten`]
/// and of [`StreamWriter::write_tensor`].
pub fn write_composite<T: WriteTransport>(w: &mut StreamWriter<T>, spec: &CompositeSpec<'_>) -> Result<()> {
    let flat = spec.flatten()?;
    for (i, (d, p)) in flat.iter().enumerate() {
        if let Err(e) = w.write_tensor(d, p) {
            if i > 0 {
                w.poison();
                return Err(Error::new(
                    e.kind(),
                    format!("{} after part of a composite was written; the writer is poisoned", e.message()),
                ));
            }
            return Err(e);
        }
    }
    Ok(())
}
