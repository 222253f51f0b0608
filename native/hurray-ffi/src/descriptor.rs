//! Descriptor handles: decode, read fields off, encode, and originate descriptors from C
//! (the encode surface; docs/spec/c-abi.md §Descriptors: reading and building).

use std::ffi::c_char;

use hurray_core::{ElementType, LayoutDescriptor, Quantization, Shape, TensorDescriptor};

use crate::buffer::HurrayBufferSpec;
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;

/// A descriptor plus its cached encoding and NUL-terminated name.
pub struct DescInner {
    pub(crate) desc: TensorDescriptor,
    /// The encoding, then (when named) the name and a NUL: one allocation for both.
    bytes: Vec<u8>,
    encoded_len: usize,
}

impl DescInner {
    pub(crate) fn new(desc: TensorDescriptor) -> FfiResult<Self> {
        // `encode` leaves room for the name and NUL: usually no second allocation.
        let mut bytes = desc.encode()?;
        let encoded_len = bytes.len();
        if let Some(n) = desc.name() {
            bytes.extend_from_slice(n.as_bytes());
            bytes.push(0);
        }
        Ok(DescInner { desc, bytes, encoded_len })
    }

    /// `encoded` must be `desc`'s encoding, e.g. the bytes `desc` was decoded from: a
    /// descriptor has one encoding, and decoding accepts only it (docs/spec/descriptor.md), so
    /// this saves encoding it again.
    pub(crate) fn with_encoding(desc: TensorDescriptor, encoded: &[u8]) -> Self {
        debug_assert_eq!(desc.encode().ok().as_deref(), Some(encoded), "not the descriptor's encoding");
        let name = desc.name().map_or(&[][..], str::as_bytes);
        let mut bytes = Vec::with_capacity(encoded.len() + name.len() + 1);
        bytes.extend_from_slice(encoded);
        if desc.name().is_some() {
            bytes.extend_from_slice(name);
            bytes.push(0);
        }
        DescInner { desc, bytes, encoded_len: encoded.len() }
    }

    /// The descriptor's encoding (docs/spec/descriptor.md).
    pub(crate) fn encoded(&self) -> &[u8] {
        &self.bytes[..self.encoded_len]
    }

    /// The name followed by a NUL, when named.
    fn name_c(&self) -> Option<&[u8]> {
        self.desc.name().map(|_| &self.bytes[self.encoded_len..])
    }
}

/// A validated tensor descriptor. Owned when made by `hurray_descriptor_decode`,
/// `hurray_descriptor_clone` or `hurray_descriptor_builder_build` (destroy it with
/// `hurray_descriptor_destroy`); borrowed when obtained from `hurray_tensor_descriptor`.
pub struct HurrayDescriptor {
    pub(crate) shell: crate::handle::Shell<DescInner>,
}
opaque_handle!(HurrayDescriptor, DescInner, 0x4855_5252_4445_3031);

/// Quantization block as a plain struct (docs/spec/descriptor.md §Quantization).
/// `kind` is `HURRAY_QUANT_NONE` (all other fields 0) or one of `HURRAY_QUANT_*`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HurrayQuantization {
    /// `HURRAY_QUANT_*`.
    pub kind: u8,
    /// Logical element type after dequantization (`HURRAY_DTYPE_*`).
    pub dequantized_type: u8,
    /// Must be 0.
    pub reserved: u16,
    /// Channel axis (`HURRAY_QUANT_PER_CHANNEL_AFFINE`), else 0.
    pub axis: u32,
    /// Scale (`HURRAY_QUANT_PER_TENSOR_AFFINE`), else 0.
    pub scale: f64,
    /// Bias added after scaling (`HURRAY_QUANT_PER_TENSOR_AFFINE`), else 0.
    pub bias: f64,
}

