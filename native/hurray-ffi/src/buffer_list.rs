//! Buffer lists: the carrier that makes all of a tensor's buffers travel together
//! (docs/spec/c-abi.md §Buffers and buffer lists).

use std::ffi::c_void;

use crate::buffer::HurrayBuffer;
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError};
use crate::status::*;

/// The list's slots. Dropping it destroys every owned handle exactly once, nulling each slot
/// as it goes (docs/spec/c-abi.md §Buffers and buffer lists).
pub struct ListInner(pub(crate) Vec<Option<Box<HurrayBuffer>>>);

impl Drop for ListInner {
    fn drop(&mut self) {
        for slot in self.0.iter_mut() {
            if let Some(b) = slot.take() {
                handle::retire(b);
            }
        }
    }
}

/// An ordered list of buffers; element i is buffer i of the descriptor's buffer table.
/// The list owns every buffer pushed into it.
pub struct HurrayBufferList {
    pub(crate) shell: crate::handle::Shell<ListInner>,
}
opaque_handle!(HurrayBufferList, ListInner, 0x4855_5252_424C_3031);

/// Makes an empty list. Destroy it with `hurray_buffer_list_destroy`.
///
/// # Safety
/// `out_list` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_list_create(out_list: *mut *mut HurrayBufferList) -> HurrayStatus {
    guard("hurray_buffer_list_create", || {
        non_null(out_list, "out_list")?;
        // SAFETY: `out_list` was checked non-NULL above and is valid for one pointer write (this
        // function's contract).
        unsafe { handle::emit(out_list, ListInner(Vec::new())) };
        Ok(HURRAY_OK)
    })
}

/// Appends `buffer`, transferring its ownership to the list. On `HURRAY_OK` the caller's
/// `buffer` pointer stays usable but is now borrowed (valid until the list is destroyed; never
/// destroy it). On error the caller still owns it. Push in buffer-table order.
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`, `INVALID_ARGUMENT` (the buffer is already
/// borrowed, e.g. it belongs to another list), `LIMIT_EXCEEDED` (more than 64 buffers).
///
/// # Safety
/// `list` a live list; `buffer` an owned buffer handle.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_list_push(
    list: *mut HurrayBufferList,
    buffer: *mut HurrayBuffer,
) -> HurrayStatus {
    guard("hurray_buffer_list_push", || {
        let l = handle::handle_mut!(list)?;
        // SAFETY: `buffer` is NULL or a handle this library returned (this function's contract);
        // NULL and, in debug builds, stale handles are refused.
        let b = unsafe { handle::live(buffer, "buffer")? };
        if handle::is_borrowed(b) {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "buffer is borrowed (it belongs to a list or tensor)",
            ));
        }
        if l.0.len() >= hurray_core::MAX_BUFFERS {
            return Err(FfiError::new(HURRAY_ERR_LIMIT_EXCEEDED, "a list holds at most 64 buffers"));
        }
        handle::mark_borrowed(b);
        // SAFETY: buffer came from Box::into_raw (owned handle) and ownership moves here.
        l.0.push(Some(unsafe { Box::from_raw(buffer) }));
        Ok(HURRAY_OK)
    })
}

/// Stores the number of buffers in `*out_len`.
///
/// # Safety
/// `list` a live list; `out_len` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_list_len(list: *const HurrayBufferList, out_len: *mut usize) -> HurrayStatus {
    guard("hurray_buffer_list_len", || {
        let l = handle::handle_ref!(list)?;
        handle::put_out!(out_len, l.0.len())?;
        Ok(HURRAY_OK)
    })
}

/// Stores buffer `index` in `*out_buffer` as a borrow: valid until the list is destroyed;
/// the caller MUST NOT destroy it. Errors: `INVALID_ARGUMENT` when `index >= len`.
///
/// # Safety
/// `list` a live list; `out_buffer` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_list_get(
    list: *const HurrayBufferList,
    index: usize,
    out_buffer: *mut *mut HurrayBuffer,
) -> HurrayStatus {
    guard("hurray_buffer_list_get", || {
        let l = handle::handle_ref!(list)?;
        non_null(out_buffer, "out_buffer")?;
        let b = l.0.get(index).and_then(|s| s.as_ref()).ok_or_else(|| {
            FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("index {index} out of range for a list of {}", l.0.len()),
            )
        })?;
        let p: *const HurrayBuffer = &**b;
        // SAFETY: `out_buffer` was checked non-NULL above and is valid for one pointer write
        // (this function's contract); the pointer is borrowed from the list, as documented.
        unsafe { *out_buffer = p as *mut HurrayBuffer };
        Ok(HURRAY_OK)
    })
}

/// Stores the data pointer of every buffer of the list, in order, in `out_data[0..len]` (each
/// as `hurray_buffer_data_ptr` gives it: borrowed, aligned), and the list's length in
/// `*out_len`, in one call. Fails with `BUFFER_TOO_SMALL` (writing only `*out_len`) when
/// `capacity < len`; `out_data` may be NULL when `capacity` is 0. Added in ABI 4 (additive,
/// docs/spec/c-abi.md): look it up by name on older libraries.
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`, `BUFFER_TOO_SMALL`.
///
/// # Safety
/// `list` a live list; `out_data` valid for `capacity` pointer writes; `out_len` valid for one
/// write.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_list_data_ptrs(
    list: *const HurrayBufferList,
    out_data: *mut *mut c_void,
    capacity: usize,
    out_len: *mut usize,
) -> HurrayStatus {
    guard("hurray_buffer_list_data_ptrs", || {
        let l = handle::handle_ref!(list)?;
        non_null(out_len, "out_len")?;
        let n = l.0.len();
        // SAFETY: `out_len` was checked non-NULL above and is valid for one write (contract).
        unsafe { *out_len = n };
        if capacity < n {
            return Err(FfiError::new(
                HURRAY_ERR_BUFFER_TOO_SMALL,
                format!("capacity {capacity} for a list of {n} buffers"),
            ));
        }
        if n > 0 {
            non_null(out_data, "out_data")?;
        }
        for (i, slot) in l.0.iter().enumerate() {
            let b = slot
                .as_ref()
                .ok_or_else(|| FfiError::new(HURRAY_ERR_USE_AFTER_DESTROY, "a buffer of the list is gone"))?;
            // SAFETY: `b` is a buffer handle this list holds (boxed, live while it is in the list).
            let inner = unsafe { handle::inner_ref::<HurrayBuffer>(&**b, "buffer")? };
            // SAFETY: i < len <= capacity (checked above), and `out_data` is valid for `capacity`
            // pointer writes (this function's contract).
            unsafe { *out_data.add(i) = inner.ptr() };
        }
        Ok(HURRAY_OK)
    })
}

/// Destroys the list and every buffer it owns (each exactly once), then writes NULL to
/// `*list`. NULL or `*list == NULL` is a no-op. A list borrowed from a tensor is refused
/// (`INVALID_ARGUMENT`).
///
/// # Safety
/// `list` NULL or valid for read and write; `*list` NULL or a list handle.
#[no_mangle]
pub unsafe extern "C" fn hurray_buffer_list_destroy(list: *mut *mut HurrayBufferList) -> HurrayStatus {
    guard("hurray_buffer_list_destroy", || {
        // SAFETY: `list` is NULL or valid for a read and a write, and `*list` NULL or a handle of
        // this type (this function's contract).
        unsafe { handle::destroy_pp(list, "list")? };
        Ok(HURRAY_OK)
    })
}
