//! Buffer handles: owned memory the reader filled, or a caller's memory with a release
//! callback (docs/spec/c-abi.md §Buffers and buffer lists, §Buffer handoff and sync modes).

use std::ffi::c_void;
use std::sync::Arc;

use hurray_core::{BufferHandle, DeviceTag, PooledBuf, SyncMode, BUFFER_HANDLE_BYTES, SYNC_MODE_OFFSET};

use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;

/// Frees a caller-owned buffer: called exactly once, with the `data` and `release_context`
/// given to `hurray_buffer_from_ptr`, when the last handle sharing the buffer is destroyed,
/// on the thread that destroys it.
pub type HurrayReleaseCallback = Option<unsafe extern "C" fn(buffer: *mut c_void, context: *mut c_void)>;

/// Releases a device event handle (`SYNC_EVENT` handoff). The consumer calls it exactly once,
/// after issuing its stream-waits (docs/spec/c-abi.md §Buffer handoff and sync modes); Hurray
/// never calls it. Must be safe to call from any thread.
pub type HurrayEventReleaseFn = Option<unsafe extern "C" fn(sync_handle: *mut c_void, context: *mut c_void)>;

/// Per-mode handoff payload (docs/spec/c-abi.md §Buffer handoff and sync modes). All fields
/// zero/NULL for `SYNC_PRODUCER_SYNCED`; `sync_handle`, `sync_handle_device_tag`,
/// `event_release_fn` (and its context) for `SYNC_EVENT`; `consumer_stream` and
/// `consumer_stream_device_tag` for `SYNC_CONSUMER_STREAM`. Handles are opaque and never
/// dereferenced by Hurray.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HurraySyncPayload {
    /// Event recorded on the producer's writing stream(s) (`SYNC_EVENT`).
    pub sync_handle: *mut c_void,
    /// Device tag of `sync_handle`; must equal the buffer's.
    pub sync_handle_device_tag: u8,
    /// Device tag of `consumer_stream`; must equal the buffer's.
    pub consumer_stream_device_tag: u8,
    /// Releases `sync_handle` (`SYNC_EVENT`).
    pub event_release_fn: HurrayEventReleaseFn,
    /// Passed to `event_release_fn`.
    pub event_release_context: *mut c_void,
    /// The consumer's stream (`SYNC_CONSUMER_STREAM`).
    pub consumer_stream: *mut c_void,
}

/// A buffer's description as a plain struct: the same fields as the 16-byte binary buffer
/// handle (byte size in bytes, alignment in bytes, device tag, sync mode).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayBufferSpec {
    /// Size in bytes.
    pub byte_size: u64,
    /// Alignment in bytes: a power of two, ≥ 64 (≥ 4096 unless `device_tag` is CPU), ≤ 2 MiB.
    pub alignment: u32,
    /// `HURRAY_DEVICE_*`.
    pub device_tag: u8,
    /// `HURRAY_SYNC_*`.
    pub sync_mode: u8,
    /// Must be 0.
    pub reserved: u16,
}

impl HurrayBufferSpec {
    pub(crate) fn from_handle(h: &BufferHandle) -> Self {
        HurrayBufferSpec {
            byte_size: h.byte_size(),
            alignment: h.alignment() as u32,
            device_tag: h.device_tag().code(),
            sync_mode: h.sync_mode().code(),
            reserved: 0,
        }
    }

    pub(crate) fn to_handle(self) -> FfiResult<BufferHandle> {
        if self.reserved != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "HurrayBufferSpec.reserved must be 0"));
        }
        Ok(BufferHandle::new(
            self.byte_size,
            u64::from(self.alignment),
            DeviceTag::from_code(self.device_tag)?,
            SyncMode::from_code(self.sync_mode)?,
        )?)
    }
}

pub(crate) enum BufData {
    /// Memory a reader filled; dropping it returns the allocation to the reader's pool, if any.
    Owned(PooledBuf),
    External {
        ptr: *mut c_void,
        release: HurrayReleaseCallback,
        ctx: *mut c_void,
    },
}

