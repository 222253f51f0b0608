//! How a tensor's elements map onto its buffers: the layout code of a descriptor
//! (docs/spec/descriptor.md §Layouts).

/// How elements map onto the buffers. Wire codes: 0 row-major, 1 column-major, 2 strided
/// (version 1); 3 COO, 4 CSR, 5 CSC, 6 BSR, 7 block-paged (version 2, parameters in the
/// descriptor's [`SparseInfo`](super::SparseInfo) / [`PagingInfo`](super::PagingInfo) block; a version-1 descriptor with codes 3–7
/// decodes as `Unsupported`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LayoutDescriptor {
    /// C order: the last dimension varies fastest.
    RowMajor,
    /// Fortran order: the first dimension varies fastest.
    ColumnMajor,
    /// Explicit strides, in elements (not bytes), one per dimension; may be negative or zero.
    Strided(Vec<i64>),
    /// Sparse coordinate list (docs/spec/descriptor.md §Sparse layouts): buffer 0 values,
    /// buffer 1 indices as *rank* arrays of nnz each (dimension-major, `[rank, nnz]`).
    Coo,
    /// Compressed sparse rows (rank 2): values, indptr (`rows + 1`), column indices.
    Csr,
    /// Compressed sparse columns (rank 2): values, indptr (`cols + 1`), row indices.
    Csc,
    /// Block sparse rows (rank 2): values as nnz blocks, block indptr, block column indices.
    Bsr,
    /// Block-paged (KV cache): buffer 0 pages, buffer 1 the page table
    /// (docs/spec/descriptor.md §Block-paged layout).
    BlockPaged,
}

impl LayoutDescriptor {
    /// The wire code.
    pub fn code(&self) -> u8 {
        match self {
            LayoutDescriptor::RowMajor => 0,
            LayoutDescriptor::ColumnMajor => 1,
            LayoutDescriptor::Strided(_) => 2,
            LayoutDescriptor::Coo => 3,
            LayoutDescriptor::Csr => 4,
            LayoutDescriptor::Csc => 5,
            LayoutDescriptor::Bsr => 6,
            LayoutDescriptor::BlockPaged => 7,
        }
    }

    /// `row-major`, `column-major`, `strided`, `coo`, `csr`, `csc`, `bsr` or `paged`.
    pub fn name(&self) -> &'static str {
        match self {
            LayoutDescriptor::RowMajor => "row-major",
            LayoutDescriptor::ColumnMajor => "column-major",
            LayoutDescriptor::Strided(_) => "strided",
            LayoutDescriptor::Coo => "coo",
            LayoutDescriptor::Csr => "csr",
            LayoutDescriptor::Csc => "csc",
            LayoutDescriptor::Bsr => "bsr",
            LayoutDescriptor::BlockPaged => "paged",
        }
    }

    /// True for COO, CSR, CSC and BSR.
    pub fn is_sparse(&self) -> bool {
        matches!(self, LayoutDescriptor::Coo | LayoutDescriptor::Csr | LayoutDescriptor::Csc | LayoutDescriptor::Bsr)
    }
}
