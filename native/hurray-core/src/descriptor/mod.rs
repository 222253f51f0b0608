//! Tensor descriptors: what a tensor's bytes mean (docs/spec/descriptor.md).
//!
//! - this file: the [`TensorDescriptor`] type, its constructors and accessors, and
//!   [`Quantization`];
//! - `layout.rs`: [`LayoutDescriptor`];
//! - `blocks.rs`: the version-2 blocks ([`SparseInfo`], [`PagingInfo`], [`CompositeInfo`]);
//! - `encode.rs` and `decode.rs`: the binary encoding, and stream metadata's block;
//! - `validate.rs`: every rule a descriptor obeys; each constructor and `decode` ends there.

mod blocks;
mod decode;
mod encode;
mod layout;
mod validate;

pub use crate::wire::DESCRIPTOR_MAGIC;
pub use blocks::{CompositeInfo, IndexType, PagingInfo, SparseInfo};
pub use decode::decode_stream_metadata;
pub(crate) use decode::DecodeTemplate;
pub use encode::encode_stream_metadata;
pub use layout::LayoutDescriptor;
pub(crate) use validate::{check_metadata_entry, check_metadata_list, compressed_dims, row_bytes};

use std::sync::Arc;

use crate::buffer::BufferHandle;
use crate::error::{bail, err, Result};
use crate::names::check_name;
use crate::quant::BlockQuant;
use crate::shape::Shape;
use crate::types::ElementType;
use crate::wire::{DESCRIPTOR_VERSION, MAX_METADATA_ENTRIES};

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

/// A validated tensor descriptor: element type, shape, layout, buffer table, and the optional
/// name, key/value metadata and quantization. Immutable once built; every constructor
/// validates, so any `TensorDescriptor` value encodes. Clones share the dimensions, the buffer
/// table and the metadata list (only the name and a strided layout's strides are copied).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDescriptor {
    version: u16,
    flags: u16,
    element_type: ElementType,
    shape: Shape,
    byte_offset: u64,
    buffers: Arc<[BufferHandle]>,
    name: Option<String>,
    metadata: MetadataList,
    /// The layout and the optional blocks; `None` for a row-major descriptor without any
    /// (never `Some` of that: see [`Extensions::pack`]).
    ext: Option<Box<Extensions>>,
}

/// The fields a plain row-major descriptor leaves at their defaults, kept out of line so that a
/// descriptor (and a decoded tensor, which a decoder moves by value several times) stays small
/// enough to be moved without a `memcpy` call.
#[derive(Clone, Debug, PartialEq)]
struct Extensions {
    layout: LayoutDescriptor,
    quantization: Option<Quantization>,
    sparse: Option<SparseInfo>,
    paging: Option<PagingInfo>,
    composite: Option<CompositeInfo>,
}

/// What `TensorDescriptor::ext` stands for when it is `None`.
static PLAIN: Extensions =
    Extensions { layout: LayoutDescriptor::RowMajor, quantization: None, sparse: None, paging: None, composite: None };

impl Extensions {
    /// `None` for the defaults (so that equal descriptors compare equal), else the box.
    fn pack(self) -> Option<Box<Extensions>> {
        (self != PLAIN).then(|| Box::new(self))
    }
}

/// Key/value metadata entries, in order.
type Entries = Vec<(String, Vec<u8>)>;

/// A descriptor's metadata entries, shared by its clones; an empty list holds no allocation.
#[derive(Clone, Default)]
struct MetadataList(Option<Arc<Entries>>);

impl MetadataList {
    fn from_vec(v: Entries) -> Self {
        MetadataList((!v.is_empty()).then(|| Arc::new(v)))
    }
    /// The entries to change: shared ones are copied first.
    fn make_mut(&mut self) -> &mut Entries {
        Arc::make_mut(self.0.get_or_insert_with(Default::default))
    }
}

impl std::ops::Deref for MetadataList {
    type Target = [(String, Vec<u8>)];
    fn deref(&self) -> &Self::Target {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl PartialEq for MetadataList {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for MetadataList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl TensorDescriptor {
    /// Makes and validates a descriptor. Arguments, in the order of docs/spec/descriptor.md §The
    /// Rust constructor:
    ///
    /// 1. `version`: descriptor format version, 1 or
    ///    [`MAX_DESCRIPTOR_VERSION`](crate::MAX_DESCRIPTOR_VERSION) (2); must be at least
    ///    [`min_version`](Self::min_version) (else `Unsupported`).
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
        Self::with_table(
            version,
            flags,
            element_type,
            shape,
            byte_offset,
            layout,
            buffers.into(),
            quantization,
            sparse,
            paging,
            composite,
        )
    }

    /// As [`new`](Self::new), with the buffer table already in its shared form.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn with_table(
        version: u16,
        flags: u16,
        element_type: ElementType,
        shape: Shape,
        byte_offset: u64,
        layout: LayoutDescriptor,
        buffers: Arc<[BufferHandle]>,
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
            buffers,
            name: None,
            metadata: MetadataList::default(),
            ext: Extensions { layout, quantization, sparse, paging, composite }.pack(),
        };
        d.validate()?;
        Ok(d)
    }