/// The handle of a buffer a reader hands out for the buffer-table entry `declared`. The bytes
/// are in host memory the reader wrote (or in a region the caller mapped), so the handle says
/// `HURRAY_DEVICE_CPU` whatever device the producer's table named (a DLPack export of it then
/// says `kDLCPU`), and no event or stream travels with them, so the only mode whose payload the
/// reader can honour is `SYNC_PRODUCER_SYNCED` (the handoff cross-check: `SYNC_EVENT` and
/// `SYNC_CONSUMER_STREAM` need a payload). The declared device and mode stay visible in the
/// tensor's descriptor (`hurray_descriptor_buffer_spec`); docs/spec/c-abi.md §Buffer handoff
/// and sync modes.
pub(crate) fn read_handle(declared: BufferHandle) -> BufferHandle {
    declared.with_sync_mode(SyncMode::ProducerSynced).in_host_memory()
}

/// The shared state behind every `HurrayBuffer` handle and buffer-list entry that names one
/// buffer (held in an `Arc`, so the last handle destroyed frees it).
///
/// # Send and Sync
/// The raw pointers (`External`'s data pointer and release context, the sync payload's handles)
/// make the compiler treat this type as neither `Send` nor `Sync`. Both are sound, by the C ABI's
/// thread contract (docs/spec/c-abi.md, "Threads"):
/// - **Send:** the pointers name memory and callbacks the producer handed over together with
///   the promise that they stay valid until the release callback runs, and that callback runs on
///   whichever thread destroys the last sharing handle. Nothing here is tied to the thread that
///   created it.
/// - **Sync:** through `&BufferInner` Rust only copies pointer *values* and reads the immutable
///   `BufferHandle`; it never dereferences the data pointer or the sync handles (the consumer
///   does, under its own synchronisation), and the release callback runs from `Drop`, which
///   has exclusive access. Handles sharing one buffer on different threads therefore race on
///   nothing Rust owns.
pub(crate) struct BufferInner {
    pub(crate) data: BufData,
    pub(crate) handle: BufferHandle,
    sync: Option<HurraySyncPayload>,
}

// SAFETY: see "Send and Sync" above: the pointers are owned by the producer's release contract,
// which allows release on any thread, and nothing in Rust is thread-affine.
unsafe impl Send for BufferInner {}
// SAFETY: see "Send and Sync" above: shared access only copies pointer values and reads the
// immutable handle; mutation (release) happens in Drop with exclusive access.
unsafe impl Sync for BufferInner {}

impl BufferInner {
    /// A buffer a reader filled. `declared` is the wire's buffer-table entry; the buffer
    /// itself is `SYNC_PRODUCER_SYNCED` (see [`read_handle`]).
    pub(crate) fn owned(buf: PooledBuf, declared: BufferHandle) -> Self {
        BufferInner { data: BufData::Owned(buf), handle: read_handle(declared), sync: None }
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        match &self.data {
            BufData::Owned(b) => b.as_ptr() as *mut c_void,
            BufData::External { ptr, .. } => *ptr,
        }
    }
}

impl Drop for BufferInner {
    fn drop(&mut self) {
        if let BufData::External { ptr, release, ctx } = &mut self.data {
            if let Some(f) = release.take() {
                // SAFETY: the producer handed us (ptr, ctx) with this callback.
                unsafe { f(*ptr, *ctx) };
            }
        }
        // The event of a SYNC_EVENT handoff is not released here: the spec makes the consumer
        // call `event_release_fn` exactly once after its stream-waits, and Hurray cannot know
        // whether it did, so releasing it here could release it twice.
    }
}

/// One buffer: a pointer, its size and alignment, device tag and sync mode. Shared by
/// reference count (atomic) between the handles `hurray_buffer_clone` makes. Owned unless
/// obtained from `hurray_buffer_list_get` (borrowed: never destroy it).
pub struct HurrayBuffer {
    pub(crate) shell: crate::handle::Shell<Arc<BufferInner>>,
}
opaque_handle!(HurrayBuffer, Arc<BufferInner>, 0x4855_5252_4246_3031);

