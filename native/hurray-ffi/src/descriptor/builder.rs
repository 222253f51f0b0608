//! The descriptor builder: a C caller sets a new descriptor's fields one by one and
//! `hurray_descriptor_builder_build` validates them in the core.

use std::ffi::c_char;

use hurray_core::{ElementType, LayoutDescriptor, Quantization, Shape};

use crate::buffer::HurrayBufferSpec;
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;

use super::{DescInner, HurrayDescriptor, HurrayQuantization};

/// Builder state (docs/spec/c-abi.md §Building descriptors).
pub struct BuilderInner {
    element_type: ElementType,
    dims: Vec<u64>,
    layout: LayoutDescriptor,
    byte_offset: u64,
    buffers: Vec<HurrayBufferSpec>,
    quantization: HurrayQuantization,
    /// Set by `hurray_descriptor_builder_set_block_quant`; overrides `quantization`.
    pub(crate) block: Option<hurray_core::BlockQuant>,
    name: Option<String>,
    metadata: Vec<(String, Vec<u8>)>,
    sparse: crate::sparse::HurraySparse,
    paging: crate::sparse::HurrayPaging,
}

/// Accumulates the fields of a new descriptor; `hurray_descriptor_builder_build` validates
/// them. Owned; destroy with `hurray_descriptor_builder_destroy`.
pub struct HurrayDescriptorBuilder {
    pub(crate) shell: crate::handle::Shell<BuilderInner>,
}
opaque_handle!(HurrayDescriptorBuilder, BuilderInner, 0x4855_5252_4442_3031);

unsafe fn bytes_arg<'a>(p: *const u8, len: usize, name: &str) -> FfiResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: the caller guarantees `p` is valid for `len` bytes.
    unsafe { crate::slices::slice_arg(p, len, name) }
}

pub(crate) fn utf8(b: &[u8], name: &str) -> FfiResult<String> {
    utf8_str(b, name).map(str::to_owned)
}

/// `b` as UTF-8, borrowed; `INVALID_ARGUMENT` naming `name` otherwise.
pub(crate) fn utf8_str<'a>(b: &'a [u8], name: &str) -> FfiResult<&'a str> {
    std::str::from_utf8(b).map_err(|_| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("{name} is not UTF-8")))
}

/// Starts a row-major descriptor of `element_type` (`HURRAY_DTYPE_*`) and shape
/// `dims[0..rank]` (u64 elements, outermost first; `dims` may be NULL when `rank` is 0).
/// Errors: `INVALID_TYPE`, `INVALID_SHAPE` (rank > 32 or element count overflow).
///
/// # Safety
/// `dims` valid for `rank` u64; `out_builder` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_new(
    element_type: u8,
    dims: *const u64,
    rank: usize,
    out_builder: *mut *mut HurrayDescriptorBuilder,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_new", || {
        non_null(out_builder, "out_builder")?;
        let et = ElementType::from_code(element_type)?;
        if rank > hurray_core::MAX_RANK {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_SHAPE,
                format!("rank {rank} exceeds {}", hurray_core::MAX_RANK),
            ));
        }
        let d = if rank == 0 {
            Vec::new()
        } else {
            non_null(dims, "dims")?;
            // SAFETY: `dims` is non-NULL (checked just above) and valid for `rank` reads (# Safety).
            unsafe { std::slice::from_raw_parts(dims, rank) }.to_vec()
        };
        Shape::new(d.clone())?;
        let b = BuilderInner {
            element_type: et,
            dims: d,
            layout: LayoutDescriptor::RowMajor,
            byte_offset: 0,
            buffers: Vec::new(),
            quantization: HurrayQuantization::default(),
            block: None,
            name: None,
            metadata: Vec::new(),
            sparse: Default::default(),
            paging: Default::default(),
        };
        // SAFETY: `out_builder` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_builder, b) };
        Ok(HURRAY_OK)
    })
}

/// Sets the layout (`HURRAY_LAYOUT_ROW_MAJOR`, `_COLUMN_MAJOR`, or `_STRIDED` with
/// `strides[0..count]` in elements, `count == rank`). Errors: `INVALID_LAYOUT`,
/// `UNSUPPORTED` (reserved sparse/paged codes).
///
/// # Safety
/// `builder` live; `strides` valid for `count` i64.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_layout(
    builder: *mut HurrayDescriptorBuilder,
    layout: u8,
    strides: *const i64,
    count: usize,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_layout", || {
        let b = handle::handle_mut!(builder)?;
        // SAFETY: `strides` is valid for `count` reads (# Safety); slice_arg rejects NULL with a non-zero count.
        let s = unsafe { crate::slices::slice_arg(strides, count, "strides")? };
        b.layout = layout_of(layout, s, b.dims.len())?;
        Ok(HURRAY_OK)
    })
}