    /// A clone without the name (which is the one field a clone copies on the heap), sharing
    /// everything else.
    pub(crate) fn clone_unnamed(&self) -> Self {
        // Destructured so that a new field cannot be forgotten here.
        let Self { version, flags, element_type, shape, byte_offset, buffers, name: _, metadata, ext } = self;
        TensorDescriptor {
            version: *version,
            flags: *flags,
            element_type: *element_type,
            shape: shape.clone(),
            byte_offset: *byte_offset,
            buffers: buffers.clone(),
            name: None,
            metadata: metadata.clone(),
            ext: ext.clone(),
        }
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

    /// Returns this descriptor with a UTF-8 name (at most
    /// [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) bytes, no NUL).
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
        let Self { version, flags, element_type, shape, byte_offset, buffers, name: _, metadata, ext: _ } = self;
        let Extensions { layout, quantization, sparse, paging, composite } = self.ext();
        let o = other.ext();
        *version == other.version
            && *flags == other.flags
            && *element_type == other.element_type
            && *shape == other.shape
            && *byte_offset == other.byte_offset
            && *layout == o.layout
            && *buffers == other.buffers
            && same_quantization_bits(quantization, &o.quantization)
            && *metadata == other.metadata
            && *sparse == o.sparse
            && *paging == o.paging
            && *composite == o.composite
    }

    /// Returns this descriptor with one more key/value metadata entry. Keys are UTF-8, unique,
    /// 1..=[`MAX_METADATA_KEY_BYTES`](crate::MAX_METADATA_KEY_BYTES) bytes; values at most
    /// [`MAX_METADATA_VALUE_BYTES`](crate::MAX_METADATA_VALUE_BYTES) bytes; at most
    /// [`MAX_METADATA_ENTRIES`] entries. Errors: `InvalidArgument`, `DuplicateName`,
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
        self.metadata.make_mut().push((key, value));
        Ok(self)
    }

    /// Replaces the name and the metadata list in place, reusing their allocations: what
    /// [`DescriptorParts::build`](crate::DescriptorParts::build) would make of the same parts
    /// with this name and metadata, for a writer that encodes many descriptors differing only
    /// in those. `metadata` yields `(key, value)` in order and may be iterated more than once.
    /// Checks as `build` does, in its order: the metadata list (entry limits, unique keys, the
    /// entry count), then the name. Errors: `InvalidArgument`, `LimitExceeded`,
    /// `DuplicateName`; on an error the descriptor is unchanged. The encoding's length limit is
    /// checked by [`encode`](Self::encode) as for any descriptor.
    pub fn renew_strings<'a, I>(&mut self, name: Option<&str>, metadata: I) -> Result<()>
    where
        I: ExactSizeIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        let count = metadata.len();
        check_metadata_list(metadata.clone())?;
        if let Some(n) = name {
            check_name(n)?;
        }
        match (name, &mut self.name) {
            (Some(n), Some(s)) => {
                s.clear();
                s.push_str(n);
            }
            (Some(n), slot) => *slot = Some(n.to_owned()),
            (None, slot) => *slot = None,
        }
        if count == 0 {
            // Keeps an unshared list's allocation for a later renewal with entries.
            match self.metadata.0.as_mut().and_then(Arc::get_mut) {
                Some(list) => list.clear(),
                None => self.metadata = MetadataList::default(),
            }
            return Ok(());
        }
        let list = self.metadata.make_mut();
        list.truncate(count);
        for (i, (k, v)) in metadata.enumerate() {
            match list.get_mut(i) {
                Some((key, value)) => {
                    key.clear();
                    key.push_str(k);
                    value.clear();
                    value.extend_from_slice(v);
                }
                None => list.push((k.to_owned(), v.to_vec())),
            }
        }
        Ok(())
    }

    /// Sets the metadata list that [`crate::parts::check_metadata`] accepted.
    pub(crate) fn replace_checked_metadata(&mut self, metadata: Vec<(String, Vec<u8>)>) {
        self.metadata = MetadataList::from_vec(metadata);
    }

    /// Returns this descriptor with its composite-membership block replaced (`None` removes
    /// it), the version adjusted to the lowest one that can encode the result, revalidated.
    /// Writers of composites use it to stamp members with their position.
    pub fn with_composite(mut self, composite: Option<CompositeInfo>) -> Result<Self> {
        let mut ext = self.ext.take().map_or_else(|| PLAIN.clone(), |e| *e);
        ext.composite = composite;
        self.ext = ext.pack();
        self.version = self.required_version();
        self.validate()?;
        Ok(self)
    }

    /// Sparse block (COO/CSR/CSC/BSR), if any.
    pub fn sparse(&self) -> Option<&SparseInfo> {
        self.ext().sparse.as_ref()
    }
    /// Paging block (block-paged layout), if any.
    pub fn paging(&self) -> Option<&PagingInfo> {
        self.ext().paging.as_ref()
    }
    /// Composite-membership block, if any.
    pub fn composite(&self) -> Option<&CompositeInfo> {
        self.ext().composite.as_ref()
    }
    /// True for a composite head: a buffer-less descriptor whose members follow it.
    pub fn is_composite_head(&self) -> bool {
        self.ext().composite.as_ref().is_some_and(|c| c.member_count() > 0)
    }

    /// The lowest descriptor version that can encode this descriptor: 2 when it uses a
    /// sparse, paging or composite block, a version-2 element type or a block quantization
    /// kind, else 1 (docs/spec/descriptor.md §Version policy).
    pub fn required_version(&self) -> u16 {
        let blocks = if self.ext().sparse.is_some() || self.ext().paging.is_some() || self.ext().composite.is_some() {
            crate::DESCRIPTOR_VERSION_2
        } else {
            DESCRIPTOR_VERSION
        };
        blocks.max(min_version_for(self.element_type, self.ext().quantization.as_ref()))
    }

    /// The layout and optional blocks (the defaults when not stored).
    fn ext(&self) -> &Extensions {
        self.ext.as_deref().unwrap_or(&PLAIN)
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
        &self.ext().layout
    }
    /// Strides in elements for a strided layout, else `None`.
    pub fn strides(&self) -> Option<&[i64]> {
        match &self.ext().layout {
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
        self.ext().quantization.as_ref()
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
        write!(f, "] {}", self.ext().layout.name())?;
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
