//! Tensor descriptors: what a tensor's bytes mean, and their binary encoding
//! (docs/spec/descriptor.md).

use crate::buffer::{BufferHandle, BUFFER_HANDLE_BYTES};
use crate::error::{bail, err, Error, ErrorKind, Result};
use crate::quant::{BlockKind, BlockQuant};
use crate::shape::Shape;
use crate::types::ElementType;
use crate::{
    DESCRIPTOR_VERSION, MAX_BUFFERS, MAX_DESCRIPTOR_BYTES, MAX_DESCRIPTOR_VERSION, MAX_METADATA_ENTRIES,
    MAX_METADATA_KEY_BYTES, MAX_METADATA_VALUE_BYTES, MAX_NAME_BYTES, MAX_RANK,
};

/// Magic at the start of every encoded descriptor.
pub const DESCRIPTOR_MAGIC: [u8; 4] = *b"HRDS";

/// How elements map onto the buffers. Wire codes: 0 row-major, 1 column-major, 2 strided
/// (version 1); 3 COO, 4 CSR, 5 CSC, 6 BSR, 7 block-paged (version 2, parameters in the
/// descriptor's [`SparseInfo`] / [`PagingInfo`] block; a version-1 descriptor with codes 3–7
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

/// Whether two quantization blocks are the same bit for bit: `==` on their floats would call
/// `0.0` and `-0.0` equal, which encode differently.
fn same_quantization_bits(a: &Option<Quantization>, b: &Option<Quantization>) -> bool {
    match (a, b) {
        (
            Some(Quantization::PerTensorAffine { scale: s1, bias: b1, dequantized: d1 }),
            Some(Quantization::PerTensorAffine { scale: s2, bias: b2, dequantized: d2 }),
        ) => s1.to_bits() == s2.to_bits() && b1.to_bits() == b2.to_bits() && d1 == d2,
        _ => a == b,
    }
}

/// Optional quantization block: how stored values map to logical values.
#[derive(Clone, Debug, PartialEq)]
pub enum Quantization {
    /// Code 1. `value = q * scale + bias`, evaluated in float64 and rounded once to
    /// `dequantized` (docs/spec/descriptor.md §Quantization kinds; e.g. tfjs uint8
    /// quantization: `scale`, `bias = min`). Stored type must be an integer type.
    PerTensorAffine { scale: f64, bias: f64, dequantized: ElementType },
    /// Code 2. Per-channel along `axis`: `value = q * scale[c] + bias[c]` where `c` is the
    /// index along `axis`. Buffer 1 holds `dims[axis]` float32 scales, buffer 2 as many
    /// float32 biases. Stored type must be an integer type.
    PerChannelAffine { axis: u32, dequantized: ElementType },
    /// Code 3. Values are stored in a narrower type and converted exactly to `dequantized`
    /// (e.g. tfjs float16 weights of a float32 model). Stored type must be a float type.
    Cast { dequantized: ElementType },
    /// Codes 4–9 (descriptor version 2): NF4, OCP MX, NVFP4, per-group affine, GGUF Q8_0 and
    /// Q4_0, with their scales in further buffers (docs/spec/descriptor.md §Block
    /// quantization kinds; [`BlockQuant`]).
    Block(BlockQuant),
}

impl Quantization {
    /// The wire code: 1–3, or 4–9 for the block kinds of version 2.
    pub fn code(&self) -> u8 {
        match self {
            Quantization::Block(b) => b.kind as u8,
            Quantization::PerTensorAffine { .. } => 1,
            Quantization::PerChannelAffine { .. } => 2,
            Quantization::Cast { .. } => 3,
        }
    }

    /// The logical element type after dequantization.
    pub fn dequantized(&self) -> ElementType {
        match *self {
            Quantization::PerTensorAffine { dequantized, .. }
            | Quantization::PerChannelAffine { dequantized, .. }
            | Quantization::Cast { dequantized } => dequantized,
            Quantization::Block(b) => b.dequantized,
        }
    }
}

pub use crate::composite::CompositeInfo;
pub use crate::paged::PagingInfo;
pub use crate::sparse::SparseInfo;

