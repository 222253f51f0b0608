//! Descriptor handles in the C ABI (docs/spec/c-abi.md §Descriptors: reading and building):
//!
//! - this file: the handle, decode, destroy, clone, renaming and the encoding;
//! - `fields.rs`: reading a descriptor's fields, one at a time or all at once;
//! - `builder.rs`: originating a descriptor from C, field by field.
//!
//! The one-call spec (`hurray_descriptor_new`, `hurray_descriptor_check`) is `descriptor_spec.rs`.

use hurray_core::{ElementType, Quantization, TensorDescriptor};

use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;
use std::sync::Arc;

/// Encodings above this size are not kept by a decoder for sharing with the next tensor.
const KEEP_SHARED_ENCODING_BYTES: usize = 64 << 10;

/// A descriptor plus its cached encoding and NUL-terminated name.
pub struct DescInner {
    pub(crate) desc: TensorDescriptor,
    /// The encoding, then (when named) the name and a NUL: one allocation for both, shared by
    /// the descriptors a decoder reads with the same encoding (`with_shared_encoding`).
    bytes: Arc<[u8]>,
    encoded_len: usize,
}

impl DescInner {
    pub(crate) fn new(desc: TensorDescriptor) -> FfiResult<Self> {
        let encoded = desc.encode()?;
        Ok(Self::with_encoding(desc, &encoded))
    }

    /// `encoded` must be `desc`'s encoding, e.g. the bytes `desc` was decoded from: a
    /// descriptor has one encoding, and decoding accepts only it (docs/spec/descriptor.md), so
    /// this saves encoding it again.
    pub(crate) fn with_encoding(desc: TensorDescriptor, encoded: &[u8]) -> Self {
        Self::with_shared_encoding(desc, encoded, &mut None)
    }

    /// As `with_encoding`, reusing `*last` (the bytes of an earlier `DescInner`) when it holds
    /// this encoding, else replacing it with this one's: a decoder reading a stream of tensors
    /// with equal descriptors keeps one copy of the encoding for all of them, not one each.
    /// Equal encodings have equal names (the name is part of the encoding).
    pub(crate) fn with_shared_encoding(desc: TensorDescriptor, encoded: &[u8], last: &mut Option<Arc<[u8]>>) -> Self {
        debug_assert_eq!(desc.encode().ok().as_deref(), Some(encoded), "not the descriptor's encoding");
        let name = desc.name().map_or(&[][..], str::as_bytes);
        let total = encoded.len() + if desc.name().is_some() { name.len() + 1 } else { 0 };
        let bytes = match last {
            Some(b) if b.len() == total && b[..encoded.len()] == *encoded => b.clone(),
            _ => {
                // One allocation (an exact-size iterator fills the `Arc` in place).
                let b: Arc<[u8]> = match desc.name() {
                    None => Arc::from(encoded),
                    Some(_) => encoded.iter().chain(name).copied().chain(Some(0)).collect(),
                };
                // A large one is not kept past its tensor (as the core decoder's last descriptor).
                *last = (total <= KEEP_SHARED_ENCODING_BYTES).then(|| b.clone());
                b
            }
        };
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
            // A parameter under kind NONE would be silently dropped: refuse it instead.
            if self.dequantized_type != 0 || self.axis != 0 || self.scale.to_bits() != 0 || self.bias.to_bits() != 0 {
                return Err(FfiError::new(
                    HURRAY_ERR_INVALID_ARGUMENT,
                    "HurrayQuantization: kind NONE takes no dequantized_type, axis, scale or bias (all must be 0)",
                ));
            }
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
        let d = handle::handle_ref!(descriptor)?;
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
        let d = handle::handle_ref!(descriptor)?;
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
        let d = handle::handle_ref!(descriptor)?;
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
        let d = handle::handle_ref!(descriptor)?;
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

// cbindgen emits the functions in the order the modules are declared: the getters come before
// the builder in hurray.h, so `fields` is declared first (in its own group, which rustfmt does
// not reorder).
mod fields;

mod builder;

pub use builder::*;
pub use fields::*;
pub(crate) use fields::{desc_get, field_get};
