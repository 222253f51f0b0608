//! The container encoder: `HurrayFileEncoder`, the container writer without a transport
//! (docs/spec/c-abi.md §Containers without a transport). It stages the container's bytes and
//! hands them out; the caller writes them wherever it likes and reports what left.

use hurray_core::file::{Abort, FileEncoder};

use crate::descriptor::HurrayDescriptor;
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, FfiError, FfiResult};
use crate::status::*;
use crate::writer::HurrayIoSlice;

use super::bytes_arg;
use super::writer::HurrayFileWriterOptions;

/// The container encoder's progress, written by every staging, consuming and aborting call
/// (its pointer may be NULL).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayFileEncoderState {
    /// Bytes staged and not yet consumed.
    pub pending_bytes: u64,
    /// Bytes consumed so far (the file size once `finished`).
    pub bytes_written: u64,
    /// Tensors in the container so far.
    pub tensor_count: u64,
    /// Pieces of pending output (`hurray_file_encoder_output` lists them).
    pub pending_pieces: u32,
    /// 1 while the pending output points into the last tensor's payloads: send it all and
    /// consume it before those payloads change or are freed, and before the next add or finish.
    pub borrows_payloads: u32,
    /// 1 once the trailer was staged and every byte consumed: the output is a container.
    pub finished: u32,
    /// 1 once a failed send cut a tensor: every later call is `POISONED`.
    pub poisoned: u32,
}

pub(crate) struct FileEncoderInner {
    encoder: FileEncoder,
    /// The last tensor's payload ranges, which `OutSeg::Borrowed` pieces index.
    borrowed: Vec<HurrayIoSlice>,
}

impl FileEncoderInner {
    /// Stages a group of tensors (a composite), every payload copied.
    pub(crate) fn add_group(&mut self, items: &[hurray_core::encoder::GroupEntry<'_>]) -> hurray_core::Result<()> {
        self.encoder.add_group(items)?;
        self.borrowed.clear();
        Ok(())
    }

    pub(crate) fn put_state(&self, out: *mut HurrayFileEncoderState) {
        if !out.is_null() {
            let e = &self.encoder;
            let s = HurrayFileEncoderState {
                pending_bytes: e.pending_bytes(),
                bytes_written: e.bytes_written(),
                tensor_count: e.tensor_count(),
                pending_pieces: e.segments().len() as u32,
                borrows_payloads: e.borrows_payloads() as u32,
                finished: e.is_finished() as u32,
                poisoned: e.is_poisoned() as u32,
            };
            // SAFETY: a non-NULL state pointer is valid for one write (every caller's # Safety).
            unsafe { out.write(s) };
        }
    }
}

/// Builds an HRRYFILE container into bytes the caller writes, with no transport and no
/// callbacks. Owned; one thread at a time (any thread, one after another).
pub struct HurrayFileEncoder {
    pub(crate) shell: crate::handle::Shell<FileEncoderInner>,
}
opaque_handle!(HurrayFileEncoder, FileEncoderInner, 0x4855_5252_4645_3031);

/// Makes a container encoder (`options` as for `hurray_file_writer_new`, NULL for the
/// defaults) and writes it to `*out_encoder` (destroy with `hurray_file_encoder_destroy`). The
/// 16-byte header is the first pending output.
///
/// Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (options), `INVALID_ALIGNMENT`
/// (`min_payload_alignment`).
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `options` NULL or valid for one read; `out_encoder` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_new(
    options: *const HurrayFileWriterOptions,
    out_encoder: *mut *mut HurrayFileEncoder,
) -> HurrayStatus {
    guard("hurray_file_encoder_new", || {
        crate::panic::non_null(out_encoder, "out_encoder")?;
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayFileWriterOptions::defaults() } else { unsafe { *options } };
        let encoder = FileEncoder::new(opts.to_core()?)?;
        // SAFETY: `out_encoder` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_encoder, FileEncoderInner { encoder, borrowed: Vec::new() }) };
        Ok(HURRAY_OK)
    })
}

