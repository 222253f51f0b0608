//! One-call descriptor construction (docs/spec/c-abi.md §Descriptors): the builder's fields in
//! one struct, so a language binding makes a descriptor with a single call instead of one
//! call per field. Validation is the builder's own (`hurray_core::DescriptorParts`).

use crate::buffer::HurrayBufferSpec;
use crate::decoder::HurrayMetadataView;
use crate::descriptor::*;
use hurray_core::{DescriptorParts, ElementType, Shape, TensorDescriptor};

use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;

/// Every field of a new descriptor, for `hurray_descriptor_new`. Pointers are borrowed for the
/// call only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayDescriptorSpec {
    /// Stored element type (`HURRAY_DTYPE_*`).
    pub element_type: u8,
    /// Layout code (`HURRAY_LAYOUT_ROW_MAJOR`, `_COLUMN_MAJOR` or `_STRIDED`).
    pub layout: u8,
    /// Must be 0.
    pub reserved: u16,
    /// Must be 0.
    pub reserved2: u32,
    /// Number of dimensions (0 for a scalar, at most 32).
    pub rank: usize,
    /// `rank` dimensions in elements, outermost first (NULL when `rank` is 0).
    pub dims: *const u64,
    /// `stride_count` strides in elements (NULL when `stride_count` is 0).
    pub strides: *const i64,
    /// Entries in `strides`: `rank` when `layout` is strided, else 0.
    pub stride_count: usize,
    /// Offset of element 0 in buffer 0, in bytes.
    pub byte_offset: u64,
    /// Entries in `buffers`; 0 gives one CPU buffer of exactly the needed size at 64-byte
    /// alignment (not for strided layouts), as the builder does.
    pub buffer_count: usize,
    /// The buffer table (NULL when `buffer_count` is 0).
    pub buffers: *const HurrayBufferSpec,
    /// The name as `name_len` bytes of UTF-8 without NUL; NULL for an unnamed descriptor (a
    /// non-NULL pointer with `name_len` 0 is the empty name).
    pub name: *const u8,
    /// Length of `name` in bytes.
    pub name_len: usize,
    /// Entries in `metadata`.
    pub metadata_count: usize,
    /// Metadata entries in order (NULL when `metadata_count` is 0); keys unique.
    pub metadata: *const HurrayMetadataView,
    /// Quantization (all zero for none: kind `HURRAY_QUANT_NONE` takes no parameters).
    pub quantization: HurrayQuantization,
}

/// Makes, validates and encodes a descriptor from `*spec` in one call; writes the owned
/// descriptor to `*out_descriptor` (destroy it with `hurray_descriptor_destroy`). The same
/// rules and errors as the `hurray_descriptor_builder_*` calls it stands for (the message names
/// the field that was refused): `INVALID_TYPE`, `INVALID_SHAPE`, `INVALID_LAYOUT`,
/// `INVALID_ALIGNMENT`, `BUFFER_TOO_SMALL`, `INVALID_ARGUMENT`, `DUPLICATE_NAME`,
/// `LIMIT_EXCEEDED`, `UNSUPPORTED`, `NULL_POINTER`.
///
/// Added in ABI 4 (additive).
///
/// # Safety
/// `spec` valid for reads and every pointer in it valid for its count; `out_descriptor` valid
/// for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_new(
    spec: *const HurrayDescriptorSpec,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_descriptor_new", || {
        non_null(spec, "spec")?;
        non_null(out_descriptor, "out_descriptor")?;
        // SAFETY: `spec` was checked non-NULL and, with every pointer in it, is valid for reads (# Safety).
        let d = unsafe { descriptor_of_spec(&*spec)? };
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { crate::handle::emit(out_descriptor, DescInner::new(d)?) };
        Ok(HURRAY_OK)
    })
}