/// No quantization.
pub const HURRAY_QUANT_NONE: u8 = 0;
/// `value = q * scale + bias`.
pub const HURRAY_QUANT_PER_TENSOR_AFFINE: u8 = 1;
/// `value = q * scale[c] + bias[c]`; float32 scales in buffer 1, biases in buffer 2.
pub const HURRAY_QUANT_PER_CHANNEL_AFFINE: u8 = 2;
/// Stored in a narrower float type, converted exactly to `dequantized_type`.
pub const HURRAY_QUANT_CAST: u8 = 3;

impl HurrayQuantization {
    fn from_core(q: Option<&Quantization>) -> Self {
        match q {
            None => HurrayQuantization::default(),
            Some(q) => {
                let (axis, scale, bias) = match *q {
                    Quantization::PerTensorAffine { scale, bias, .. } => (0, scale, bias),
                    Quantization::PerChannelAffine { axis, .. } => (axis, 0.0, 0.0),
                    Quantization::Cast { .. } => (0, 0.0, 0.0),
                    // Block kinds: the full parameters come from hurray_descriptor_block_quant.
                    Quantization::Block(b) => (b.axis, 0.0, 0.0),
                };
                HurrayQuantization {
                    kind: q.code(),
                    dequantized_type: q.dequantized().code(),
                    reserved: 0,
                    axis,
                    scale,
                    bias,
                }
            }
        }
    }

    pub(crate) fn to_core(self) -> FfiResult<Option<Quantization>> {
        if self.reserved != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "HurrayQuantization.reserved must be 0"));
        }
        if self.kind == HURRAY_QUANT_NONE {
            return Ok(None);
        }
        let dequantized = ElementType::from_code(self.dequantized_type)?;
        Ok(Some(match self.kind {
            HURRAY_QUANT_PER_TENSOR_AFFINE => {
                Quantization::PerTensorAffine { scale: self.scale, bias: self.bias, dequantized }
            }
            HURRAY_QUANT_PER_CHANNEL_AFFINE => Quantization::PerChannelAffine { axis: self.axis, dequantized },
            HURRAY_QUANT_CAST => Quantization::Cast { dequantized },
            4..=9 => {
                return Err(FfiError::new(
                    HURRAY_ERR_UNSUPPORTED,
                    "block quantization kinds 4-9 are set with hurray_descriptor_builder_set_block_quant",
                ))
            }
            k => return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("unknown quantization kind {k}"))),
        }))
    }
}

/// Decodes and validates `len` bytes of an encoded descriptor (docs/spec/descriptor.md) into
/// a new owned handle. The bytes are copied; the caller keeps them.
///
/// Errors: `NULL_POINTER` (`out_descriptor`, or `bytes` with `len > 0`), `INVALID_MAGIC`,
/// `VERSION_MISMATCH`, `CORRUPT`, `UNSUPPORTED`, `LIMIT_EXCEEDED`, and validation errors
/// (`INVALID_LAYOUT`, `INVALID_TYPE`, `INVALID_SHAPE`, `INVALID_ALIGNMENT`,
/// `INVALID_SYNC_MODE`, `BUFFER_TOO_SMALL`).
///
/// # Safety
/// `bytes` valid for `len` bytes; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_decode(
    bytes: *const u8,
    len: usize,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_descriptor_decode", || {
        non_null(out_descriptor, "out_descriptor")?;
        // SAFETY: the caller guarantees `bytes` is valid for `len` bytes.
        let slice = unsafe { crate::slices::slice_arg(bytes, len, "bytes")? };
        let d = DescInner::with_encoding(TensorDescriptor::decode(slice)?, slice);
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_descriptor, d) };
        Ok(HURRAY_OK)
    })
}

/// Destroys an owned descriptor (by value, docs/spec/c-abi.md §Handles and ownership). NULL is a
/// no-op. A borrowed descriptor (from `hurray_tensor_descriptor`) is refused with
/// `INVALID_ARGUMENT`; a second destroy is reported as `USE_AFTER_DESTROY` in debug builds.
///
/// # Safety
/// `descriptor` NULL or a descriptor handle.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_destroy(descriptor: *mut HurrayDescriptor) -> HurrayStatus {
    guard("hurray_descriptor_destroy", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); destroy accepts NULL and rejects dead
        // handles.
        unsafe { handle::destroy(descriptor, "descriptor")? };
        Ok(HURRAY_OK)
    })
}

