//! The container writer: `HurrayFileWriter` and its options, over a transport's `write`.

use hurray_core::file::{FileWriter, FileWriterOptions};

use crate::descriptor::HurrayDescriptor;
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;
use crate::transport::{HurrayTransport, Owned};
use crate::writer::HurrayIoSlice;

use super::bytes_arg;

/// Container writer settings. Initialise with `hurray_file_writer_options_init`, then change
/// fields; a NULL options pointer means the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HurrayFileWriterOptions {
    /// `sizeof(HurrayFileWriterOptions)` as the caller compiled it.
    pub struct_size: u32,
    /// `HURRAY_FILE_WRITER_*` flags (default 0).
    pub flags: u32,
    /// Every payload starts at a multiple of at least this many bytes (a power of two in
    /// 64..=2097152; default 64), or of its buffer's alignment when that is larger. 4096 gives
    /// page-aligned payloads.
    pub min_payload_alignment: u64,
}

/// Writer flag: do not store payload CRC32Cs (saves one pass over every payload at add time;
/// readers then cannot check payloads).
pub const HURRAY_FILE_WRITER_NO_PAYLOAD_CHECKSUMS: u32 = 1;

impl HurrayFileWriterOptions {
    pub(super) fn defaults() -> Self {
        let d = FileWriterOptions::default();
        HurrayFileWriterOptions {
            struct_size: std::mem::size_of::<HurrayFileWriterOptions>() as u32,
            flags: 0,
            min_payload_alignment: d.min_payload_alignment,
        }
    }

    pub(super) fn to_core(self) -> FfiResult<FileWriterOptions> {
        if (self.struct_size as usize) < std::mem::size_of::<HurrayFileWriterOptions>() {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                "options.struct_size is smaller than this ABI's HurrayFileWriterOptions",
            ));
        }
        if self.flags & !HURRAY_FILE_WRITER_NO_PAYLOAD_CHECKSUMS != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "unknown file writer option flags"));
        }
        Ok(FileWriterOptions {
            payload_checksums: self.flags & HURRAY_FILE_WRITER_NO_PAYLOAD_CHECKSUMS == 0,
            min_payload_alignment: self.min_payload_alignment,
        })
    }
}

/// Writes an HRRYFILE container through a transport's `write`, sequentially (files, pipes and
/// sockets alike). Owned; one thread at a time; never call it from its own callbacks.
pub struct HurrayFileWriter {
    pub(crate) shell: crate::handle::Shell<FileWriter<Owned>>,
}
opaque_handle!(HurrayFileWriter, FileWriter<Owned>, 0x4855_5252_4657_3031);

/// Fills `*out` with the default container writer options.
///
/// # Safety
/// `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_options_init(out: *mut HurrayFileWriterOptions) -> HurrayStatus {
    guard("hurray_file_writer_options_init", || {
        handle::put_out!(out, HurrayFileWriterOptions::defaults())?;
        Ok(HURRAY_OK)
    })
}

/// Makes a container writer over `*transport` (copied; `write` required). Nothing is written
/// yet: the 16-byte header is staged and goes out with the first flush. On success the writer
/// owns the transport (`release(ctx)` once, at destroy); on failure nothing is taken.
///
/// Errors: `NULL_POINTER` (`transport`, `transport->write`, `out_writer`),
/// `INVALID_ARGUMENT` (options), `INVALID_ALIGNMENT` (`min_payload_alignment`).
///
/// # Safety
/// Pointers valid; callbacks callable with `ctx` until release.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_new(
    transport: *const HurrayTransport,
    options: *const HurrayFileWriterOptions,
    out_writer: *mut *mut HurrayFileWriter,
) -> HurrayStatus {
    guard("hurray_file_writer_new", || {
        non_null(transport, "transport")?;
        non_null(out_writer, "out_writer")?;
        // SAFETY: `transport` was checked non-NULL above and is valid for one read (# Safety).
        let t = unsafe { *transport };
        if t.write.is_none() {
            return Err(FfiError::new(HURRAY_ERR_NULL_POINTER, "transport->write is NULL (a writer needs it)"));
        }
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayFileWriterOptions::defaults() } else { unsafe { *options } };
        let opts = opts.to_core()?;
        // Validate before taking ownership so a failure releases nothing.
        let mut probe = t;
        probe.release = None;
        drop(FileWriter::new(Owned(probe), opts)?);
        let w = FileWriter::new(Owned(t), opts)?;
        // SAFETY: `out_writer` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_writer, w) };
        Ok(HURRAY_OK)
    })
}

