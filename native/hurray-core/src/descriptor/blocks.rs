//! The version-2 blocks of a descriptor (docs/spec/descriptor.md §Sparse layouts,
//! §Block-paged layout, §Composite membership): the sparse block, the paging block and the
//! composite-membership block, as types. Their bytes are written in `encode.rs`, read in
//! `decode.rs` and checked in `validate.rs`.

use crate::error::{bail, Result};

/// Integer type of index buffers (indices, indptr, page tables). Wire codes are the element
/// type codes of `int32` (3) and `int64` (4). Indices are non-negative in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum IndexType {
    /// Little-endian int32.
    Int32 = 3,
    /// Little-endian int64.
    Int64 = 4,
}

impl IndexType {
    /// Decodes a wire code (3 or 4); anything else is `Corrupt`.
    pub fn from_code(code: u8) -> Result<Self> {
        match code {
            3 => Ok(IndexType::Int32),
            4 => Ok(IndexType::Int64),
            _ => bail!(Corrupt, "index type code {code} (only 3 int32 and 4 int64)"),
        }
    }
    /// The wire code.
    pub fn code(self) -> u8 {
        self as u8
    }
    /// Bytes per index: 4 or 8.
    pub fn bytes(self) -> u64 {
        match self {
            IndexType::Int32 => 4,
            IndexType::Int64 => 8,
        }
    }
    /// The largest index value this type can hold.
    pub fn max_value(self) -> u64 {
        match self {
            IndexType::Int32 => i32::MAX as u64,
            IndexType::Int64 => i64::MAX as u64,
        }
    }
    /// `int32` or `int64`.
    pub fn name(self) -> &'static str {
        match self {
            IndexType::Int32 => "int32",
            IndexType::Int64 => "int64",
        }
    }
}

/// The sparse block (extension bit 3) of a COO, CSR, CSC or BSR descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SparseInfo {
    pub(super) index_type: IndexType,
    pub(super) canonical: bool,
    pub(super) block_rows: u32,
    pub(super) block_cols: u32,
    pub(super) nnz: u64,
}

impl SparseInfo {
    /// A COO, CSR or CSC block: `nnz` stored values, indices of `index_type`. `canonical`
    /// promises sorted indices without duplicates (COO: coordinates strictly increasing in
    /// row-major order; CSR/CSC: indices strictly increasing within each row/column); a
    /// reader checks the promise.
    pub fn new(index_type: IndexType, nnz: u64, canonical: bool) -> Self {
        SparseInfo { index_type, canonical, block_rows: 0, block_cols: 0, nnz }
    }
    /// A BSR block: `nnz_blocks` stored blocks of `block_rows × block_cols` values.
    pub fn bsr(index_type: IndexType, nnz_blocks: u64, block_rows: u32, block_cols: u32, canonical: bool) -> Self {
        SparseInfo { index_type, canonical, block_rows, block_cols, nnz: nnz_blocks }
    }
    /// Index type of the index buffers.
    pub fn index_type(&self) -> IndexType {
        self.index_type
    }
    /// True when indices are promised sorted and free of duplicates.
    pub fn is_canonical(&self) -> bool {
        self.canonical
    }
    /// Stored entries (BSR: stored blocks).
    pub fn nnz(&self) -> u64 {
        self.nnz
    }
    /// BSR block shape `[rows, cols]`; `[0, 0]` for the other layouts.
    pub fn block_shape(&self) -> [u32; 2] {
        [self.block_rows, self.block_cols]
    }
}

/// The paging block (extension bit 4) of a block-paged descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PagingInfo {
    pub(super) index_type: IndexType,
    pub(super) page_size: u32,
    pub(super) block_count: u64,
    pub(super) page_count: u64,
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
}

/// The composite-membership block (extension bit 5).
///
/// A **head** has `member_count() > 0` and lists one role per member; a **plain member** has
/// no roles. `depth` is 0 for a top-level head and the parent's depth + 1 for a member;
/// `index` is the member's position in its parent (0 at depth 0).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompositeInfo {
    pub(super) depth: u16,
    pub(super) index: u32,
    pub(super) roles: Vec<String>,
}

impl CompositeInfo {
    /// A top-level head listing `roles`
    /// (1..=[`MAX_COMPOSITE_MEMBERS`](crate::wire::MAX_COMPOSITE_MEMBERS), each 1..=256 UTF-8
    /// bytes without NUL or `/`, unique). Errors: `InvalidArgument`, `LimitExceeded`,
    /// `DuplicateName`.
    pub fn head(roles: Vec<String>) -> Result<Self> {
        if roles.is_empty() {
            bail!(InvalidArgument, "a composite has at least one member");
        }
        let c = CompositeInfo { depth: 0, index: 0, roles };
        c.validate()?;
        Ok(c)
    }
    /// A plain member at `depth` (≥ 1), position `index` in its parent.
    pub fn member(depth: u16, index: u32) -> Self {
        CompositeInfo { depth, index, roles: Vec::new() }
    }
    /// This block moved to `depth` and `index` (used when nesting a head inside a parent).
    pub fn at(mut self, depth: u16, index: u32) -> Self {
        self.depth = depth;
        self.index = index;
        self
    }
    /// Members listed (0 for a plain member).
    pub fn member_count(&self) -> u32 {
        self.roles.len() as u32
    }
    /// Nesting depth (0 = top level).
    pub fn depth(&self) -> u16 {
        self.depth
    }
    /// Position in the parent (0 at depth 0).
    pub fn index(&self) -> u32 {
        self.index
    }
    /// Member roles, in member order.
    pub fn roles(&self) -> &[String] {
        &self.roles
    }
}