/// Makes an owned copy of a (possibly borrowed) descriptor.
///
/// # Safety
/// `descriptor` a live descriptor; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_clone(
    descriptor: *const HurrayDescriptor,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_descriptor_clone", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        non_null(out_descriptor, "out_descriptor")?;
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_descriptor, DescInner::with_encoding(d.desc.clone(), d.encoded())) };
        Ok(HURRAY_OK)
    })
}

/// Makes an owned copy of a (possibly borrowed) descriptor with its name replaced by `len`
/// bytes of UTF-8 at `name` (no NUL; at most 4096 bytes; `len` 0 gives the empty name). The
/// cheap way to send many tensors that differ only in name: one call, no builder.
///
/// Added in ABI 4 (additive). Errors: `NULL_POINTER` (`descriptor`, `out_descriptor`, `name`
/// with `len > 0`), `INVALID_ARGUMENT` (not UTF-8, contains NUL), `LIMIT_EXCEEDED` (too long).
///
/// # Safety
/// `descriptor` live; `name` valid for `len` reads; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_with_name(
    descriptor: *const HurrayDescriptor,
    name: *const u8,
    len: usize,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_descriptor_with_name", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        non_null(out_descriptor, "out_descriptor")?;
        // SAFETY: the caller passes `len` readable bytes at `name` (# Safety); checked by the helper.
        let name = unsafe { name_arg(name, len)? };
        let renamed = d.desc.clone().with_name(name)?;
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_descriptor, DescInner::new(renamed)?) };
        Ok(HURRAY_OK)
    })
}

/// Writes the encoding of `descriptor` renamed to `len` bytes of UTF-8 at `name` into the
/// caller's buffer `out` of `capacity` bytes, and its length to `*out_len`; no descriptor is
/// created. The bytes equal what `hurray_descriptor_with_name` then `hurray_descriptor_encoded`
/// give, so they can be handed to `hurray_encoder_encode_encoded` or kept. The name rule is that
/// of `hurray_descriptor_with_name`.
///
/// Added in ABI 4 (additive). Errors: `NULL_POINTER` (`descriptor`, `out_len`, `name` with
/// `len > 0`, `out` with `capacity > 0`), `INVALID_ARGUMENT` (not UTF-8, contains NUL),
/// `LIMIT_EXCEEDED` (name too long), `BUFFER_TOO_SMALL` (the encoding needs more than
/// `capacity` bytes: `*out_len` then holds the size needed and `out` is unchanged).
///
/// # Safety
/// `descriptor` live; `name` valid for `len` reads; `out` valid for `capacity` writes;
/// `out_len` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_encode_with_name(
    descriptor: *const HurrayDescriptor,
    name: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
    out_len: *mut usize,
) -> HurrayStatus {
    guard("hurray_descriptor_encode_with_name", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        non_null(out_len, "out_len")?;
        if capacity > 0 {
            non_null(out, "out")?;
        }
        // SAFETY: the caller passes `len` readable bytes at `name` (# Safety); checked by the helper.
        let name = unsafe { name_arg(name, len)? };
        let encoded = d.desc.clone().with_name(name)?.encode()?;
        // SAFETY: `out_len` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_len = encoded.len() };
        if encoded.len() > capacity {
            return Err(FfiError::new(
                HURRAY_ERR_BUFFER_TOO_SMALL,
                format!("the renamed encoding needs {} bytes; the buffer holds {capacity}", encoded.len()),
            ));
        }
        // SAFETY: `out` is non-NULL (capacity > 0 here, as encodings are never empty) and valid for
        // `capacity >= encoded.len()` writes (# Safety); the ranges cannot overlap a fresh Vec.
        unsafe { std::ptr::copy_nonoverlapping(encoded.as_ptr(), out, encoded.len()) };
        Ok(HURRAY_OK)
    })
}

