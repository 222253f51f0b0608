//! The tensor a reader hands out, whichever reader decoded it (the stream decoder or the
//! container reader).

use crate::descriptor::TensorDescriptor;
use crate::pool::PooledBuf;

/// A tensor read from a stream or a container: its descriptor and one owned, aligned
/// allocation per buffer.
#[derive(Debug)]
pub struct ReadTensor {
    /// The validated descriptor.
    pub descriptor: TensorDescriptor,
    /// Buffers in buffer-table order, each aligned to its handle's alignment and full. Each
    /// dereferences to [`AlignedBuf`](crate::AlignedBuf); dropping one returns its allocation
    /// to the reader's pool, if the reader has one and it still exists.
    pub buffers: Vec<PooledBuf>,
}
