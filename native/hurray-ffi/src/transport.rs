//! The transport vtable (docs/spec/c-abi.md §Transports) and its adapters to the core's traits.

use std::ffi::c_void;
use std::mem::MaybeUninit;

use hurray_core::{Error, ErrorKind, ReadTransport, Result, WriteTransport};

use crate::status::{HurrayStatus, HURRAY_OK};

/// Reads up to `len` bytes into `dst`; stores the count moved in `*out_filled` (0 = end of
/// input; fewer than `len` is normal). On failure returns a negative status having moved
/// nothing. `dst` is borrowed for the call only. May block.
pub type HurrayTransportReadFn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, dst: *mut u8, len: usize, out_filled: *mut usize) -> HurrayStatus>;
/// Writes up to `len` bytes from `src`; stores the count taken in `*out_written` (0 = the sink
/// is closed; a short write is normal). On failure returns a negative status having taken
/// nothing. `src` is borrowed for the call only. May block.
pub type HurrayTransportWriteFn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, src: *const u8, len: usize, out_written: *mut usize) -> HurrayStatus>;
/// Frees `ctx`. Called exactly once, when the handle that took the transport is destroyed.
pub type HurrayTransportReleaseFn = Option<unsafe extern "C" fn(ctx: *mut c_void)>;
/// Reads up to `len` bytes at absolute byte `offset` into `dst` (file containers); stores the
/// count in `*out_filled` (0 only at or past the end). Short counts are normal.
pub type HurrayTransportReadAtFn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        offset: u64,
        dst: *mut u8,
        len: usize,
        out_filled: *mut usize,
    ) -> HurrayStatus,
>;
/// Stores the total size in bytes of the addressed input in `*out_size` (file containers).
pub type HurrayTransportSizeFn = Option<unsafe extern "C" fn(ctx: *mut c_void, out_size: *mut u64) -> HurrayStatus>;

/// A caller's byte source and/or sink: a context pointer and callbacks (docs/spec/c-abi.md
/// §Transports). A stream
/// reader needs `read`, a stream writer `write`, a file reader `read_at` and `size`; the rest
/// may be NULL. Handles copy the struct; `ctx` is borrowed unless `release` is set, in which
/// case the handle that takes it calls `release(ctx)` exactly once when it is destroyed (not
/// when creating the handle fails). Callbacks must never call back into the handle that
/// invoked them.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HurrayTransport {
    /// Opaque context passed to every callback.
    pub ctx: *mut c_void,
    /// Required by a stream reader.
    pub read: HurrayTransportReadFn,
    /// Required by a writer.
    pub write: HurrayTransportWriteFn,
    /// Optional; frees `ctx`.
    pub release: HurrayTransportReleaseFn,
    /// Required by a file reader.
    pub read_at: HurrayTransportReadAtFn,
    /// Required by a file reader.
    pub size: HurrayTransportSizeFn,
}

impl Default for HurrayTransport {
    fn default() -> Self {
        HurrayTransport { ctx: std::ptr::null_mut(), read: None, write: None, release: None, read_at: None, size: None }
    }
}

/// A transport owned by a handle; releases its context once on drop.
pub(crate) struct Owned(pub HurrayTransport);

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(release) = self.0.release.take() {
            // SAFETY: the caller handed us ctx with this release function.
            unsafe { release(self.0.ctx) };
        }
    }
}

fn callback_failed(what: &str, s: HurrayStatus) -> Error {
    let name = crate::status::hurray_status_name(s);
    // SAFETY: status names are static NUL-terminated strings.
    let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    Error::new(ErrorKind::Transport, format!("transport {what} callback failed with {name} ({s})"))
}

impl ReadTransport for Owned {
    fn read(&mut self, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        let f = self.0.read.expect("checked at reader creation");
        let mut n = 0usize;
        // SAFETY: dst is valid for dst.len() bytes of writes for the duration of the call.
        let s = unsafe { f(self.0.ctx, dst.as_mut_ptr() as *mut u8, dst.len(), &mut n) };
        if s != HURRAY_OK {
            return Err(callback_failed("read", s));
        }
        Ok(n)
    }
}

impl WriteTransport for Owned {
    fn write(&mut self, src: &[u8]) -> Result<usize> {
        let f = self.0.write.expect("checked at writer creation");
        let mut n = 0usize;
        // SAFETY: src is valid for src.len() bytes of reads for the duration of the call.
        let s = unsafe { f(self.0.ctx, src.as_ptr(), src.len(), &mut n) };
        if s != HURRAY_OK {
            return Err(callback_failed("write", s));
        }
        Ok(n)
    }
}

impl Owned {
    /// `read_at` loop helper for file readers: one call.
    pub(crate) fn read_at(&mut self, offset: u64, dst: &mut [MaybeUninit<u8>]) -> Result<usize> {
        let f = self.0.read_at.expect("checked at file reader creation");
        let mut n = 0usize;
        // SAFETY: dst is valid for dst.len() bytes of writes for the duration of the call.
        let s = unsafe { f(self.0.ctx, offset, dst.as_mut_ptr() as *mut u8, dst.len(), &mut n) };
        if s != HURRAY_OK {
            return Err(callback_failed("read_at", s));
        }
        Ok(n)
    }

    /// `size` helper for file readers.
    pub(crate) fn size(&mut self) -> Result<u64> {
        let f = self.0.size.expect("checked at file reader creation");
        let mut n = 0u64;
        // SAFETY: n is a valid out-pointer.
        let s = unsafe { f(self.0.ctx, &mut n) };
        if s != HURRAY_OK {
            return Err(callback_failed("size", s));
        }
        Ok(n)
    }
}