/// A borrowed tensor name argument: `len` bytes at `name` (NULL allowed when `len` is 0), at
/// most `MAX_NAME_BYTES`, UTF-8. The NUL check is the core's (`with_name`).
///
/// # Safety
/// `name` valid for `len` reads when `len > 0`.
unsafe fn name_arg<'a>(name: *const u8, len: usize) -> FfiResult<&'a str> {
    let bytes: &[u8] = if len == 0 {
        &[]
    } else {
        non_null(name, "name")?;
        // SAFETY: the caller passes `len` readable bytes at `name`.
        unsafe { std::slice::from_raw_parts(name, len) }
    };
    if len > hurray_core::MAX_NAME_BYTES {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("a name of {len} bytes exceeds {}", hurray_core::MAX_NAME_BYTES),
        ));
    }
    std::str::from_utf8(bytes).map_err(|_| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "the name is not UTF-8"))
}

/// Borrows the descriptor's encoding: `*out_bytes` points at `*out_len` bytes owned by the
/// descriptor, valid until it is destroyed. Copy them to keep them longer.
///
/// # Safety
/// `descriptor` a live descriptor; out-pointers valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_encoded(
    descriptor: *const HurrayDescriptor,
    out_bytes: *mut *const u8,
    out_len: *mut usize,
) -> HurrayStatus {
    guard("hurray_descriptor_encoded", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        non_null(out_bytes, "out_bytes")?;
        non_null(out_len, "out_len")?;
        // SAFETY: `out_bytes` and `out_len` were checked non-NULL just above and are valid for one write each
        // (# Safety).
        unsafe {
            *out_bytes = d.encoded().as_ptr();
            *out_len = d.encoded().len();
        }
        Ok(HURRAY_OK)
    })
}

/// The shared body of the descriptor field getters: NULL → `HURRAY_ERR_NULL_POINTER`, dead
/// handle → `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` NULL or a descriptor handle from this library; `out` NULL or valid for one write.
unsafe fn desc_get<T>(
    what: &str,
    descriptor: *const HurrayDescriptor,
    out: *mut T,
    f: impl FnOnce(&TensorDescriptor) -> T,
) -> HurrayStatus {
    guard(what, || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = &unsafe { handle::inner_ref(descriptor, "descriptor")? }.desc;
        // SAFETY: `out` is NULL (put rejects it) or valid for one write (# Safety).
        unsafe { handle::put(out, "out", f(d))? };
        Ok(HURRAY_OK)
    })
}

// The getters are written out (not generated by a macro) so that cbindgen, which does not
// expand macros, puts them in hurray.h.

/// Stores the stored element type (`HURRAY_DTYPE_*`) in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_element_type(
    descriptor: *const HurrayDescriptor,
    out: *mut u8,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe { desc_get("hurray_descriptor_element_type", descriptor, out, |d| d.element_type().code()) }
}

/// Stores the number of dimensions (0 for a scalar) in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_rank(descriptor: *const HurrayDescriptor, out: *mut usize) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe { desc_get("hurray_descriptor_rank", descriptor, out, |d| d.shape().rank()) }
}

/// Stores a borrowed pointer to `rank` dimensions (u64 elements, outermost first) in
/// `*out`, valid while the descriptor lives; NULL when the rank is 0.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_dims(
    descriptor: *const HurrayDescriptor,
    out: *mut *const u64,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe {
        desc_get("hurray_descriptor_dims", descriptor, out, |d| {
            if d.shape().rank() == 0 {
                std::ptr::null()
            } else {
                d.shape().dims().as_ptr()
            }
        })
    }
}

/// Stores the layout code (`HURRAY_LAYOUT_*`) in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_layout(descriptor: *const HurrayDescriptor, out: *mut u8) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe { desc_get("hurray_descriptor_layout", descriptor, out, |d| d.layout().code()) }
}

