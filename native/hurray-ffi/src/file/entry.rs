//! What the container reader hands out besides tensors: index entries (`HurrayFileEntry`), payload
//! locations (`HurrayFileBufferLocation`), and the zero-copy query on its buffers.

use std::ffi::c_char;

use hurray_core::file::FileEntry;

use crate::buffer::{BufData, HurrayBuffer};
use crate::descriptor::{DescInner, HurrayDescriptor};
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;

/// An index entry: a tensor's position in name order, its name, its descriptor and where its
/// payloads are — everything but the payload bytes. Owned by the caller (destroy with
/// `hurray_file_entry_destroy`); independent of the reader's lifetime, but only the reader it
/// came from can read its tensor.
pub struct HurrayFileEntry {
    pub(crate) shell: crate::handle::Shell<EntryInner>,
}
opaque_handle!(HurrayFileEntry, EntryInner, 0x4855_5252_4645_3031);

/// Entry contents: the core entry, the name with a NUL, and the borrowed descriptor handle.
pub struct EntryInner {
    pub(super) core: FileEntry,
    pub(super) name_c: Vec<u8>,
    pub(super) descriptor: Option<Box<HurrayDescriptor>>,
}

impl Drop for EntryInner {
    fn drop(&mut self) {
        if let Some(d) = self.descriptor.take() {
            handle::retire(d);
        }
    }
}

impl EntryInner {
    pub(super) fn new(core: FileEntry) -> FfiResult<Self> {
        let mut name_c = core.name().as_bytes().to_vec();
        name_c.push(0);
        let d = DescInner::new(core.descriptor().clone())?;
        Ok(EntryInner { core, name_c, descriptor: Some(Box::new(handle::new_borrowed(d))) })
    }
}

/// Where one payload lies in the container (a plain struct, copied out).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayFileBufferLocation {
    /// Absolute offset in bytes, a multiple of `alignment`.
    pub offset: u64,
    /// Length in bytes (the buffer's byte size).
    pub length: u64,
    /// The buffer's declared alignment in bytes.
    pub alignment: u32,
    /// The stored CRC32C (0 unless `flags` has `HURRAY_FILE_BUFFER_HAS_CRC`).
    pub crc32c: u32,
    /// `HURRAY_FILE_BUFFER_*` flags.
    pub flags: u32,
    /// Always 0.
    pub reserved: u32,
}

/// Buffer location flag: `crc32c` holds the payload's stored checksum.
pub const HURRAY_FILE_BUFFER_HAS_CRC: u32 = 1;

/// Stores the entry's position in the name-sorted index (`0..count`).
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `entry` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_entry_index(entry: *const HurrayFileEntry, out: *mut u64) -> HurrayStatus {
    guard("hurray_file_entry_index", || {
        let e = handle::handle_ref!(entry)?;
        handle::put_out!(out, e.core.index())?;
        Ok(HURRAY_OK)
    })
}

/// Stores the number of buffers (payloads) of the entry's tensor.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `entry` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_entry_buffer_count(entry: *const HurrayFileEntry, out: *mut u64) -> HurrayStatus {
    guard("hurray_file_entry_buffer_count", || {
        let e = handle::handle_ref!(entry)?;
        handle::put_out!(out, e.core.buffers().len() as u64)?;
        Ok(HURRAY_OK)
    })
}

/// Stores the sum of the entry's payload lengths in bytes.
///
/// Errors: `HURRAY_ERR_NULL_POINTER`, `HURRAY_ERR_USE_AFTER_DESTROY`.
///
/// # Safety
/// `entry` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_entry_total_bytes(entry: *const HurrayFileEntry, out: *mut u64) -> HurrayStatus {
    guard("hurray_file_entry_total_bytes", || {
        let e = handle::handle_ref!(entry)?;
        handle::put_out!(out, e.core.total_bytes())?;
        Ok(HURRAY_OK)
    })
}

/// Borrows the entry's name: `*out_len` UTF-8 bytes followed by a NUL, owned by the entry and
/// valid until it is destroyed.
///
/// # Safety
/// `entry` live; out-pointers valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_entry_name(
    entry: *const HurrayFileEntry,
    out_name: *mut *const c_char,
    out_len: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_entry_name", || {
        let e = handle::handle_ref!(entry)?;
        non_null(out_name, "out_name")?;
        non_null(out_len, "out_len")?;
        // SAFETY: `out_name` and `out_len` were checked non-NULL above and are valid for one write each (# Safety).
        unsafe {
            *out_name = e.name_c.as_ptr() as *const c_char;
            *out_len = (e.name_c.len() - 1) as u64;
        }
        Ok(HURRAY_OK)
    })
}

/// Borrows the entry's descriptor (all `hurray_descriptor_*` accessors work on it): owned by
/// the entry, valid until it is destroyed; do not destroy it.
///
/// # Safety
/// `entry` live; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_entry_descriptor(
    entry: *const HurrayFileEntry,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_file_entry_descriptor", || {
        let e = handle::handle_ref!(entry)?;
        non_null(out_descriptor, "out_descriptor")?;
        let p: *const HurrayDescriptor = &**e.descriptor.as_ref().expect("live entry");
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_descriptor = p as *mut HurrayDescriptor };
        Ok(HURRAY_OK)
    })
}

/// Copies where payload `buffer` (buffer-table order) lies in the container into `*out`.
/// Errors: `INVALID_ARGUMENT` (`buffer` out of range), `NULL_POINTER`.
///
/// # Safety
/// `entry` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_entry_buffer(
    entry: *const HurrayFileEntry,
    buffer: u64,
    out: *mut HurrayFileBufferLocation,
) -> HurrayStatus {
    guard("hurray_file_entry_buffer", || {
        let e = handle::handle_ref!(entry)?;
        let i = usize::try_from(buffer).unwrap_or(usize::MAX);
        let (loc, h) = e.core.buffers().get(i).zip(e.core.descriptor().buffers().get(i)).ok_or_else(|| {
            FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("buffer index {buffer} out of range for {} buffers", e.core.buffers().len()),
            )
        })?;
        let v = HurrayFileBufferLocation {
            offset: loc.offset,
            length: loc.length,
            alignment: h.alignment() as u32,
            crc32c: loc.crc32c.unwrap_or(0),
            flags: if loc.crc32c.is_some() { HURRAY_FILE_BUFFER_HAS_CRC } else { 0 },
            reserved: 0,
        };
        handle::put_out!(out, v)?;
        Ok(HURRAY_OK)
    })
}

/// Destroys an entry (and its borrowed descriptor) and writes NULL to `*entry`. NULL or
/// `*entry == NULL` is a no-op.
///
/// # Safety
/// `entry` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_entry_destroy(entry: *mut *mut HurrayFileEntry) -> HurrayStatus {
    guard("hurray_file_entry_destroy", || {
        // SAFETY: `entry` is NULL or valid for a read and a write; `*entry` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(entry, "entry")? };
        Ok(HURRAY_OK)
    })
}

/// Stores in `*out` whether `buffer`'s bytes live in memory Hurray does not own — for a
/// tensor from a span reader: true when the buffer points into the caller's region (zero
/// copy), false when it is an aligned copy (or was read through a transport).
///
/// # Safety
/// `buffer` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_buffer_is_zero_copy(buffer: *const HurrayBuffer, out: *mut bool) -> HurrayStatus {
    guard("hurray_file_buffer_is_zero_copy", || {
        let b = handle::handle_ref!(buffer)?;
        handle::put_out!(out, matches!(b.data, BufData::External { .. }))?;
        Ok(HURRAY_OK)
    })
}