/// Appends one tensor under the rules of `hurray_file_writer_add_tensor` (name required and
/// unique, one payload per buffer of exactly its size, each placed at a multiple of its
/// alignment after zero padding) and writes the state to `*out_state` (may be NULL). Nothing
/// is sent: payloads of up to 64 KiB are copied into the pending output, larger ones are
/// referenced (`borrows_payloads`), and must then be sent and consumed before they change and
/// before the next add or finish.
///
/// Errors (nothing staged): `NULL_POINTER`, `INVALID_ARGUMENT`, `BUFFER_TOO_SMALL`,
/// `DUPLICATE_NAME`, `LIMIT_EXCEEDED`, `INVALID_STATE` (after finish, or while the pending
/// output borrows the previous tensor's payloads), `POISONED`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `encoder` and `descriptor` live; `payloads` valid for `count` slices, each readable for its
/// length and unchanged until the output borrowing it was consumed (or the tensor taken back).
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_add_tensor(
    encoder: *mut HurrayFileEncoder,
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: u64,
    out_state: *mut HurrayFileEncoderState,
) -> HurrayStatus {
    guard("hurray_file_encoder_add_tensor", || {
        // SAFETY: `encoder` is NULL or a handle from this library, used by one thread at a time (# Safety);
        // inner_mut rejects NULL and dead handles.
        let e = unsafe { handle::inner_mut(encoder, "encoder")? };
        // SAFETY: `descriptor` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead
        // handles.
        let d = unsafe { handle::inner_ref(descriptor, "descriptor")? };
        if count > hurray_core::MAX_BUFFERS as u64 {
            return Err(FfiError::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("{count} payloads: a tensor has at most {} buffers", hurray_core::MAX_BUFFERS),
            ));
        }
        // SAFETY: `payloads` is valid for `count` slices, each valid for its length (# Safety); payload_parts checks
        // NULL and lengths. `count` is at most MAX_BUFFERS (checked just above), so it fits usize.
        let (slices, parts) = unsafe { crate::writer::payload_parts(payloads, count as usize)? };
        e.encoder.add_encoded(&d.desc, d.encoded(), &parts)?;
        e.borrowed.clear();
        if e.encoder.borrows_payloads() {
            e.borrowed.extend_from_slice(slices);
        }
        e.put_state(out_state);
        Ok(HURRAY_OK)
    })
}

/// Sets a file-level metadata entry under the rules of `hurray_file_writer_set_metadata` (both
/// copied; allowed until finish).
///
/// Errors: `NULL_POINTER`, `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `INVALID_STATE`, `POISONED`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `encoder` live; `key`/`value` valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_set_metadata(
    encoder: *mut HurrayFileEncoder,
    key: *const u8,
    key_len: u64,
    value: *const u8,
    value_len: u64,
) -> HurrayStatus {
    guard("hurray_file_encoder_set_metadata", || {
        // SAFETY: `encoder` is NULL or a handle from this library, used by one thread at a time (# Safety);
        // inner_mut rejects NULL and dead handles.
        let e = unsafe { handle::inner_mut(encoder, "encoder")? };
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
        e.encoder.set_metadata(k, v)?;
        Ok(HURRAY_OK)
    })
}

/// Stages the index, the metadata block and the trailer (idempotent) and stores the
/// container's size in bytes in `*out_file_size` (may be NULL). The output is a container only
/// once every pending byte was consumed (`state.finished`); a sink that fails before that
/// leaves output without a valid trailer, which every reader rejects.
///
/// Errors: `POISONED`, `INVALID_STATE` (the pending output borrows payloads), `LIMIT_EXCEEDED`,
/// `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `encoder` live; `out_file_size` and `out_state` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_finish(
    encoder: *mut HurrayFileEncoder,
    out_file_size: *mut u64,
    out_state: *mut HurrayFileEncoderState,
) -> HurrayStatus {
    guard("hurray_file_encoder_finish", || {
        // SAFETY: `encoder` is NULL or a handle from this library, used by one thread at a time (# Safety);
        // inner_mut rejects NULL and dead handles.
        let e = unsafe { handle::inner_mut(encoder, "encoder")? };
        let size = e.encoder.finish()?;
        if !out_file_size.is_null() {
            // SAFETY: `out_file_size` is non-NULL (checked just above) and valid for one write (# Safety).
            unsafe { *out_file_size = size };
        }
        e.put_state(out_state);
        Ok(HURRAY_OK)
    })
}