/// Stores a borrowed pointer to `rank` strides in elements (i64) in `*out`, valid while
/// the descriptor lives; NULL unless the layout is `HURRAY_LAYOUT_STRIDED` with rank > 0.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_strides(
    descriptor: *const HurrayDescriptor,
    out: *mut *const i64,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe {
        desc_get("hurray_descriptor_strides", descriptor, out, |d| match d.strides() {
            Some(s) if !s.is_empty() => s.as_ptr(),
            _ => std::ptr::null(),
        })
    }
}

/// Stores the offset of element 0 in buffer 0, in bytes, in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_byte_offset(
    descriptor: *const HurrayDescriptor,
    out: *mut u64,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe { desc_get("hurray_descriptor_byte_offset", descriptor, out, |d| d.byte_offset()) }
}

/// Stores the number of elements (1 for rank 0, 0 with a zero-size dimension) in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_element_count(
    descriptor: *const HurrayDescriptor,
    out: *mut u64,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe { desc_get("hurray_descriptor_element_count", descriptor, out, |d| d.shape().element_count()) }
}

/// Stores the number of entries in the buffer table in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_buffer_count(
    descriptor: *const HurrayDescriptor,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe { desc_get("hurray_descriptor_buffer_count", descriptor, out, |d| d.buffers().len()) }
}

/// Copies the quantization block into `*out` (`kind == HURRAY_QUANT_NONE` when absent).
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_quantization(
    descriptor: *const HurrayDescriptor,
    out: *mut HurrayQuantization,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe {
        desc_get("hurray_descriptor_quantization", descriptor, out, |d| HurrayQuantization::from_core(d.quantization()))
    }
}

/// Stores the number of key/value metadata entries in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_metadata_count(
    descriptor: *const HurrayDescriptor,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: `descriptor` is NULL or a handle from this library, `out` NULL or valid for one write (# Safety).
    unsafe { desc_get("hurray_descriptor_metadata_count", descriptor, out, |d| d.metadata().len()) }
}

/// Borrows the tensor's name: `*out_name` points at `*out_len` UTF-8 bytes followed by a NUL,
/// owned by the descriptor; NULL and 0 when the tensor is unnamed.
///
/// # Safety
/// `descriptor` a live descriptor; out-pointers valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_name(
    descriptor: *const HurrayDescriptor,
    out_name: *mut *const c_char,
    out_len: *mut usize,
) -> HurrayStatus {
    guard("hurray_descriptor_name", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        non_null(out_name, "out_name")?;
        non_null(out_len, "out_len")?;
        let (p, n) = match d.name_c() {
            Some(v) => (v.as_ptr() as *const c_char, v.len() - 1),
            None => (std::ptr::null(), 0),
        };
        // SAFETY: `out_name` and `out_len` were checked non-NULL above and are valid for one write each (# Safety).
        unsafe {
            *out_name = p;
            *out_len = n;
        }
        Ok(HURRAY_OK)
    })
}

