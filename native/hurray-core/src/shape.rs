//! Tensor shapes (docs/spec/descriptor.md §Shape).

use std::sync::Arc;

use crate::error::{bail, Result};
use crate::MAX_RANK;

/// The extents of a tensor, outermost first. Rank 0 (a scalar, one element) and zero-size
/// dimensions (zero elements) are allowed. Construction guarantees the element count fits in
/// a u64. Immutable, so clones share the dimensions (a clone allocates nothing).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape {
    dims: Arc<[u64]>,
}

impl Shape {
    /// Makes a shape. Errors: `InvalidShape` when `dims.len() > MAX_RANK` or the product of
    /// the dimensions overflows u64 (a shape with any zero dimension never overflows).
    pub fn new(dims: Vec<u64>) -> Result<Self> {
        Self::from_dims(&dims)
    }

    /// As [`new`](Self::new), from borrowed dimensions (one allocation, for the copy).
    pub fn from_dims(dims: &[u64]) -> Result<Self> {
        if dims.len() > MAX_RANK {
            bail!(InvalidShape, "rank {} exceeds the maximum rank {MAX_RANK}", dims.len());
        }
        let s = Shape { dims: Arc::from(dims) };
        if s.checked_element_count().is_none() {
            bail!(InvalidShape, "shape {:?} has more than 2^64-1 elements", s.dims);
        }
        Ok(s)
    }

    /// A rank-0 shape (one element).
    pub fn scalar() -> Self {
        Shape { dims: Arc::from([]) }
    }

    fn checked_element_count(&self) -> Option<u64> {
        if self.dims.contains(&0) {
            return Some(0);
        }
        self.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Number of elements (1 for rank 0; 0 if any dimension is 0).
    pub fn element_count(&self) -> u64 {
        // Checked in `new`.
        self.checked_element_count().unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn counts() {
        assert_eq!(Shape::new(vec![]).unwrap().element_count(), 1);
        assert_eq!(Shape::new(vec![2, 3, 4]).unwrap().element_count(), 24);
        assert_eq!(Shape::new(vec![0, u64::MAX, u64::MAX]).unwrap().element_count(), 0);
    }

    #[test]
    fn overflow_and_rank() {
        let e = Shape::new(vec![1 << 32, 1 << 32]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidShape);
        let e = Shape::new(vec![1; MAX_RANK + 1]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidShape);
        assert!(Shape::new(vec![1; MAX_RANK]).is_ok());
    }
}