/// Validates `*spec` by exactly the rules of `hurray_descriptor_new`, without making a
/// descriptor, and writes the buffer table the descriptor would have (the default table when
/// the spec has none) to `out_buffers`. `*inout_buffer_count` is the room in `out_buffers` on
/// entry and the table's entry count on return. A binding that keeps its descriptors as plain
/// values checks one with this call and learns the sizes of its buffers. Errors: those of
/// `hurray_descriptor_new` (`*inout_buffer_count` unchanged), and `BUFFER_TOO_SMALL` when the
/// table has more entries than there is room for (`*inout_buffer_count` is then the count
/// needed and nothing is written to `out_buffers`).
///
/// Added in ABI 4 (additive).
///
/// # Safety
/// `spec` valid for reads and every pointer in it valid for its count; `inout_buffer_count`
/// valid for one read and one write; `out_buffers` valid for `*inout_buffer_count` writes (may
/// be NULL when that is 0).
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_check(
    spec: *const HurrayDescriptorSpec,
    out_buffers: *mut HurrayBufferSpec,
    inout_buffer_count: *mut usize,
) -> HurrayStatus {
    guard("hurray_descriptor_check", || {
        non_null(spec, "spec")?;
        non_null(inout_buffer_count, "inout_buffer_count")?;
        // SAFETY: `inout_buffer_count` was checked non-NULL and is valid for reads (# Safety).
        let capacity = unsafe { *inout_buffer_count };
        if capacity > 0 {
            non_null(out_buffers, "out_buffers")?;
        }
        // SAFETY: `spec` was checked non-NULL and, with every pointer in it, is valid for reads (# Safety).
        let d = unsafe { descriptor_of_spec(&*spec)? };
        let table = d.buffers();
        // SAFETY: `inout_buffer_count` was checked non-NULL and is valid for one write (# Safety).
        unsafe { *inout_buffer_count = table.len() };
        if table.len() > capacity {
            return Err(FfiError::new(
                HURRAY_ERR_BUFFER_TOO_SMALL,
                format!("the buffer table has {} entries, room was given for {capacity}", table.len()),
            ));
        }
        for (i, h) in table.iter().enumerate() {
            // SAFETY: `out_buffers` is non-NULL here (capacity > 0 was checked) and valid for
            // `capacity` writes, and `i < table.len() <= capacity` (# Safety).
            unsafe { out_buffers.add(i).write(HurrayBufferSpec::from_handle(h)) };
        }
        Ok(HURRAY_OK)
    })
}

/// Validates a spec and makes its descriptor (the builder's rules: `DescriptorParts::build`).
/// Every length is checked against the format's limits before anything is copied, so a wrong
/// length is an error, never a huge allocation or a read past the caller's bytes.
///
/// # Safety
/// Every pointer in `s` valid for its count.
pub(crate) unsafe fn descriptor_of_spec(s: &HurrayDescriptorSpec) -> FfiResult<TensorDescriptor> {
    if s.reserved != 0 || s.reserved2 != 0 {
        return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "spec.reserved fields must be 0"));
    }
    check_name_len(s)?;
    if s.rank > hurray_core::MAX_RANK {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_SHAPE,
            format!("spec.rank: rank {} exceeds {}", s.rank, hurray_core::MAX_RANK),
        ));
    }
    if s.stride_count > hurray_core::MAX_RANK {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_LAYOUT,
            format!("spec.stride_count: {} strides exceed the rank limit {}", s.stride_count, hurray_core::MAX_RANK),
        ));
    }
    check_metadata_count(s)?;
    if s.buffer_count > hurray_core::MAX_BUFFERS {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("spec.buffers: {} buffers exceed {}", s.buffer_count, hurray_core::MAX_BUFFERS),
        ));
    }
    let element_type = ElementType::from_code(s.element_type)?;
    // SAFETY: `dims` holds `rank` entries (bounded above) when `rank` > 0 (# Safety).
    let dims = unsafe { crate::slices::slice_arg(s.dims, s.rank, "spec.dims")? };
    let shape = Shape::new(dims.to_vec())?;
    // SAFETY: `strides` holds `stride_count` entries (bounded above) (# Safety).
    let strides = unsafe { crate::slices::slice_arg(s.strides, s.stride_count, "spec.strides")? };
    let layout = layout_of(s.layout, strides, s.rank)?;
    let mut parts = DescriptorParts::new(element_type, shape);
    parts.layout = layout;
    parts.byte_offset = s.byte_offset;
    // SAFETY: `buffers` holds `buffer_count` entries (bounded above) (# Safety).
    let buffers = unsafe { crate::slices::slice_arg(s.buffers, s.buffer_count, "spec.buffers")? };
    parts.buffers = buffers.iter().map(|b| b.to_handle()).collect::<FfiResult<Vec<_>>>()?;
    parts.quantization = s.quantization.to_core()?;
    // SAFETY: the name's and the metadata's pointers are valid for their counts (# Safety).
    let (name, views) = unsafe { (spec_name(s)?, spec_metadata(s)?) };
    parts.name = name.map(str::to_owned);
    parts.metadata.reserve(views.len());
    for m in views {
        // SAFETY: spec_metadata checked every view (bounds and UTF-8 keys).
        let (k, v) = unsafe { checked_entry(m) };
        parts.metadata.push((k.to_owned(), v.to_vec()));
    }
    Ok(parts.build()?)
}