/// Every fixed-size field of a descriptor at once, as `hurray_descriptor_fields` fills it: the
/// values of the single-field accessors (`hurray_descriptor_element_type`, `_rank`, `_dims`,
/// `_layout`, `_strides`, `_byte_offset`, `_element_count`, `_buffer_count`,
/// `_metadata_count`, `_name`, `_encoded`, `_quantization`), so that a binding reads a
/// descriptor in one call instead of a dozen. Pointers are borrowed from the descriptor and
/// valid while it lives. Buffer-table entries and metadata entries are read with
/// `hurray_descriptor_buffer_spec` and `hurray_descriptor_metadata_get`. The layout of this
/// struct is fixed for ABI version 4 (128 bytes on LP64 targets).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayDescriptorFields {
    /// Stored element type (`HURRAY_DTYPE_*`).
    pub element_type: u8,
    /// Layout code (`HURRAY_LAYOUT_*`).
    pub layout: u8,
    /// The descriptor's format version (its encoding's `version` field, docs/spec/descriptor.md):
    /// 1, or 2 for the features that need it. Added in ABI 4 (this word was reserved and always
    /// 0 before, so 0 means a library that does not report it).
    pub version: u16,
    /// `HURRAY_FIELDS_*` bits. `hurray_descriptor_fields` sets none; a decoder sets
    /// `HURRAY_FIELDS_SAME_EXCEPT_NAME` (added in ABI 4; this word was reserved and always 0
    /// before, so older callers ignore it).
    pub flags: u32,
    /// Number of dimensions (0 for a scalar).
    pub rank: usize,
    /// `rank` dimensions in elements, outermost first; NULL when `rank` is 0.
    pub dims: *const u64,
    /// `rank` strides in elements; NULL unless the layout is `HURRAY_LAYOUT_STRIDED` with
    /// `rank > 0`.
    pub strides: *const i64,
    /// Offset of element 0 in buffer 0, in bytes.
    pub byte_offset: u64,
    /// Number of elements (1 for rank 0, 0 with a zero-size dimension).
    pub element_count: u64,
    /// Entries in the buffer table.
    pub buffer_count: usize,
    /// Key/value metadata entries.
    pub metadata_count: usize,
    /// The name as `name_len` UTF-8 bytes followed by a NUL; NULL when unnamed.
    pub name: *const c_char,
    /// Length of `name` in bytes, without the NUL (0 when unnamed).
    pub name_len: usize,
    /// The descriptor's encoding (docs/spec/descriptor.md), `encoded_len` bytes.
    pub encoded: *const u8,
    /// Length of `encoded` in bytes.
    pub encoded_len: usize,
    /// The quantization block (`kind == HURRAY_QUANT_NONE` when absent).
    pub quantization: HurrayQuantization,
}

/// `HurrayDescriptorFields::flags` bit set by `hurray_decoder_next` and
/// `hurray_decoder_next_item` when the tensor's descriptor equals, in every field but the name,
/// the descriptor of the tensor the same decoder returned in `*out` just before (a composite
/// returned whole does not count). A binding that kept the previous tensor's fields may reuse
/// them and read only `name`/`name_len`: the common stream of same-shaped tensors that differ
/// only by name then costs one field read per tensor. The fields themselves are filled in full
/// either way. Added in ABI 4 (additive).
pub const HURRAY_FIELDS_SAME_EXCEPT_NAME: u32 = 1;

/// The fixed-size fields of a descriptor as the C struct; its pointers borrow from `inner`.
pub(crate) fn fields_of(inner: &DescInner) -> HurrayDescriptorFields {
    let d = &inner.desc;
    let rank = d.shape().rank();
    let (name, name_len) = match inner.name_c() {
        Some(v) => (v.as_ptr() as *const c_char, v.len() - 1),
        None => (std::ptr::null(), 0),
    };
    HurrayDescriptorFields {
        element_type: d.element_type().code(),
        layout: d.layout().code(),
        version: d.version(),
        flags: 0,
        rank,
        dims: if rank == 0 { std::ptr::null() } else { d.shape().dims().as_ptr() },
        strides: match d.strides() {
            Some(s) if !s.is_empty() => s.as_ptr(),
            _ => std::ptr::null(),
        },
        byte_offset: d.byte_offset(),
        element_count: d.shape().element_count(),
        buffer_count: d.buffers().len(),
        metadata_count: d.metadata().len(),
        name,
        name_len,
        encoded: inner.encoded().as_ptr(),
        encoded_len: inner.encoded().len(),
        quantization: HurrayQuantization::from_core(d.quantization()),
    }
}