/// The layout for a code and its strides (for a rank-`rank` shape): the
/// rules `hurray_descriptor_builder_set_layout` and `hurray_descriptor_new` share. The sparse
/// and paged codes take their parameters from their own blocks.
pub(crate) fn layout_of(code: u8, strides: &[i64], rank: usize) -> FfiResult<LayoutDescriptor> {
    let count = strides.len();
    if code != 2 && count != 0 {
        return Err(FfiError::new(HURRAY_ERR_INVALID_LAYOUT, "strides are only for HURRAY_LAYOUT_STRIDED"));
    }
    Ok(match code {
        0 => LayoutDescriptor::RowMajor,
        1 => LayoutDescriptor::ColumnMajor,
        2 if count != rank => {
            return Err(FfiError::new(HURRAY_ERR_INVALID_LAYOUT, format!("{count} strides for rank {rank}")))
        }
        2 => LayoutDescriptor::Strided(strides.to_vec()),
        3 => LayoutDescriptor::Coo,
        4 => LayoutDescriptor::Csr,
        5 => LayoutDescriptor::Csc,
        6 => LayoutDescriptor::Bsr,
        7 => LayoutDescriptor::BlockPaged,
        _ => return Err(FfiError::new(HURRAY_ERR_INVALID_LAYOUT, format!("unknown layout code {code}"))),
    })
}

/// Sets the byte offset of element 0 inside buffer 0.
///
/// # Safety
/// `builder` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_byte_offset(
    builder: *mut HurrayDescriptorBuilder,
    byte_offset: u64,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_byte_offset", || {
        handle::handle_mut!(builder)?.byte_offset = byte_offset;
        Ok(HURRAY_OK)
    })
}

/// Sets the name: `len` UTF-8 bytes (no NUL needed; none allowed), at most 4096.
///
/// # Safety
/// `builder` live; `name` valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_name(
    builder: *mut HurrayDescriptorBuilder,
    name: *const c_char,
    len: usize,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_name", || {
        let b = handle::handle_mut!(builder)?;
        // SAFETY: `name as *const u8` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL
        // with a non-zero length.
        let s = utf8(unsafe { bytes_arg(name as *const u8, len, "name")? }, "name")?;
        if s.len() > hurray_core::MAX_NAME_BYTES || s.contains('\0') {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "name must be at most 4096 bytes without NUL"));
        }
        b.name = Some(s);
        Ok(HURRAY_OK)
    })
}

/// Appends a buffer-table entry. If no entry is added before `build`, a dense layout gets one
/// CPU buffer of exactly the needed size at 64-byte alignment.
///
/// # Safety
/// `builder` live; `spec` valid.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_add_buffer(
    builder: *mut HurrayDescriptorBuilder,
    spec: *const HurrayBufferSpec,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_add_buffer", || {
        let b = handle::handle_mut!(builder)?;
        non_null(spec, "spec")?;
        // SAFETY: `spec` was checked non-NULL above and is valid for one read (# Safety).
        let s = unsafe { *spec };
        s.to_handle()?;
        if b.buffers.len() >= hurray_core::MAX_BUFFERS {
            return Err(FfiError::new(HURRAY_ERR_LIMIT_EXCEEDED, "at most 64 buffers"));
        }
        b.buffers.push(s);
        Ok(HURRAY_OK)
    })
}

/// Sets (or, with `kind == HURRAY_QUANT_NONE` and every other field 0, clears) the
/// quantization block. Errors: `INVALID_ARGUMENT` (unknown kind, reserved bits, a parameter
/// under kind NONE), `INVALID_TYPE`, `UNSUPPORTED` (block kinds 4–9).
///
/// # Safety
/// `builder` live; `quantization` valid.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_quantization(
    builder: *mut HurrayDescriptorBuilder,
    quantization: *const HurrayQuantization,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_quantization", || {
        let b = handle::handle_mut!(builder)?;
        non_null(quantization, "quantization")?;
        // SAFETY: `quantization` was checked non-NULL above and is valid for one read (# Safety).
        let q = unsafe { *quantization };
        q.to_core()?;
        b.quantization = q;
        Ok(HURRAY_OK)
    })
}