/// Appends one tensor. Its name comes from the descriptor and is required (1..=4096 UTF-8
/// bytes; names are the container's keys). `payloads[i]` (borrowed, not retained after the
/// call) is buffer `i` of the descriptor's buffer table and must be exactly its byte size;
/// `count` must equal the buffer count. Each payload is placed at a multiple of its alignment
/// (zero padding in between). Small payloads may stay staged until a later call, `flush` or
/// `finish`.
///
/// Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (unnamed, count mismatch, payload too long),
/// `BUFFER_TOO_SMALL` (payload too short), `DUPLICATE_NAME`, `LIMIT_EXCEEDED`,
/// `INVALID_STATE` (after finish), `POISONED`, `TRANSPORT` / `SINK_CLOSED`: when none of this
/// tensor's bytes had reached the transport the tensor is not added and the call can be
/// retried; otherwise the writer is now poisoned.
///
/// # Safety
/// `writer` and `descriptor` live; `payloads` valid for `count` slices, each valid for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_add_tensor(
    writer: *mut HurrayFileWriter,
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: u64,
) -> HurrayStatus {
    guard("hurray_file_writer_add_tensor", || {
        let w = handle::handle_mut!(writer)?;
        let d = handle::handle_ref!(descriptor)?;
        if count > hurray_core::MAX_BUFFERS as u64 {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("{count} payloads: a tensor has at most {} buffers", hurray_core::MAX_BUFFERS),
            ));
        }
        // SAFETY: `payloads` is valid for `count` slices, each valid for its length (# Safety); payload_parts checks
        // NULL and lengths. `count` is at most MAX_BUFFERS (checked just above), so it fits usize.
        let (_, parts) = unsafe { crate::writer::payload_parts(payloads, count as usize)? };
        w.add_encoded(&d.desc, d.encoded(), &parts)?;
        Ok(HURRAY_OK)
    })
}

/// Sets a file-level metadata entry (`key`: 1..=4096 UTF-8 bytes; `value`: at most 16 MiB of
/// any bytes; both copied), replacing the key's previous value. At most 65,536 entries and
/// 64 MiB in all. Readers see the entries sorted by key bytes.
///
/// Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (key empty, too long or not UTF-8),
/// `LIMIT_EXCEEDED`, `INVALID_STATE` (after finish), `POISONED`.
///
/// # Safety
/// `writer` live; `key`/`value` valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_set_metadata(
    writer: *mut HurrayFileWriter,
    key: *const u8,
    key_len: u64,
    value: *const u8,
    value_len: u64,
) -> HurrayStatus {
    guard("hurray_file_writer_set_metadata", || {
        let w = handle::handle_mut!(writer)?;
        // The lengths are checked against the limits before a byte is read, so a wrong length is
        // an error, never a read past the caller's bytes.
        crate::file::check_metadata_lengths(key_len, value_len)?;
        // SAFETY: `key` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL with a
        // non-zero length.
        let k = unsafe { bytes_arg(key, key_len, "key")? };
        let k = std::str::from_utf8(k).map_err(|_| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "key is not UTF-8"))?;
        // SAFETY: `value` is valid for its length when that is non-zero (# Safety); bytes_arg rejects NULL with a
        // non-zero length.
        let v = unsafe { bytes_arg(value, value_len, "value")? };
        w.set_metadata(k, v)?;
        Ok(HURRAY_OK)
    })
}

/// Pushes staged bytes to the transport now (optional: `finish` flushes; useful to bound
/// latency into a pipe). Errors: `TRANSPORT` / `SINK_CLOSED` (retryable: unsent bytes stay
/// staged), `POISONED`.
///
/// # Safety
/// `writer` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_flush(writer: *mut HurrayFileWriter) -> HurrayStatus {
    guard("hurray_file_writer_flush", || {
        handle::handle_mut!(writer)?.flush()?;
        Ok(HURRAY_OK)
    })
}

/// Writes the index, the metadata block and the trailer, and stores the container's size in
/// bytes in `*out_file_size` (may be NULL). Only after this succeeds is the output a valid
/// container. Idempotent once it succeeded; after `TRANSPORT` / `SINK_CLOSED` call it again
/// to continue where it stopped.
///
/// Errors: `POISONED`, `TRANSPORT`, `SINK_CLOSED`, `LIMIT_EXCEEDED`.
///
/// # Safety
/// `writer` live; `out_file_size` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_finish(
    writer: *mut HurrayFileWriter,
    out_file_size: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_writer_finish", || {
        let size = handle::handle_mut!(writer)?.finish()?;
        if !out_file_size.is_null() {
            // SAFETY: `out_file_size` is non-NULL (checked just above) and valid for one write (# Safety).
            unsafe { *out_file_size = size };
        }
        Ok(HURRAY_OK)
    })
}

/// Stores the number of bytes the transport has accepted so far in `*out` (a progress
/// counter; after a successful finish it equals the file size).
///
/// # Safety
/// `writer` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_bytes_written(
    writer: *const HurrayFileWriter,
    out: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_writer_bytes_written", || {
        let w = handle::handle_ref!(writer)?;
        handle::put_out!(out, w.bytes_written())?;
        Ok(HURRAY_OK)
    })
}

/// Stores the number of tensors added so far in `*out`.
///
/// # Safety
/// `writer` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_tensor_count(
    writer: *const HurrayFileWriter,
    out: *mut u64,
) -> HurrayStatus {
    guard("hurray_file_writer_tensor_count", || {
        let w = handle::handle_ref!(writer)?;
        handle::put_out!(out, w.tensor_count())?;
        Ok(HURRAY_OK)
    })
}

/// Destroys a container writer (releasing its transport) and writes NULL to `*writer`. It
/// does NOT finish the container: without a successful `hurray_file_writer_finish` the output
/// has no trailer, and readers reject it (`HURRAY_ERR_INVALID_MAGIC` or
/// `HURRAY_ERR_TRUNCATED`). Staged bytes are dropped. NULL or `*writer == NULL` is a no-op.
///
/// # Safety
/// `writer` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_destroy(writer: *mut *mut HurrayFileWriter) -> HurrayStatus {
    guard("hurray_file_writer_destroy", || {
        // SAFETY: `writer` is NULL or valid for a read and a write; `*writer` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(writer, "writer")? };
        Ok(HURRAY_OK)
    })
}