/// Fills `*out` with every fixed-size field of the descriptor (see `HurrayDescriptorFields`);
/// its pointers are borrowed from the descriptor. Equivalent to calling each single-field
/// accessor, in one call. Added in ABI 4 (additive, docs/spec/c-abi.md): look it up by name on
/// older libraries.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_fields(
    descriptor: *const HurrayDescriptor,
    out: *mut HurrayDescriptorFields,
) -> HurrayStatus {
    guard("hurray_descriptor_fields", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let inner = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        let fields = fields_of(inner);
        // SAFETY: `out` is NULL (put rejects it) or valid for one write (# Safety).
        unsafe { handle::put(out, "out", fields)? };
        Ok(HURRAY_OK)
    })
}

/// Copies buffer-table entry `index` into `*out`. Errors: `INVALID_ARGUMENT` when out of range.
///
/// # Safety
/// `descriptor` a live descriptor; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_buffer_spec(
    descriptor: *const HurrayDescriptor,
    index: usize,
    out: *mut HurrayBufferSpec,
) -> HurrayStatus {
    guard("hurray_descriptor_buffer_spec", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        let h =
            d.desc.buffers().get(index).ok_or_else(|| {
                FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("buffer index {index} out of range"))
            })?;
        // SAFETY: `out` is NULL (put rejects it) or valid for one write (# Safety).
        unsafe { handle::put(out, "out", HurrayBufferSpec::from_handle(h))? };
        Ok(HURRAY_OK)
    })
}

/// Borrows metadata entry `index`: key (`*out_key_len` UTF-8 bytes) and value
/// (`*out_value_len` bytes), owned by the descriptor. Errors: `INVALID_ARGUMENT` out of range.
///
/// # Safety
/// `descriptor` a live descriptor; out-pointers valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_metadata_get(
    descriptor: *const HurrayDescriptor,
    index: usize,
    out_key: *mut *const u8,
    out_key_len: *mut usize,
    out_value: *mut *const u8,
    out_value_len: *mut usize,
) -> HurrayStatus {
    guard("hurray_descriptor_metadata_get", || {
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        for (p, n) in [
            (out_key as *const (), "out_key"),
            (out_key_len as *const (), "out_key_len"),
            (out_value as *const (), "out_value"),
            (out_value_len as *const (), "out_value_len"),
        ] {
            non_null(p, n)?;
        }
        let (k, v) = d.desc.metadata().get(index).ok_or_else(|| {
            FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("metadata index {index} out of range"))
        })?;
        // SAFETY: the four out-pointers were checked non-NULL above and are valid for one write each (# Safety).
        unsafe {
            *out_key = k.as_ptr();
            *out_key_len = k.len();
            *out_value = v.as_ptr();
            *out_value_len = v.len();
        }
        Ok(HURRAY_OK)
    })
}

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
    String::from_utf8(b.to_vec())
        .map_err(|_| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("{name} is not UTF-8")))
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
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let b = unsafe { handle::inner_mut(builder, "builder")? };
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
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        unsafe { handle::inner_mut(builder, "builder")? }.byte_offset = byte_offset;
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
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let b = unsafe { handle::inner_mut(builder, "builder")? };
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
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let b = unsafe { handle::inner_mut(builder, "builder")? };
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

/// Sets (or, with `kind == HURRAY_QUANT_NONE`, clears) the quantization block.
///
/// # Safety
/// `builder` live; `quantization` valid.
#[no_mangle]
pub unsafe extern "C" fn hurray_descriptor_builder_set_quantization(
    builder: *mut HurrayDescriptorBuilder,
    quantization: *const HurrayQuantization,
) -> HurrayStatus {
    guard("hurray_descriptor_builder_set_quantization", || {
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let b = unsafe { handle::inner_mut(builder, "builder")? };
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
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let b = unsafe { handle::inner_mut(builder, "builder")? };
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
        // SAFETY: `builder` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead handles.
        let b = unsafe { handle::inner_ref(builder, "builder")? };
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
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let b = unsafe { handle::inner_mut(builder, "builder")? };
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
        // SAFETY: `builder` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut
        // rejects NULL and dead handles.
        let b = unsafe { handle::inner_mut(builder, "builder")? };
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