/// Lists the pending output in order as up to `capacity` ranges at `pieces` (`*out_count` of
/// them; adjacent staged bytes are one piece) and returns `HURRAY_OK`. Staged pieces are owned
/// by the encoder and valid until its next call; borrowed ones are the caller's payloads.
///
/// Errors: `NULL_POINTER` (`out_count`, or `pieces` when something is pending and `capacity` is
/// not 0), `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `encoder` live; `pieces` valid for `capacity` writes; `out_count` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_output(
    encoder: *const HurrayFileEncoder,
    pieces: *mut HurrayIoSlice,
    capacity: usize,
    out_count: *mut usize,
) -> HurrayStatus {
    guard("hurray_file_encoder_output", || {
        crate::panic::non_null(out_count, "out_count")?;
        // SAFETY: `encoder` is NULL or a handle from this library (# Safety); inner_ref rejects NULL and dead handles.
        let e = unsafe { handle::inner_ref(encoder, "encoder")? };
        let enc = &e.encoder;
        // SAFETY: `pieces` is valid for `capacity` writes (# Safety); the borrowed ranges are the last tensor's
        // payloads, which the caller keeps valid while they are pending (hurray_file_encoder_add_tensor).
        let n = unsafe {
            crate::encoder::list_pieces(enc.segments(), enc.offset(), enc.staged(), &e.borrowed, pieces, capacity)?
        };
        // SAFETY: `out_count` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_count = n };
        Ok(HURRAY_OK)
    })
}

/// Records that the first `n` pending bytes were written. When none remain after a finish, the
/// output is a complete container (`state.finished`).
///
/// Errors (nothing recorded): `INVALID_ARGUMENT` (`n` above the pending bytes), `NULL_POINTER`,
/// `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `encoder` live; `out_state` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_consume(
    encoder: *mut HurrayFileEncoder,
    n: u64,
    out_state: *mut HurrayFileEncoderState,
) -> HurrayStatus {
    guard("hurray_file_encoder_consume", || {
        // SAFETY: `encoder` is NULL or a handle from this library, used by one thread at a time (# Safety);
        // inner_mut rejects NULL and dead handles.
        let e = unsafe { handle::inner_mut(encoder, "encoder")? };
        e.encoder.consume(n)?;
        if !e.encoder.borrows_payloads() {
            e.borrowed.clear();
        }
        e.put_state(out_state);
        Ok(HURRAY_OK)
    })
}

/// Reports that writing the pending output failed, having written nothing of the failed write
/// (transport rule 3). Bytes the encoder owns (header, padding, copied payloads, index) stay
/// pending, so nothing already consumed is lost and a failed finish can simply be sent again.
/// The last added tensor (or composite) is taken back when `take_back_last` is non-zero, or
/// when its payloads are borrowed, provided none of its bytes were consumed: it is then not in
/// the container (`state.tensor_count` drops) and adding it again is allowed. If some of its
/// bytes were consumed, the encoder is poisoned instead (a container never holds part of a
/// tensor), and every later call, this one included, returns `HURRAY_ERR_POISONED`.
///
/// Errors: `POISONED`, `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `encoder` live; `out_state` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_abort(
    encoder: *mut HurrayFileEncoder,
    take_back_last: u32,
    out_state: *mut HurrayFileEncoderState,
) -> HurrayStatus {
    guard("hurray_file_encoder_abort", || {
        // SAFETY: `encoder` is NULL or a handle from this library, used by one thread at a time (# Safety);
        // inner_mut rejects NULL and dead handles.
        let e = unsafe { handle::inner_mut(encoder, "encoder")? };
        let outcome = e.encoder.abort(take_back_last != 0);
        if !e.encoder.borrows_payloads() {
            e.borrowed.clear();
        }
        e.put_state(out_state);
        if outcome == Abort::Poisoned {
            return Err(FfiError::new(
                HURRAY_ERR_POISONED,
                "part of the last tensor was sent before the failure; the container cannot be completed",
            ));
        }
        Ok(HURRAY_OK)
    })
}

/// Destroys a container encoder and writes NULL to `*encoder`; pending output is dropped (the
/// output has no trailer unless `state.finished` was reached). NULL or `*encoder == NULL` is a
/// no-op.
///
/// Added in ABI 4 (additive, docs/spec/c-abi.md).
///
/// # Safety
/// `encoder` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_encoder_destroy(encoder: *mut *mut HurrayFileEncoder) -> HurrayStatus {
    guard("hurray_file_encoder_destroy", || {
        // SAFETY: `encoder` is NULL or valid for a read and a write; `*encoder` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(encoder, "encoder")? };
        Ok(HURRAY_OK)
    })
}

/// The encoder behind a handle, for the composite call in `crate::composite`.
///
/// # Safety
/// As `handle::inner_mut`.
pub(crate) unsafe fn encoder_inner<'a>(encoder: *mut HurrayFileEncoder) -> FfiResult<&'a mut FileEncoderInner> {
    // SAFETY: as this function's (# Safety).
    unsafe { handle::inner_mut(encoder, "encoder") }
}