const EXT_NAME: u32 = 1 << 0;
const EXT_METADATA: u32 = 1 << 1;
const EXT_QUANT: u32 = 1 << 2;
const EXT_SPARSE: u32 = 1 << 3;
const EXT_PAGING: u32 = 1 << 4;
const EXT_COMPOSITE: u32 = 1 << 5;
const EXT_KNOWN: u32 = EXT_NAME | EXT_METADATA | EXT_QUANT;
/// Extension bits a version-2 descriptor may also set (sparse, paging, composite).
const EXT_KNOWN_V2: u32 = EXT_KNOWN | EXT_SPARSE | EXT_PAGING | EXT_COMPOSITE;
const FIXED_BYTES: usize = 24;
const QUANT_BYTES: usize = 24;

/// A validated tensor descriptor: element type, shape, layout, buffer table, and the optional
/// name, key/value metadata and quantization. Immutable once built; every constructor
/// validates, so any `TensorDescriptor` value encodes.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDescriptor {
    version: u16,
    flags: u16,
    element_type: ElementType,
    shape: Shape,
    byte_offset: u64,
    layout: LayoutDescriptor,
    buffers: Vec<BufferHandle>,
    quantization: Option<Quantization>,
    name: Option<String>,
    metadata: Vec<(String, Vec<u8>)>,
    sparse: Option<SparseInfo>,
    paging: Option<PagingInfo>,
    composite: Option<CompositeInfo>,
}