/// Wraps caller-owned memory without copying (docs/spec/c-abi.md §Buffers and buffer lists).
/// `data` must stay valid and unmodified by the caller until `release(data, release_context)` is
/// called (exactly once, when the last handle sharing it is destroyed; never if this call
/// fails). `release` may be NULL (the caller manages the memory; then it must outlive every
/// handle). The sync mode is `SYNC_PRODUCER_SYNCED`.
///
/// Errors: `NULL_POINTER` (`out_handle`, or `data` with `byte_size > 0`),
/// `INVALID_ALIGNMENT` (bad `alignment`, or `data` not aligned to it), `INVALID_ARGUMENT`
/// (unknown `device_tag`).
///
/// # Safety
/// `data` valid for `byte_size` bytes; `out_handle` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_from_ptr(
    data: *mut c_void,
    byte_size: u64,
    alignment: u32,
    device_tag: u8,
    release: HurrayReleaseCallback,
    release_context: *mut c_void,
    out_handle: *mut *mut HurrayBuffer,
) -> HurrayStatus {
    guard("hurray_buffer_from_ptr", || {
        non_null(out_handle, "out_handle")?;
        let handle = BufferHandle::new(
            byte_size,
            u64::from(alignment),
            DeviceTag::from_code(device_tag)?,
            SyncMode::ProducerSynced,
        )?;
        let inner = external(data, handle, release, release_context, None)?;
        // SAFETY: `out_handle` was checked non-NULL above and is valid for one pointer write (this
        // function's contract).
        unsafe { handle::emit(out_handle, Arc::new(inner)) };
        Ok(HURRAY_OK)
    })
}

pub(crate) fn external(
    data: *mut c_void,
    handle: BufferHandle,
    release: HurrayReleaseCallback,
    ctx: *mut c_void,
    sync: Option<HurraySyncPayload>,
) -> FfiResult<BufferInner> {
    if data.is_null() && handle.byte_size() > 0 {
        return Err(FfiError::new(HURRAY_ERR_NULL_POINTER, "data is NULL"));
    }
    if !data.is_null() && !(data as usize).is_multiple_of(handle.alignment() as usize) {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_ALIGNMENT,
            format!("data {data:p} is not aligned to the declared {} bytes", handle.alignment()),
        ));
    }
    Ok(BufferInner { data: BufData::External { ptr: data, release, ctx }, handle, sync })
}