/// `LIMIT_EXCEEDED` for a name longer than the format allows (before anything is read).
pub(crate) fn check_name_len(s: &HurrayDescriptorSpec) -> FfiResult<()> {
    if !s.name.is_null() && s.name_len > hurray_core::MAX_NAME_BYTES {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("spec.name: a name of {} bytes exceeds {}", s.name_len, hurray_core::MAX_NAME_BYTES),
        ));
    }
    Ok(())
}

/// `LIMIT_EXCEEDED` for more metadata entries than the format allows (before any is read).
pub(crate) fn check_metadata_count(s: &HurrayDescriptorSpec) -> FfiResult<()> {
    if s.metadata_count > hurray_core::MAX_METADATA_ENTRIES {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("spec.metadata: {} entries exceed {}", s.metadata_count, hurray_core::MAX_METADATA_ENTRIES),
        ));
    }
    Ok(())
}

/// The spec's name, borrowed and checked to be UTF-8 (`None` for a NULL name).
///
/// # Safety
/// `name` valid for `name_len` bytes; [`check_name_len`] passed.
pub(crate) unsafe fn spec_name(s: &HurrayDescriptorSpec) -> FfiResult<Option<&str>> {
    if s.name.is_null() {
        return Ok(None);
    }
    // SAFETY: `name` holds `name_len` bytes, bounded by check_name_len (# Safety).
    let name = unsafe { crate::slices::slice_arg(s.name, s.name_len, "spec.name")? };
    Ok(Some(utf8_str(name, "spec.name")?))
}

/// The spec's metadata views, each checked: key and value lengths within the format's
/// limits, pointers valid for them, keys UTF-8. [`checked_entry`] then reads one.
///
/// # Safety
/// `metadata` valid for `metadata_count` views, each valid for its lengths;
/// [`check_metadata_count`] passed.
pub(crate) unsafe fn spec_metadata(s: &HurrayDescriptorSpec) -> FfiResult<&[HurrayMetadataView]> {
    // SAFETY: `metadata` holds `metadata_count` entries, bounded by check_metadata_count (# Safety).
    let views = unsafe { crate::slices::slice_arg(s.metadata, s.metadata_count, "spec.metadata")? };
    for (i, m) in views.iter().enumerate() {
        if m.key_len > hurray_core::MAX_METADATA_KEY_BYTES || m.value_len > hurray_core::MAX_METADATA_VALUE_BYTES {
            return Err(FfiError::new(
                HURRAY_ERR_LIMIT_EXCEEDED,
                format!(
                    "spec.metadata[{i}]: key of {} bytes or value of {} bytes exceeds the limits",
                    m.key_len, m.value_len
                ),
            ));
        }
        // SAFETY: each view's key and value are valid for their lengths (bounded above) (# Safety).
        let k = unsafe { crate::slices::slice_arg(m.key, m.key_len, "spec.metadata key")? };
        // SAFETY: as above.
        unsafe { crate::slices::slice_arg(m.value, m.value_len, "spec.metadata value")? };
        utf8_str(k, "spec.metadata key")?;
    }
    Ok(views)
}

/// One entry of a view list [`spec_metadata`] accepted.
///
/// # Safety
/// `m` is one of the views [`spec_metadata`] returned, its memory unchanged since.
pub(crate) unsafe fn checked_entry<'a>(m: &'a HurrayMetadataView) -> (&'a str, &'a [u8]) {
    let part = |p: *const u8, len: usize| -> &'a [u8] {
        if len == 0 {
            &[]
        } else {
            // SAFETY: checked non-NULL and valid for `len` bytes by spec_metadata (# Safety).
            unsafe { std::slice::from_raw_parts(p, len) }
        }
    };
    let k = part(m.key, m.key_len);
    // SAFETY: spec_metadata checked the key to be UTF-8 (# Safety).
    (unsafe { std::str::from_utf8_unchecked(k) }, part(m.value, m.value_len))
}
