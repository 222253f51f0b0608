//! One-call descriptor construction (docs/spec/c-abi.md §Descriptors): the builder's fields in
//! one struct, so a language binding makes a descriptor with a single call instead of one
//! call per field. Validation is the builder's own: this function drives the builder.

use std::ffi::c_char;

use crate::buffer::HurrayBufferSpec;
use crate::decoder::HurrayMetadataView;
use crate::descriptor::*;
use crate::panic::{guard, last_error_message, non_null, FfiError, FfiResult};
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
    /// Quantization (`kind == HURRAY_QUANT_NONE` for none).
    pub quantization: HurrayQuantization,
}

/// Makes, validates and encodes a descriptor from `*spec` in one call; writes the owned
/// descriptor to `*out_descriptor` (destroy it with `hurray_descriptor_destroy`). The same
/// rules and errors as the `hurray_descriptor_builder_*` calls it stands for (the message names
/// the builder step that failed): `INVALID_TYPE`, `INVALID_SHAPE`, `INVALID_LAYOUT`,
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
        // SAFETY: checked non-NULL; the caller vouches for the rest.
        let s = unsafe { *spec };
        if s.reserved != 0 || s.reserved2 != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "spec.reserved fields must be 0"));
        }
        // Lengths are checked against the format's limits before anything is copied, so a
        // wrong length is an error, never a huge allocation or a read past the caller's bytes.
        if !s.name.is_null() && s.name_len > hurray_core::MAX_NAME_BYTES {
            return Err(FfiError::new(
                HURRAY_ERR_LIMIT_EXCEEDED,
                format!("a name of {} bytes exceeds {}", s.name_len, hurray_core::MAX_NAME_BYTES),
            ));
        }
        if s.rank > hurray_core::MAX_RANK || s.stride_count > hurray_core::MAX_RANK {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_SHAPE,
                format!("rank {} exceeds {}", s.rank.max(s.stride_count), hurray_core::MAX_RANK),
            ));
        }
        if s.metadata_count > 0 && !s.metadata.is_null() && s.metadata_count <= hurray_core::MAX_METADATA_ENTRIES {
            for i in 0..s.metadata_count {
                // SAFETY: `metadata` holds `metadata_count` entries (caller contract, count bounded).
                let m = unsafe { *s.metadata.add(i) };
                if m.key_len > hurray_core::MAX_METADATA_KEY_BYTES
                    || m.value_len > hurray_core::MAX_METADATA_VALUE_BYTES
                {
                    return Err(FfiError::new(
                        HURRAY_ERR_LIMIT_EXCEEDED,
                        format!(
                            "metadata entry {i}: key of {} bytes or value of {} bytes exceeds the limits",
                            m.key_len, m.value_len
                        ),
                    ));
                }
            }
        }
        let mut b = std::ptr::null_mut();
        // SAFETY: the builder calls get the caller's pointers with the caller's counts.
        step(unsafe { hurray_descriptor_builder_new(s.element_type, s.dims, s.rank, &mut b) })?;
        // SAFETY: `b` is a live builder (just made), `s` was read from the caller's spec and `out_descriptor` checked
        // non-NULL above: fill_and_build's contract.
        let r = unsafe { fill_and_build(b, &s, out_descriptor) };
        // SAFETY: `b` came from hurray_descriptor_builder_new (or is NULL).
        unsafe { hurray_descriptor_builder_destroy(&mut b) };
        r?;
        Ok(HURRAY_OK)
    })
}

/// Sets every field of `*s` on builder `b` and builds.
///
/// # Safety
/// As `hurray_descriptor_new`; `b` a live builder.
unsafe fn fill_and_build(
    b: *mut HurrayDescriptorBuilder,
    s: &HurrayDescriptorSpec,
    out: *mut *mut HurrayDescriptor,
) -> FfiResult<()> {
    // SAFETY: `b` is a live builder and `s`'s pointers are valid for their counts (this function's # Safety); every
    // call below is an exported builder function with that contract.
    unsafe {
        step(hurray_descriptor_builder_set_layout(b, s.layout, s.strides, s.stride_count))?;
        if s.byte_offset != 0 {
            step(hurray_descriptor_builder_set_byte_offset(b, s.byte_offset))?;
        }
        if s.buffer_count > 0 {
            non_null(s.buffers, "spec.buffers")?;
            if s.buffer_count > hurray_core::MAX_BUFFERS {
                return Err(FfiError::new(HURRAY_ERR_LIMIT_EXCEEDED, "at most 64 buffers"));
            }
            for i in 0..s.buffer_count {
                step(hurray_descriptor_builder_add_buffer(b, s.buffers.add(i)))?;
            }
        }
        if s.quantization.kind != HURRAY_QUANT_NONE {
            step(hurray_descriptor_builder_set_quantization(b, &s.quantization))?;
        }
        if !s.name.is_null() {
            step(hurray_descriptor_builder_set_name(b, s.name as *const c_char, s.name_len))?;
        }
        if s.metadata_count > 0 {
            non_null(s.metadata, "spec.metadata")?;
            if s.metadata_count > hurray_core::MAX_METADATA_ENTRIES {
                return Err(FfiError::new(HURRAY_ERR_LIMIT_EXCEEDED, "more than 256 metadata entries"));
            }
            for i in 0..s.metadata_count {
                let m = *s.metadata.add(i);
                step(hurray_descriptor_builder_add_metadata(b, m.key, m.key_len, m.value, m.value_len))?;
            }
        }
        step(hurray_descriptor_builder_build(b, out))?;
    }
    Ok(())
}

/// A failed builder step as an error carrying that step's message.
fn step(status: HurrayStatus) -> FfiResult<()> {
    if status < 0 {
        return Err(FfiError::new(status, last_error_message()));
    }
    Ok(())
}