impl TensorDescriptor {
    /// Makes and validates a descriptor. Arguments, in the order of docs/spec/descriptor.md §The
    /// Rust constructor:
    ///
    /// 1. `version`: descriptor format version, 1 or [`MAX_DESCRIPTOR_VERSION`] (2); must be
    ///    at least [`min_version`](Self::min_version) (else `Unsupported`).
    /// 2. `flags`: reserved descriptor flags; must be 0 in version 1.
    /// 3. `element_type`: stored element type.
    /// 4. `shape`: logical shape.
    /// 5. `byte_offset`: where element 0 starts inside buffer 0, in bytes.
    /// 6. `layout`: how elements map to buffer 0.
    /// 7. `buffers`: the buffer table; buffer 0 holds the elements (1 buffer for a plain dense
    ///    tensor, 3 with per-channel quantization).
    /// 8. `quantization`: optional quantization block.
    /// 9. `sparse`: the sparse block, present exactly for the COO/CSR/CSC/BSR layouts.
    /// 10. `paging`: the paging block, present exactly for the block-paged layout.
    /// 11. `composite`: composite membership (a head lists its members; a member says where
    ///     it sits). Any of 9–11 makes this a version-2 descriptor, so `version` must then be
    ///     [`DESCRIPTOR_VERSION_2`](crate::DESCRIPTOR_VERSION_2); without them it must be 1.
    ///
    /// Errors: `VersionMismatch`, `InvalidArgument` (flags), `InvalidLayout` (strides vs rank,
    /// strided sub-byte types, wrong buffer count), `InvalidShape` (byte count overflow),
    /// `BufferTooSmall` (elements reach past buffer 0), `LimitExceeded` (too many buffers).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        version: u16,
        flags: u16,
        element_type: ElementType,
        shape: Shape,
        byte_offset: u64,
        layout: LayoutDescriptor,
        buffers: Vec<BufferHandle>,
        quantization: Option<Quantization>,
        sparse: Option<SparseInfo>,
        paging: Option<PagingInfo>,
        composite: Option<CompositeInfo>,
    ) -> Result<Self> {
        let d = TensorDescriptor {
            version,
            flags,
            element_type,
            shape,
            byte_offset,
            layout,
            buffers,
            quantization,
            name: None,
            metadata: Vec::new(),
            sparse,
            paging,
            composite,
        };
        d.validate()?;
        Ok(d)
    }

    /// A row-major CPU tensor with one buffer of exactly the needed size at 64-byte alignment.
    pub fn dense(element_type: ElementType, shape: Shape) -> Result<Self> {
        let bytes = element_type
            .bytes_for(shape.element_count())
            .ok_or_else(|| err!(InvalidShape, "byte count of {:?} overflows u64", shape.dims()))?;
        let h = BufferHandle::new(
            bytes,
            crate::MIN_BUFFER_ALIGNMENT,
            crate::DeviceTag::Cpu,
            crate::SyncMode::ProducerSynced,
        )?;
        Self::new(
            element_type.min_version(),
            0,
            element_type,
            shape,
            0,
            LayoutDescriptor::RowMajor,
            vec![h],
            None,
            None,
            None,
            None,
        )
    }

    /// Returns this descriptor with a UTF-8 name (at most [`MAX_NAME_BYTES`] bytes, no NUL).
    pub fn with_name(mut self, name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        check_name(&name)?;
        self.name = Some(name);
        Ok(self)
    }

    /// Whether `self` and `other` agree in every field except the name (which may differ or be
    /// absent in either). A stream decoder uses it to tell a caller that a tensor's descriptor
    /// repeats the previous one under another name.
    pub fn eq_except_name(&self, other: &Self) -> bool {
        // Destructured so that a new field cannot be forgotten here.
        let Self {
            version,
            flags,
            element_type,
            shape,
            byte_offset,
            layout,
            buffers,
            quantization,
            name: _,
            metadata,
            sparse,
            paging,
            composite,
        } = self;
        *version == other.version
            && *flags == other.flags
            && *element_type == other.element_type
            && *shape == other.shape
            && *byte_offset == other.byte_offset
            && *layout == other.layout
            && *buffers == other.buffers
            && same_quantization_bits(quantization, &other.quantization)
            && *metadata == other.metadata
            && *sparse == other.sparse
            && *paging == other.paging
            && *composite == other.composite
    }

    /// Returns this descriptor with one more key/value metadata entry. Keys are UTF-8, unique,
    /// 1..=[`MAX_METADATA_KEY_BYTES`] bytes; values at most [`MAX_METADATA_VALUE_BYTES`] bytes;
    /// at most [`MAX_METADATA_ENTRIES`] entries. Errors: `InvalidArgument`, `DuplicateName`,
    /// `LimitExceeded`.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Vec<u8>>) -> Result<Self> {
        let key = key.into();
        let value = value.into();
        check_metadata_entry(&key, &value)?;
        if self.metadata.iter().any(|(k, _)| *k == key) {
            bail!(DuplicateName, "metadata key {key:?} is already present");
        }
        if self.metadata.len() >= MAX_METADATA_ENTRIES {
            bail!(LimitExceeded, "more than {MAX_METADATA_ENTRIES} metadata entries");
        }
        self.metadata.push((key, value));
        Ok(self)
    }

    /// Sets the metadata list that [`crate::parts::check_metadata`] accepted.
    pub(crate) fn replace_checked_metadata(&mut self, metadata: Vec<(String, Vec<u8>)>) {
        self.metadata = metadata;
    }

    /// Returns this descriptor with its composite-membership block replaced (`None` removes
    /// it), the version adjusted to the lowest one that can encode the result, revalidated.
    /// Writers of composites use it to stamp members with their position.
    pub fn with_composite(mut self, composite: Option<CompositeInfo>) -> Result<Self> {
        self.composite = composite;
        self.version = self.required_version();
        self.validate()?;
        Ok(self)
    }

    /// Sparse block (COO/CSR/CSC/BSR), if any.
    pub fn sparse(&self) -> Option<&SparseInfo> {
        self.sparse.as_ref()
    }
    /// Paging block (block-paged layout), if any.
    pub fn paging(&self) -> Option<&PagingInfo> {
        self.paging.as_ref()
    }
    /// Composite-membership block, if any.
    pub fn composite(&self) -> Option<&CompositeInfo> {
        self.composite.as_ref()
    }
    /// True for a composite head: a buffer-less descriptor whose members follow it.
    pub fn is_composite_head(&self) -> bool {
        self.composite.as_ref().is_some_and(|c| c.member_count() > 0)
    }

    /// The lowest descriptor version that can encode this descriptor: 2 when it uses a
    /// sparse, paging or composite block, a version-2 element type or a block quantization
    /// kind, else 1 (docs/spec/descriptor.md §Version policy).
    pub fn required_version(&self) -> u16 {
        let blocks = if self.sparse.is_some() || self.paging.is_some() || self.composite.is_some() {
            crate::DESCRIPTOR_VERSION_2
        } else {
            DESCRIPTOR_VERSION
        };
        blocks.max(min_version_for(self.element_type, self.quantization.as_ref()))
    }

    /// Descriptor format version (1, or 2 when a version-2 block is used).
    pub fn version(&self) -> u16 {
        self.version
    }
    /// Reserved flags (0).
    pub fn flags(&self) -> u16 {
        self.flags
    }
    /// Stored element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }
    /// Logical shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// Offset of element 0 in buffer 0, in bytes.
    pub fn byte_offset(&self) -> u64 {
        self.byte_offset
    }
    /// Layout.
    pub fn layout(&self) -> &LayoutDescriptor {
        &self.layout
    }
    /// Strides in elements for a strided layout, else `None`.
    pub fn strides(&self) -> Option<&[i64]> {
        match &self.layout {
            LayoutDescriptor::Strided(s) => Some(s),
            _ => None,
        }
    }
    /// The buffer table.
    pub fn buffers(&self) -> &[BufferHandle] {
        &self.buffers
    }
    /// Quantization block, if any.
    pub fn quantization(&self) -> Option<&Quantization> {
        self.quantization.as_ref()
    }
    /// Name, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    /// Metadata entries in insertion order.
    pub fn metadata(&self) -> &[(String, Vec<u8>)] {
        &self.metadata
    }
    /// Sum of all buffer byte sizes (fits in u64: checked at validation).
    pub fn total_buffer_bytes(&self) -> u64 {
        self.buffers.iter().map(|b| b.byte_size()).sum()
    }
    /// Bytes the elements occupy when stored densely (`ceil` for sub-byte types), for every
    /// layout: validation refuses a descriptor whose count overflows u64.
    pub fn dense_byte_count(&self) -> u64 {
        self.element_type.bytes_for(self.shape.element_count()).unwrap_or(u64::MAX)
    }

    /// The lowest descriptor version that can carry this descriptor: 2 when it uses a
    /// version-2 element type or quantization kind, else 1 (docs/spec/descriptor.md §Version
    /// policy).
    pub fn min_version(&self) -> u16 {
        self.required_version()
    }

    fn validate(&self) -> Result<()> {
        if !(DESCRIPTOR_VERSION..=MAX_DESCRIPTOR_VERSION).contains(&self.version) {
            bail!(
                VersionMismatch,
                "descriptor version {} (this build reads 1 and {MAX_DESCRIPTOR_VERSION})",
                self.version
            );
        }
        let need = self.required_version();
        if self.version < need && self.sparse.is_none() && self.paging.is_none() && self.composite.is_none() {
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
        if crate::layouts::validate_extended(self)? {
            return Ok(());
        }
        if let Some(Quantization::Block(b)) = &self.quantization {
            b.validate(et, &self.shape, &self.layout, self.byte_offset, &self.buffers)?;
            if let Some(n) = &self.name {
                check_name(n)?;
            }
            return Ok(());
        }
        let needed_buffers = match self.quantization {
            Some(Quantization::PerChannelAffine { .. }) => 3,
            _ => 1,
        };
        if self.buffers.len() != needed_buffers {
            bail!(InvalidLayout, "this tensor needs {needed_buffers} buffer(s), the table has {}", self.buffers.len());
        }
        let data = self.buffers[0].byte_size();
        match &self.layout {
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
            // Handled by `layouts::validate_extended`, which returned above.
            _ => bail!(InvalidLayout, "layout {} needs its extension block", self.layout.name()),
        }
        if let Some(q) = &self.quantization {
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

    /// The binary encoding (docs/spec/descriptor.md). Errors: `LimitExceeded` if the encoding
    /// would exceed [`MAX_DESCRIPTOR_BYTES`].
    pub fn encode(&self) -> Result<Vec<u8>> {
        let rank = self.shape.rank();
        let mut ext = 0u32;
        if self.name.is_some() {
            ext |= EXT_NAME;
        }
        if !self.metadata.is_empty() {
            ext |= EXT_METADATA;
        }
        if self.quantization.is_some() {
            ext |= EXT_QUANT;
        }
        if self.sparse.is_some() {
            ext |= EXT_SPARSE;
        }
        if self.paging.is_some() {
            ext |= EXT_PAGING;
        }
        if self.composite.is_some() {
            ext |= EXT_COMPOSITE;
        }
        // Sized for the fixed part, dims and strides, buffer table, name and metadata, plus
        // room for the quantization block (and, after the encoding, a name and NUL appended by
        // the C ABI's handles), so the usual descriptor costs one allocation.
        let name_bytes = self.name.as_ref().map_or(0, |n| 4 + n.len());
        let metadata_bytes: usize = self.metadata.iter().map(|(k, v)| 8 + k.len() + v.len()).sum::<usize>() + 4;
        let mut out = Vec::with_capacity(
            FIXED_BYTES + rank * 16 + self.buffers.len() * BUFFER_HANDLE_BYTES + 2 * name_bytes + metadata_bytes + 64,
        );
        out.extend_from_slice(&DESCRIPTOR_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.push(self.element_type.code());
        out.push(self.layout.code());
        out.push(rank as u8);
        out.push(self.buffers.len() as u8);
        out.extend_from_slice(&ext.to_le_bytes());
        out.extend_from_slice(&self.byte_offset.to_le_bytes());
        for d in self.shape.dims() {
            out.extend_from_slice(&d.to_le_bytes());
        }
        if let LayoutDescriptor::Strided(s) = &self.layout {
            for x in s {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        for b in &self.buffers {
            out.extend_from_slice(&b.encode());
        }
        if let Some(n) = &self.name {
            out.extend_from_slice(&(n.len() as u32).to_le_bytes());
            out.extend_from_slice(n.as_bytes());
        }
        if !self.metadata.is_empty() {
            encode_metadata_block(&mut out, &self.metadata);
        }
        if let Some(Quantization::Block(b)) = &self.quantization {
            out.push(b.kind as u8);
            out.push(b.dequantized.code());
            out.push(b.scale_type.code());
            out.push(0);
            out.extend_from_slice(&b.axis.to_le_bytes());
            out.extend_from_slice(&b.block.to_le_bytes());
            out.extend_from_slice(&b.block2.to_le_bytes());
            out.extend_from_slice(&[0; 8]);
        } else if let Some(q) = &self.quantization {
            let (axis, scale, bias) = match *q {
                Quantization::PerTensorAffine { scale, bias, .. } => (0u32, scale, bias),
                Quantization::PerChannelAffine { axis, .. } => (axis, 0.0, 0.0),
                Quantization::Cast { .. } => (0, 0.0, 0.0),
                Quantization::Block(_) => unreachable!("encoded above"),
            };
            out.push(q.code());
            out.push(q.dequantized().code());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&axis.to_le_bytes());
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend_from_slice(&bias.to_le_bytes());
        }
        if let Some(s) = &self.sparse {
            s.encode(&mut out);
        }
        if let Some(p) = &self.paging {
            p.encode(&mut out);
        }
        if let Some(c) = &self.composite {
            c.encode(&mut out);
        }
        if out.len() > MAX_DESCRIPTOR_BYTES {
            bail!(LimitExceeded, "encoded descriptor is {} bytes, over {MAX_DESCRIPTOR_BYTES}", out.len());
        }
        Ok(out)
    }

    /// Decodes and validates an encoding produced by [`encode`](Self::encode). The whole slice
    /// must be consumed. Never allocates more than a small multiple of `bytes.len()`.
    ///
    /// Errors: `InvalidMagic`, `VersionMismatch`, `Corrupt` (truncated, trailing bytes, bad
    /// UTF-8, non-zero reserved bytes), `Unsupported` (reserved layouts, extensions, or
    /// quantization kinds), `LimitExceeded`, plus every error of [`new`](Self::new).
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() > MAX_DESCRIPTOR_BYTES {
            bail!(LimitExceeded, "descriptor of {} bytes exceeds {MAX_DESCRIPTOR_BYTES}", bytes.len());
        }
        let mut c = Cursor { b: bytes, pos: 0 };
        if c.take(4)? != DESCRIPTOR_MAGIC {
            bail!(InvalidMagic, "descriptor does not start with \"HRDS\"");
        }
        let version = c.u16()?;
        let v2 = version == crate::DESCRIPTOR_VERSION_2;
        if !(DESCRIPTOR_VERSION..=MAX_DESCRIPTOR_VERSION).contains(&version) {
            bail!(VersionMismatch, "descriptor version {version} (this build reads 1 and {MAX_DESCRIPTOR_VERSION})");
        }
        let flags = c.u16()?;
        let element_type = ElementType::from_code(c.u8()?)?;
        let layout_code = c.u8()?;
        let rank = c.u8()? as usize;
        let nbuf = c.u8()? as usize;
        let ext = c.u32()?;
        let byte_offset = c.u64()?;
        if layout_code > 2 && !(v2 && layout_code <= 7) {
            if layout_code <= 7 {
                bail!(Unsupported, "layout code {layout_code} (sparse/paged) is reserved in version 1");
            }
            bail!(InvalidLayout, "unknown layout code {layout_code}");
        }
        if rank > MAX_RANK {
            bail!(InvalidShape, "rank {rank} exceeds the maximum {MAX_RANK}");
        }
        if nbuf > MAX_BUFFERS {
            bail!(LimitExceeded, "{nbuf} buffers exceed the maximum {MAX_BUFFERS}");
        }
        if !v2 && ext & (EXT_SPARSE | EXT_PAGING | EXT_COMPOSITE) != 0 {
            bail!(Unsupported, "sparse, paging and composite extension blocks need descriptor version 2");
        }
        if ext & !EXT_KNOWN_V2 != 0 {
            bail!(Unsupported, "unknown extension bits {:#x}", ext & !EXT_KNOWN_V2);
        }
        let mut dims = Vec::with_capacity(rank);
        for _ in 0..rank {
            dims.push(c.u64()?);
        }
        let shape = Shape::new(dims)?;
        let layout = match layout_code {
            0 => LayoutDescriptor::RowMajor,
            1 => LayoutDescriptor::ColumnMajor,
            3 => LayoutDescriptor::Coo,
            4 => LayoutDescriptor::Csr,
            5 => LayoutDescriptor::Csc,
            6 => LayoutDescriptor::Bsr,
            7 => LayoutDescriptor::BlockPaged,
            _ => {
                let mut s = Vec::with_capacity(rank);
                for _ in 0..rank {
                    s.push(c.u64()? as i64);
                }
                LayoutDescriptor::Strided(s)
            }
        };
        let mut buffers = Vec::with_capacity(nbuf);
        for _ in 0..nbuf {
            buffers.push(BufferHandle::decode(c.take(BUFFER_HANDLE_BYTES)?)?);
        }
        let mut name = None;
        if ext & EXT_NAME != 0 {
            let n = c.u32()? as usize;
            if n > MAX_NAME_BYTES {
                bail!(LimitExceeded, "name of {n} bytes exceeds {MAX_NAME_BYTES}");
            }
            let n = c.utf8(n)?;
            // Same rules as `with_name` (no NUL: the C ABI hands names out NUL-terminated).
            check_name(&n)?;
            name = Some(n);
        }
        let mut metadata = Vec::new();
        if ext & EXT_METADATA != 0 {
            metadata = decode_metadata_block(&mut c)?;
        }
        let mut quantization = None;
        if ext & EXT_QUANT != 0 {
            let q = c.take(QUANT_BYTES)?;
            let kind = q[0];
            let dq = ElementType::from_code(q[1])?;
            if let Some(bk) = BlockKind::from_code(kind) {
                if version < 2 {
                    bail!(Unsupported, "quantization kind {kind} ({}) needs descriptor version 2", bk.name());
                }
                if q[3] != 0 || q[16..24].iter().any(|&x| x != 0) {
                    bail!(Corrupt, "reserved bytes of the {} quantization block are not zero", bk.name());
                }
                let u = |i: usize| u32::from_le_bytes(q[i..i + 4].try_into().unwrap());
                quantization = Some(Quantization::Block(BlockQuant {
                    kind: bk,
                    dequantized: dq,
                    scale_type: ElementType::from_code(q[2])?,
                    axis: u(4),
                    block: u(8),
                    block2: u(12),
                }));
            }
        }
        if ext & EXT_QUANT != 0 && quantization.is_none() {
            let q = &bytes[c.pos - QUANT_BYTES..c.pos];
            let kind = q[0];
            let dq = ElementType::from_code(q[1])?;
            if q[2] != 0 || q[3] != 0 {
                bail!(Corrupt, "reserved quantization bytes are not zero");
            }
            let axis = u32::from_le_bytes(q[4..8].try_into().unwrap());
            let scale = f64::from_le_bytes(q[8..16].try_into().unwrap());
            let bias = f64::from_le_bytes(q[16..24].try_into().unwrap());
            // Fields a kind does not use must be zero, so every accepted encoding is the one
            // `encode` writes (no hidden bits outside the checksummed meaning).
            let unused_nonzero = match kind {
                1 => axis != 0,
                2 => scale.to_bits() != 0 || bias.to_bits() != 0,
                3 => axis != 0 || scale.to_bits() != 0 || bias.to_bits() != 0,
                _ => false,
            };
            if unused_nonzero {
                bail!(Corrupt, "quantization kind {kind} has non-zero bytes in fields it does not use");
            }
            quantization = Some(match kind {
                1 => Quantization::PerTensorAffine { scale, bias, dequantized: dq },
                2 => Quantization::PerChannelAffine { axis, dequantized: dq },
                3 => Quantization::Cast { dequantized: dq },
                _ => bail!(Corrupt, "unknown quantization kind {kind}"),
            });
        }
        let sparse = if ext & EXT_SPARSE != 0 { Some(SparseInfo::decode(&mut c)?) } else { None };
        let paging = if ext & EXT_PAGING != 0 { Some(PagingInfo::decode(&mut c)?) } else { None };
        let composite = if ext & EXT_COMPOSITE != 0 { Some(CompositeInfo::decode(&mut c)?) } else { None };
        if c.pos != bytes.len() {
            bail!(Corrupt, "{} trailing bytes after the descriptor", bytes.len() - c.pos);
        }
        if v2
            && sparse.is_none()
            && paging.is_none()
            && composite.is_none()
            && min_version_for(element_type, quantization.as_ref()) < crate::DESCRIPTOR_VERSION_2
        {
            bail!(Corrupt, "a version-2 descriptor uses no version-2 block (it must be written as version 1)");
        }
        let mut d = TensorDescriptor::new(
            version,
            flags,
            element_type,
            shape,
            byte_offset,
            layout,
            buffers,
            quantization,
            sparse,
            paging,
            composite,
        )?;
        d.name = name;
        d.metadata = metadata;
        Ok(d)
    }
}

impl std::fmt::Display for TensorDescriptor {
    /// `float32[2,3] row-major` (plus ` "name"` when named).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[", self.element_type.name())?;
        for (i, d) in self.shape.dims().iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "] {}", self.layout.name())?;
        if let Some(n) = &self.name {
            write!(f, " {n:?}")?;
        }
        Ok(())
    }
}

/// The lowest descriptor version that can carry `element_type` with `quantization`.
pub fn min_version_for(element_type: ElementType, quantization: Option<&Quantization>) -> u16 {
    let q = match quantization {
        Some(Quantization::Block(_)) => 2,
        Some(q) => q.dequantized().min_version(),
        None => 1,
    };
    q.max(element_type.min_version())
}

impl TensorDescriptor {
    fn version2_feature(&self) -> String {
        match &self.quantization {
            Some(Quantization::Block(b)) => format!("{} quantization", b.kind.name()),
            _ => format!("element type {}", self.element_type.name()),
        }
    }
}

use crate::names::check_name;

/// Appends a metadata block (u32 entry count, then per entry u32 key length, key, u32 value
/// length, value; docs/spec/descriptor.md §Encoding).
pub(crate) fn encode_metadata_block(out: &mut Vec<u8>, metadata: &[(String, Vec<u8>)]) {
    out.extend_from_slice(&(metadata.len() as u32).to_le_bytes());
    for (k, v) in metadata {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
}

/// Reads a metadata block, checking every limit before taking bytes (1..=256 entries, keys
/// 1..=256 bytes of UTF-8 without NUL and unique, values up to 64 KiB).
pub(crate) fn decode_metadata_block(c: &mut Cursor) -> Result<Vec<(String, Vec<u8>)>> {
    let count = c.u32()? as usize;
    if count == 0 || count > MAX_METADATA_ENTRIES {
        bail!(Corrupt, "metadata block with {count} entries");
    }
    let mut metadata: Vec<(String, Vec<u8>)> = Vec::new();
    for _ in 0..count {
        let kl = c.u32()? as usize;
        if kl > MAX_METADATA_KEY_BYTES {
            bail!(LimitExceeded, "metadata key of {kl} bytes");
        }
        let k = c.utf8(kl)?;
        let vl = c.u32()? as usize;
        if vl > MAX_METADATA_VALUE_BYTES {
            bail!(LimitExceeded, "metadata value of {vl} bytes");
        }
        let v = c.take(vl)?.to_vec();
        check_metadata_entry(&k, &v)?;
        if metadata.iter().any(|(x, _)| *x == k) {
            bail!(DuplicateName, "metadata key {k:?} repeated");
        }
        metadata.push((k, v));
    }
    Ok(metadata)
}

/// Validates and encodes a stream's metadata (docs/spec/stream.md §Stream metadata): the same
/// block and rules as a descriptor's metadata. Errors: `InvalidArgument` (no entries, a bad
/// key), `LimitExceeded`, `DuplicateName`.
pub fn encode_stream_metadata(metadata: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    if metadata.is_empty() {
        bail!(InvalidArgument, "stream metadata needs at least one entry (omit it instead)");
    }
    if metadata.len() > MAX_METADATA_ENTRIES {
        bail!(LimitExceeded, "more than {MAX_METADATA_ENTRIES} metadata entries");
    }
    for (i, (k, v)) in metadata.iter().enumerate() {
        check_metadata_entry(k, v)?;
        if metadata[..i].iter().any(|(x, _)| x == k) {
            bail!(DuplicateName, "metadata key {k:?} repeated");
        }
    }
    let mut out = Vec::new();
    encode_metadata_block(&mut out, metadata);
    Ok(out)
}

/// Decodes a stream metadata block (exactly `bytes`; trailing bytes are `Corrupt`).
pub fn decode_stream_metadata(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut c = Cursor { b: bytes, pos: 0 };
    let md = decode_metadata_block(&mut c)?;
    if c.pos != bytes.len() {
        bail!(Corrupt, "{} trailing bytes after the stream metadata block", bytes.len() - c.pos);
    }
    Ok(md)
}

pub(crate) fn check_metadata_entry(key: &str, value: &[u8]) -> Result<()> {
    if key.is_empty() || key.len() > MAX_METADATA_KEY_BYTES || key.contains('\0') {
        bail!(InvalidArgument, "metadata key must be 1..={MAX_METADATA_KEY_BYTES} bytes without NUL");
    }
    if value.len() > MAX_METADATA_VALUE_BYTES {
        bail!(LimitExceeded, "metadata value of {} bytes exceeds {MAX_METADATA_VALUE_BYTES}", value.len());
    }
    Ok(())
}

/// Bounds-checked little-endian reader over a byte slice.
pub(crate) struct Cursor<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| {
            Error::new(
                ErrorKind::Corrupt,
                format!("needs {n} bytes at offset {}, only {} left", self.pos, self.b.len() - self.pos),
            )
        })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub(crate) fn utf8(&mut self, n: usize) -> Result<String> {
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| err!(Corrupt, "string field is not UTF-8"))
    }
}
