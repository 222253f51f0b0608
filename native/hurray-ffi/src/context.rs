//! Tensor contexts: the encoded descriptor and ABI version that travel beside a buffer list
//! in a native-protocol capsule (docs/spec/c-abi.md §Tensor context).

use std::ffi::c_void;

use hurray_core::TensorDescriptor;

use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null};
use crate::status::*;

/// Releases the producer's owner object. Invoked exactly once, during
/// `hurray_tensor_context_destroy`.
pub type HurrayOwnerReleaseFn = Option<unsafe extern "C" fn(owner: *mut c_void)>;

/// Context contents; dropping it calls `owner_release(owner)` once.
pub struct ContextInner {
    abi_version: u32,
    bytes: Vec<u8>,
    owner: *mut c_void,
    owner_release: HurrayOwnerReleaseFn,
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        if let Some(f) = self.owner_release.take() {
            // SAFETY: the producer gave us owner with this release function.
            unsafe { f(self.owner) };
        }
    }
}

/// A copy of an encoded descriptor plus the producer's ABI version and owner. Owned;
/// destroy with `hurray_tensor_context_destroy`.
pub struct HurrayTensorContext {
    pub(crate) shell: crate::handle::Shell<ContextInner>,
}
opaque_handle!(HurrayTensorContext, ContextInner, 0x4855_5252_4358_3031);

/// Makes a context holding a copy of `descriptor_bytes[0..descriptor_len]` (validated as a
/// descriptor when non-empty; empty is allowed), the producer's `abi_version`, and an opaque
/// `owner` released by `owner_release` exactly once at destroy (not if this call fails).
/// Errors: `NULL_POINTER`, descriptor decode errors, `LIMIT_EXCEEDED`, `INVALID_ARGUMENT`
/// (`abi_version` 0).
///
/// # Safety
/// `descriptor_bytes` valid for `descriptor_len` bytes; `out_ctx` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_context_new(
    abi_version: u32,
    descriptor_bytes: *const u8,
    descriptor_len: u64,
    owner: *mut c_void,
    owner_release: HurrayOwnerReleaseFn,
    out_ctx: *mut *mut HurrayTensorContext,
) -> HurrayStatus {
    guard("hurray_tensor_context_new", || {
        non_null(out_ctx, "out_ctx")?;
        if abi_version == 0 {
            return Err(crate::panic::FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "abi_version 0 is not a version"));
        }
        let bytes = if descriptor_len == 0 {
            Vec::new()
        } else {
            non_null(descriptor_bytes, "descriptor_bytes")?;
            if descriptor_len > hurray_core::MAX_DESCRIPTOR_BYTES as u64 {
                return Err(crate::panic::FfiError::new(HURRAY_ERR_LIMIT_EXCEEDED, "descriptor longer than 16 MiB"));
            }
            // SAFETY: `descriptor_bytes` is non-NULL (checked) and valid for `descriptor_len` bytes
            // (this function's contract); the length was bounded to 16 MiB above, so it fits a usize.
            let s = unsafe { std::slice::from_raw_parts(descriptor_bytes, descriptor_len as usize) };
            TensorDescriptor::decode(s)?;
            s.to_vec()
        };
        // SAFETY: `out_ctx` was checked non-NULL above and is valid for one pointer write (this
        // function's contract).
        unsafe { handle::emit(out_ctx, ContextInner { abi_version, bytes, owner, owner_release }) };
        Ok(HURRAY_OK)
    })
}

/// Stores the producer's ABI version. Consumers call this first (docs/spec/c-abi.md §Tensor
/// context).
///
/// # Safety
/// `ctx` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_context_abi_version(
    ctx: *const HurrayTensorContext,
    out: *mut u32,
) -> HurrayStatus {
    guard("hurray_tensor_context_abi_version", || {
        let c = handle::handle_ref!(ctx)?;
        handle::put_out!(out, c.abi_version)?;
        Ok(HURRAY_OK)
    })
}

/// Borrows the encoded descriptor (owned by the context, valid until it is destroyed); an
/// empty descriptor reports NULL and 0.
///
/// # Safety
/// `ctx` live; out-pointers valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_context_descriptor(
    ctx: *const HurrayTensorContext,
    out_bytes: *mut *const u8,
    out_len: *mut u64,
) -> HurrayStatus {
    guard("hurray_tensor_context_descriptor", || {
        let c = handle::handle_ref!(ctx)?;
        non_null(out_bytes, "out_bytes")?;
        non_null(out_len, "out_len")?;
        // SAFETY: both out-pointers were checked non-NULL above and are valid for one write each
        // (this function's contract).
        unsafe {
            *out_bytes = if c.bytes.is_empty() { std::ptr::null() } else { c.bytes.as_ptr() };
            *out_len = c.bytes.len() as u64;
        }
        Ok(HURRAY_OK)
    })
}

/// Destroys the context (calling `owner_release(owner)` once) and writes NULL to `*ctx`.
/// NULL or `*ctx == NULL` is a no-op returning `HURRAY_OK`.
///
/// # Safety
/// `ctx` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_tensor_context_destroy(ctx: *mut *mut HurrayTensorContext) -> HurrayStatus {
    guard("hurray_tensor_context_destroy", || {
        // SAFETY: `ctx` is NULL or valid for a read and a write, and `*ctx` NULL or a handle of
        // this type (this function's contract).
        unsafe { handle::destroy_pp(ctx, "ctx")? };
        Ok(HURRAY_OK)
    })
}