/// Hands off a producer's buffer described by its 16-byte binary buffer handle, cross-checking
/// the `sync_mode` byte at offset 13 against `sync` (docs/spec/c-abi.md §Buffer handoff and sync
/// modes): reserved or invalid modes give `HURRAY_ERR_INVALID_SYNC_MODE`; a payload that does
/// not match the mode (a handle or stream for `SYNC_PRODUCER_SYNCED`; a missing event, release function or a
/// device-tag mismatch for `SYNC_EVENT`; a missing stream or device-tag mismatch for
/// `SYNC_CONSUMER_STREAM`) gives `HURRAY_ERR_SYNC_MODE_MISMATCH`, and no handle is returned.
/// `sync` may be NULL for `SYNC_PRODUCER_SYNCED`. Ownership of `data` as for
/// `hurray_buffer_from_ptr`. The event stays the consumer's to release: it reads the payload
/// with `hurray_buffer_sync_payload` and calls `event_release_fn` exactly once; Hurray never
/// calls it, not even when the buffer is destroyed.
///
/// # Safety
/// `handle_bytes` valid for 16 bytes; `sync` NULL or valid; others as for
/// `hurray_buffer_from_ptr`.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_handoff(
    handle_bytes: *const u8,
    data: *mut c_void,
    sync: *const HurraySyncPayload,
    release: HurrayReleaseCallback,
    release_context: *mut c_void,
    out_handle: *mut *mut HurrayBuffer,
) -> HurrayStatus {
    guard("hurray_buffer_handoff", || {
        non_null(handle_bytes, "handle_bytes")?;
        non_null(out_handle, "out_handle")?;
        // SAFETY: valid for 16 bytes per contract.
        let bytes = unsafe { std::slice::from_raw_parts(handle_bytes, BUFFER_HANDLE_BYTES) };
        let mode = SyncMode::from_code(bytes[SYNC_MODE_OFFSET])?;
        let handle = BufferHandle::decode(bytes)?;
        // SAFETY: `sync` is NULL (not read) or valid for one read (this function's contract).
        let payload = if sync.is_null() { None } else { Some(unsafe { *sync }) };
        let tag = handle.device_tag().code();
        let mismatch = |m: &str| Err(FfiError::new(HURRAY_ERR_SYNC_MODE_MISMATCH, m.to_string()));
        match (mode, payload) {
            (SyncMode::ProducerSynced, Some(p)) if !p.sync_handle.is_null() || !p.consumer_stream.is_null() => {
                return mismatch("SYNC_PRODUCER_SYNCED must not carry a sync_handle or consumer_stream");
            }
            (SyncMode::Event, None) => return mismatch("SYNC_EVENT needs a payload with a sync_handle"),
            (SyncMode::Event, Some(p))
                if p.sync_handle.is_null() || p.event_release_fn.is_none() || p.sync_handle_device_tag != tag =>
            {
                return mismatch("SYNC_EVENT needs a non-NULL sync_handle, an event_release_fn and sync_handle_device_tag equal to the buffer's device tag");
            }
            (SyncMode::ConsumerStream, None) => return mismatch("SYNC_CONSUMER_STREAM needs a consumer_stream"),
            (SyncMode::ConsumerStream, Some(p))
                if p.consumer_stream.is_null() || p.consumer_stream_device_tag != tag =>
            {
                return mismatch("SYNC_CONSUMER_STREAM needs a non-NULL consumer_stream with the buffer's device tag");
            }
            _ => {}
        }
        let keep = match mode {
            SyncMode::ProducerSynced => None,
            _ => payload,
        };
        let inner = external(data, handle, release, release_context, keep)?;
        // SAFETY: `out_handle` was checked non-NULL above and is valid for one pointer write (this
        // function's contract).
        unsafe { handle::emit(out_handle, Arc::new(inner)) };
        Ok(HURRAY_OK)
    })
}

/// Copies the handoff payload a buffer carries into `*out` (all zero for
/// `SYNC_PRODUCER_SYNCED`). For `SYNC_EVENT` the consumer stream-waits on `sync_handle` and
/// then calls `event_release_fn(sync_handle, event_release_context)` exactly once; the
/// handles are opaque to Hurray, which never releases them.
///
/// # Safety
/// `buffer` a live buffer handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_sync_payload(
    buffer: *const HurrayBuffer,
    out: *mut HurraySyncPayload,
) -> HurrayStatus {
    guard("hurray_buffer_sync_payload", || {
        let b = handle::handle_ref!(buffer)?;
        let zero = HurraySyncPayload {
            sync_handle: std::ptr::null_mut(),
            sync_handle_device_tag: 0,
            consumer_stream_device_tag: 0,
            event_release_fn: None,
            event_release_context: std::ptr::null_mut(),
            consumer_stream: std::ptr::null_mut(),
        };
        handle::put_out!(out, b.sync.unwrap_or(zero))?;
        Ok(HURRAY_OK)
    })
}

/// Makes another owned handle sharing the same memory (atomic reference count + 1). The
/// memory is released when the last sharing handle is destroyed.
///
/// # Safety
/// `buffer` a live buffer handle; `out_handle` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_clone(
    buffer: *const HurrayBuffer,
    out_handle: *mut *mut HurrayBuffer,
) -> HurrayStatus {
    guard("hurray_buffer_clone", || {
        let b = handle::handle_ref!(buffer)?;
        non_null(out_handle, "out_handle")?;
        // SAFETY: `out_handle` was checked non-NULL above and is valid for one pointer write (this
        // function's contract).
        unsafe { handle::emit(out_handle, Arc::clone(b)) };
        Ok(HURRAY_OK)
    })
}