/// Adds a key/value metadata entry (key: 1..=256 UTF-8 bytes, unique; value: ≤ 64 KiB).
/// Errors: `INVALID_ARGUMENT`, `DUPLICATE_NAME`, `LIMIT_EXCEEDED`.
///
/// # Safety
/// `builder` live; `key`/`value` valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_add_metadata(
    builder: *mut HurrayDescriptorBuilder,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_add_metadata", || {
        let b = handle::handle_mut!(builder)?;
        // SAFETY: `key` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL with a
        // non-zero length.
        let k = utf8(unsafe { bytes_arg(key, key_len, "key")? }, "key")?;
        // SAFETY: `value` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL with a
        // non-zero length.
        let v = unsafe { bytes_arg(value, value_len, "value")? }.to_vec();
        // The core checks the entry against the ones already added (limits live there).
        hurray_core::parts::check_new_metadata_entry(&b.metadata, &k, &v)?;
        b.metadata.push((k, v));
        Ok(HURRAY_OK)
    })
}

/// Validates the accumulated fields and makes a new owned descriptor. The builder stays
/// usable. Errors: every validation error of `hurray_descriptor_decode`.
///
/// # Safety
/// `builder` live; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_build(
    builder: *const HurrayDescriptorBuilder,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_build", || {
        let b = handle::handle_ref!(builder)?;
        non_null(out_descriptor, "out_descriptor")?;
        let mut parts = hurray_core::DescriptorParts::new(b.element_type, Shape::new(b.dims.clone())?);
        parts.layout = b.layout.clone();
        parts.byte_offset = b.byte_offset;
        parts.buffers = b.buffers.iter().map(|s| s.to_handle()).collect::<FfiResult<Vec<_>>>()?;
        parts.quantization = match b.block {
            Some(bq) => Some(Quantization::Block(bq)),
            None => b.quantization.to_core()?,
        };
        parts.sparse = b.sparse.to_core()?;
        parts.paging = b.paging.to_core()?;
        parts.name = b.name.clone();
        parts.metadata = b.metadata.clone();
        let d = parts.build()?;
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_descriptor, DescInner::new(d)?) };
        Ok(HURRAY_OK)
    })
}

/// Sets the sparse block of a COO/CSR/CSC/BSR descriptor (set the layout too, and add the
/// buffers in the order docs/spec/descriptor.md §Sparse layouts gives). `index_type == 0`
/// removes it. Checked at build time. Added within ABI 4.
///
/// # Safety
/// `builder` live; `sparse` valid for one read.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_sparse(
    builder: *mut HurrayDescriptorBuilder,
    sparse: *const crate::sparse::HurraySparse,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_sparse", || {
        let b = handle::handle_mut!(builder)?;
        non_null(sparse, "sparse")?;
        // SAFETY: `sparse` was checked non-NULL above and is valid for one read (# Safety).
        b.sparse = unsafe { *sparse };
        Ok(HURRAY_OK)
    })
}

/// Sets the paging block of a block-paged descriptor (layout `HURRAY_LAYOUT_PAGED`; buffers:
/// pages, then the page table). `index_type == 0` removes it. Checked at build time. Added
/// within ABI 4.
///
/// # Safety
/// `builder` live; `paging` valid for one read.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_paging(
    builder: *mut HurrayDescriptorBuilder,
    paging: *const crate::sparse::HurrayPaging,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_paging", || {
        let b = handle::handle_mut!(builder)?;
        non_null(paging, "paging")?;
        // SAFETY: `paging` was checked non-NULL above and is valid for one read (# Safety).
        b.paging = unsafe { *paging };
        Ok(HURRAY_OK)
    })
}

/// Destroys a builder and writes NULL to `*builder`; NULL or `*builder == NULL` is a no-op.
///
/// # Safety
/// `builder` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_destroy(builder: *mut *mut HurrayDescriptorBuilder) -> HurrayStatus {
    guard("hurray_descriptor_builder_destroy", || {
        // SAFETY: `builder` is NULL or valid for a read and a write; `*builder` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(builder, "builder")? };
        Ok(HURRAY_OK)
    })
}