/// Destroys an owned buffer handle and writes NULL to `*buffer`. NULL or `*buffer == NULL`
/// is a no-op. A borrowed handle (from `hurray_buffer_list_get`) is refused with
/// `HURRAY_ERR_INVALID_ARGUMENT`; a destroyed one gives `HURRAY_ERR_USE_AFTER_DESTROY` in debug
/// builds.
///
/// # Safety
/// `buffer` NULL or valid for read and write; `*buffer` NULL or a buffer handle.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_destroy(buffer: *mut *mut HurrayBuffer) -> HurrayStatus {
    guard("hurray_buffer_destroy", || {
        // SAFETY: `buffer` is NULL or valid for a read and a write, and `*buffer` NULL or a handle
        // of this type (this function's contract).
        unsafe { handle::destroy_pp(buffer, "buffer")? };
        Ok(HURRAY_OK)
    })
}

/// The shared body of the buffer field getters: NULL → `HURRAY_ERR_NULL_POINTER`, dead
/// handle → `HURRAY_ERR_USE_AFTER_DESTROY`.
unsafe fn buffer_get<T>(
    what: &str,
    buffer: *const HurrayBuffer,
    out: *mut T,
    f: impl FnOnce(&BufferInner) -> T,
) -> HurrayStatus {
    guard(what, || {
        let b = handle::handle_ref!(buffer)?;
        handle::put_out!(out, f(b))?;
        Ok(HURRAY_OK)
    })
}

// The getters are written out (not generated by a macro) so that cbindgen, which does not
// expand macros, puts them in hurray.h.

/// Stores the first byte of the buffer in `*out` (aligned to its alignment; borrowed, valid
/// while any handle sharing the buffer lives; for a zero-byte buffer a non-NULL, aligned
/// pointer that must not be dereferenced).
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `buffer` a live buffer handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_data_ptr(buffer: *const HurrayBuffer, out: *mut *mut c_void) -> HurrayStatus {
    // SAFETY: this function's contract is buffer_get's: `buffer` NULL or a live buffer handle,
    // `out` NULL or valid for one write.
    unsafe { buffer_get("hurray_buffer_data_ptr", buffer, out, |b| b.ptr()) }
}

/// Stores the buffer's size in bytes in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `buffer` a live buffer handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_byte_size(buffer: *const HurrayBuffer, out: *mut u64) -> HurrayStatus {
    // SAFETY: this function's contract is buffer_get's: `buffer` NULL or a live buffer handle,
    // `out` NULL or valid for one write.
    unsafe { buffer_get("hurray_buffer_byte_size", buffer, out, |b| b.handle.byte_size()) }
}

/// Stores the buffer's alignment in bytes in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `buffer` a live buffer handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_alignment(buffer: *const HurrayBuffer, out: *mut u32) -> HurrayStatus {
    // SAFETY: this function's contract is buffer_get's: `buffer` NULL or a live buffer handle,
    // `out` NULL or valid for one write.
    unsafe { buffer_get("hurray_buffer_alignment", buffer, out, |b| b.handle.alignment() as u32) }
}

/// Stores the buffer's device tag (`HURRAY_DEVICE_*`) in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `buffer` a live buffer handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_device_tag(buffer: *const HurrayBuffer, out: *mut u8) -> HurrayStatus {
    // SAFETY: this function's contract is buffer_get's: `buffer` NULL or a live buffer handle,
    // `out` NULL or valid for one write.
    unsafe { buffer_get("hurray_buffer_device_tag", buffer, out, |b| b.handle.device_tag().code()) }
}

/// Stores the buffer's sync mode (`HURRAY_SYNC_*`, read from its binary handle) in `*out`.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `buffer` a live buffer handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_sync_mode(buffer: *const HurrayBuffer, out: *mut u8) -> HurrayStatus {
    // SAFETY: this function's contract is buffer_get's: `buffer` NULL or a live buffer handle,
    // `out` NULL or valid for one write.
    unsafe { buffer_get("hurray_buffer_sync_mode", buffer, out, |b| b.handle.sync_mode().code()) }
}
